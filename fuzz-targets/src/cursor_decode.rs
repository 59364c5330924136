//! The cursor codec (PAG-5, PAG-6): arbitrary text never panics the decoder and is never accepted;
//! a cursor it encoded decodes to the same position under the same key and binding, and to nothing
//! under another key, another binding, or after any one-byte change or truncation.
//!
//! Input: the text to decode up to the first newline (so seeds are plain cursors), then the bytes
//! `arbitrary` turns into a key, a binding, a position and the changes to try.

use arbitrary::{Arbitrary, Unstructured};
use mock_server::tools::cursor::{Binding, CursorCodec};

#[derive(Arbitrary, Debug)]
struct Input {
    key: Vec<u8>,
    tool: String,
    filters: [u8; 32],
    client_id: String,
    user_id: String,
    ts: String,
    id: String,
    /// Which part of the binding differs for the "other binding" check.
    other: Other,
    /// A one-byte change of the encoded cursor: where, and to what.
    at: usize,
    to: u8,
    cut: usize,
}

#[derive(Arbitrary, Debug)]
enum Other {
    Tool(String),
    Filters([u8; 32]),
    Client(String),
    User(String),
}

/// One input of the `cursor_decode` target.
pub fn cursor_decode(data: &[u8]) {
    let (text, rest) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let text = String::from_utf8_lossy(text);
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(rest)) else { return };
    let codec = CursorCodec::new(&input.key);
    let binding = Binding {
        tool: &input.tool,
        filters: input.filters,
        client_id: &input.client_id,
        user_id: &input.user_id,
    };
    // A text the fuzzer made cannot carry a valid HMAC under the key.
    assert_eq!(codec.decode(&binding, &text), None, "accepted a forged cursor {text:?}");
    // Under the fuzz server's key, seed cursors pass the MAC and reach the payload's decoding.
    let _ = CursorCodec::new(crate::SECRET.as_bytes()).decode(&binding, &text);

    let position = (input.ts.clone(), input.id.clone());
    let cursor = codec.encode(&binding, &position);
    assert_eq!(codec.decode(&binding, &cursor), Some(position), "{cursor}");

    // HMAC pads short keys with zeros, so "k" and "k\0" are one key: flip a byte instead.
    let mut other_key = input.key.clone();
    match other_key.last_mut() {
        Some(b) => *b ^= 0xff,
        None => other_key.push(1),
    }
    assert_eq!(CursorCodec::new(&other_key).decode(&binding, &cursor), None, "another key: {cursor}");

    let (mut tool, mut filters, mut client_id, mut user_id) =
        (input.tool.clone(), input.filters, input.client_id.clone(), input.user_id.clone());
    match &input.other {
        Other::Tool(t) => tool = t.clone(),
        Other::Filters(f) => filters = *f,
        Other::Client(c) => client_id = c.clone(),
        Other::User(u) => user_id = u.clone(),
    }
    let other = Binding { tool: &tool, filters, client_id: &client_id, user_id: &user_id };
    let same = tool == input.tool
        && filters == input.filters
        && client_id == input.client_id
        && user_id == input.user_id;
    if !same {
        assert_eq!(codec.decode(&other, &cursor), None, "another binding: {cursor}");
    }

    let mut bytes = cursor.clone().into_bytes();
    let at = input.at % bytes.len();
    if bytes[at] != input.to {
        bytes[at] = input.to;
        if let Ok(changed) = String::from_utf8(bytes) {
            assert_eq!(codec.decode(&binding, &changed), None, "a changed byte: {changed}");
        }
    }
    let cut = input.cut % cursor.len();
    assert_eq!(codec.decode(&binding, &cursor[..cut]), None, "truncated: {}", &cursor[..cut]);
}
