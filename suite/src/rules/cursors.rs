//! Cursors changed the ways `they list the next page, passing the cursor …` changes them
//! (PAG-5): the step and the fuzzer's cursor walk send the same changed cursors.

use base64::Engine as _;

/// The changes of `features/cursors.feature`'s outline that the fuzzer sends after its walk (the
/// flips are its own one-character change, drawn).
pub const TAMPERINGS: [&str; 3] =
    ["truncated by one character", "re-encoded in base64", "as an empty string"];

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
        "truncated by one character" => {
            chars.pop();
            chars.into_iter().collect()
        }
        "re-encoded in base64" => base64::engine::general_purpose::STANDARD.encode(cursor),
        _ => String::new(),
    }
}
