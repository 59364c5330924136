//! Text for people: answers and values cut to a size a failure message can show. A leaf module,
//! so the client and the stdio transport share it without depending on each other.

use serde_json::Value;

/// Serialized JSON, cut to `max` bytes.
pub fn compact(value: &Value, max: usize) -> String {
    cut(&value.to_string(), max)
}

/// Text for one cell of a Markdown table: its first line, cut to `max` bytes, pipes escaped.
pub fn table_cell(text: &str, max: usize) -> String {
    escape_pipes(&cut(text.lines().next().unwrap_or_default(), max))
}

/// Pipes escaped, so the text stays within its Markdown table cell.
pub fn escape_pipes(text: &str) -> String {
    text.replace('|', "\\|")
}

/// `text` cut to at most `max` bytes on a character boundary, saying how much was left out.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    // `str::floor_char_boundary` once the MSRV (1.90) reaches 1.91.
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &text[..end], text.len() - end)
}
