//! Text for people: answers and values cut to a size a failure message can show, and escaped
//! for the markup the reports are written in. A leaf module, so the client and the stdio
//! transport share it without depending on each other.

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
    let end = text.floor_char_boundary(max);
    format!("{}… ({} more bytes)", &text[..end], text.len() - end)
}

/// The markup a text is escaped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    /// An HTML page: line breaks and tabs kept (a `<pre>` shows them), carriage returns dropped.
    Html,
    /// XML 1.0, in an attribute or an element alike: line breaks and tabs as character
    /// references, since a reader normalizes them to spaces in an attribute.
    Xml,
}

/// `text` safe in element content and in a quoted attribute: the five markup characters as
/// references, and the characters the markup cannot hold (most controls, U+FFFE, U+FFFF)
/// replaced by U+FFFD. The server under test is hostile: everything it said goes through here.
pub fn escape_markup(text: &str, markup: Markup) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match (c, markup) {
            ('&', _) => out.push_str("&amp;"),
            ('<', _) => out.push_str("&lt;"),
            ('>', _) => out.push_str("&gt;"),
            ('"', _) => out.push_str("&quot;"),
            // `&apos;` is not HTML 4's; a numeric reference is both languages'.
            ('\'', _) => out.push_str("&#39;"),
            ('\n' | '\t', Markup::Html) => out.push(c),
            ('\r', Markup::Html) => {}
            ('\n', Markup::Xml) => out.push_str("&#10;"),
            ('\r', Markup::Xml) => out.push_str("&#13;"),
            ('\t', Markup::Xml) => out.push_str("&#9;"),
            (c, _) if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            (c, _) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_escaping_leaves_no_markup_and_no_forbidden_character() {
        let hostile = "a<b>&\"c'\u{0}\u{1b}d\ne\r\tf\u{FFFF}\u{85}";
        assert_eq!(
            escape_markup(hostile, Markup::Xml),
            "a&lt;b&gt;&amp;&quot;c&#39;\u{FFFD}\u{FFFD}d&#10;e&#13;&#9;f\u{FFFD}\u{FFFD}"
        );
        assert_eq!(
            escape_markup(hostile, Markup::Html),
            "a&lt;b&gt;&amp;&quot;c&#39;\u{FFFD}\u{FFFD}d\ne\tf\u{FFFD}\u{FFFD}"
        );
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let cut = cut("ééé", 3);
        assert!(cut.starts_with("é…"), "{cut}");
    }
}
