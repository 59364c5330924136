//! Cursors changed the ways `they list the next page, passing the cursor …` changes them
//! (PAG-5): the step and the fuzzer's cursor walk send the same changed cursors.

use base64::Engine as _;

/// The changes of `features/cursors.feature`'s outline that the fuzzer sends after its walk (the
/// flips are its own one-character change, drawn).
pub const TAMPERINGS: [&str; 8] = [
    "truncated by one character",
    "with one letter's case changed",
    "with one character percent-encoded",
    "with a blank on each side",
    "with a newline after it",
    "re-encoded in base64",
    "re-encoded in another base64 alphabet or padding",
    "as an empty string",
];

/// Change `cursor` the way the step says; never returns it unchanged (but for an empty one).
pub fn tamper(cursor: &str, how: &str) -> String {
    let mut chars: Vec<char> = cursor.chars().collect();
    let flip = |c: char| match c {
        'z' => 'a',
        'Z' => 'A',
        '9' => '0',
        c if c.is_ascii_alphanumeric() => (c as u8 + 1) as char,
        _ => 'A',
    };
    match how {
        "flipped in its middle" if !chars.is_empty() => {
            let i = chars.len() / 2;
            chars[i] = flip(chars[i]);
            chars.into_iter().collect()
        }
        "flipped at its first character" if !chars.is_empty() => {
            chars[0] = flip(chars[0]);
            chars.into_iter().collect()
        }
        // A lookup that ignores case (a case-insensitive collation) serves it.
        "with one letter's case changed" if !chars.is_empty() => {
            let middle = chars.len() / 2;
            let letter = (middle..chars.len()).chain(0..middle).find(|&i| chars[i].is_ascii_alphabetic());
            let i = letter.unwrap_or(middle);
            chars[i] = match chars[i] {
                c if c.is_ascii_lowercase() => c.to_ascii_uppercase(),
                c if c.is_ascii_uppercase() => c.to_ascii_lowercase(),
                c => flip(c),
            };
            chars.into_iter().collect()
        }
        // The same characters once percent-decoded (a server that URL-decodes what it looks up).
        "with one character percent-encoded" if !chars.is_empty() => {
            let i = chars.len() / 2;
            let mut bytes = [0; 4];
            let encoded: String =
                chars[i].encode_utf8(&mut bytes).bytes().map(|b| format!("%{b:02X}")).collect();
            chars[..i].iter().collect::<String>() + &encoded + &chars[i + 1..].iter().collect::<String>()
        }
        // A server that trims its string arguments serves these.
        "with a blank on each side" => format!(" {cursor} "),
        "with a newline after it" => format!("{cursor}\n"),
        "truncated by one character" => {
            chars.pop();
            chars.into_iter().collect()
        }
        "re-encoded in base64" => base64::engine::general_purpose::STANDARD.encode(cursor),
        // The same bytes, written another way base64 allows (PAG-5: "re-encoded"): a server that
        // decodes leniently serves it. A cursor that is no base64 is encoded whole instead.
        "re-encoded in another base64 alphabet or padding" => same_bytes_reencoded(cursor)
            .unwrap_or_else(|| base64::engine::general_purpose::STANDARD.encode(cursor)),
        _ => String::new(),
    }
}

/// `cursor`'s bytes, when it is base64 of either alphabet, padded or not (or such parts joined by
/// dots, as a signed token is), written in another of those forms: the first part that can be
/// written otherwise is. `None` when no part is base64, or every form writes each the same.
fn same_bytes_reencoded(cursor: &str) -> Option<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let engines = [&URL_SAFE_NO_PAD, &URL_SAFE, &STANDARD_NO_PAD, &STANDARD];
    let parts: Vec<&str> = cursor.split('.').collect();
    parts.iter().enumerate().find_map(|(i, part)| {
        let bytes = engines.iter().find_map(|e| e.decode(part).ok())?;
        let other = engines.iter().map(|e| e.encode(&bytes)).find(|other| other != part)?;
        let mut changed: Vec<String> = parts.iter().map(|p| (*p).to_owned()).collect();
        changed[i] = other;
        Some(changed.join("."))
    })
}
