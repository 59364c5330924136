//! The contract's bounds as data ([`BOUNDS`]), each with the edges derived from it: below, on
//! and above the bound, in every unit a server could count it in. One bound of docs/CONTRACT.md,
//! one row here; `tests/it/edges.rs` reads the document and fails on a bound with no row, or a
//! row whose edges derive nothing. Pure: `matrices` turns the length and calendar edges into
//! rows of the bounds matrix, `steps` sends the body and deadline edges.
//!
//! - lengths ([`length_edges`]): a string's length is in characters (Unicode scalar values, what
//!   JSON Schema's `maxLength` counts); a server counting UTF-8 bytes or UTF-16 code units
//!   counts otherwise. "é" (2 bytes, 1 UTF-16 unit) separates bytes from characters; an astral
//!   character (4 bytes, 2 UTF-16 units) also separates UTF-16 from characters, which the seed
//!   leaves open (zod counts UTF-16): those rows are the choice `length-code-points`;
//! - calendar ([`calendar_edges`]): LIM-1's inclusive range on, past and reversed across the
//!   days where calendars go wrong (29 February, month and year ends);
//! - body ([`BODY_EDGES`]): LIM-7's 1 MiB with and without a Content-Length;
//! - deadlines: every tool, by its `Kind` (`chataigne_contract::Kind`), not one picked tool.

use chataigne_contract::MAX_RANGE_DAYS;
use chataigne_contract::time::{days_from_civil, format_date};

/// How a bound's edges are derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// A numeric or item-count bound of an input schema (`crate::bounds::targets`): one below,
    /// on and one above, in `matrices::bound_rows`.
    Schema { member: &'static str },
    /// A string length of an input schema: [`length_edges`] for each member of that name.
    Length { member: &'static str },
    /// LIM-1's date range: [`calendar_edges`].
    Calendar,
    /// LIM-7's request body: [`BODY_EDGES`].
    Body,
    /// LIM-5/LIM-6's 128 KiB: every page and record of the dataset past it
    /// (`matrices::page_size_rows`, `item_size_rows`), judged on every exchange too (ENV-3).
    Page,
    /// ENV-3's 4 KiB summary: the server's own output, judged on every exchange (the judge's
    /// `summary-within-4-kib`); no argument reaches it.
    Output,
    /// LIM-4's deadlines: every tool past the deadline of its kind.
    Deadline,
    /// A bound whose edges need the server's clock or a burst, held by the hand-written
    /// scenarios of `feature` tagged with the bound's clause: LIM-2's rates (a burst to the
    /// rate and one past it, judged by `rate_verdict`), IDEM-6's 24 h (a second before and after).
    Scenarios { feature: &'static str },
}

/// One bound docs/CONTRACT.md states.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub clause: &'static str,
    /// How CONTRACT.md writes the bound: each is found there (`tests/it/edges.rs`).
    pub tokens: &'static [&'static str],
    pub family: Family,
}

/// Every bound of docs/CONTRACT.md.
pub const BOUNDS: &[Bound] = &[
    Bound { clause: "PAG-2", tokens: &["1..=50"], family: Family::Schema { member: "limit" } },
    Bound { clause: "PAG-8", tokens: &["1..=100"], family: Family::Schema { member: "message_limit" } },
    Bound { clause: "LIM-1", tokens: &["1..=8"], family: Family::Schema { member: "metrics" } },
    Bound { clause: "LIM-1", tokens: &["at most 366 days"], family: Family::Calendar },
    Bound { clause: "IDEM-1", tokens: &["8..=255"], family: Family::Length { member: "idempotency_key" } },
    Bound { clause: "LIM-7", tokens: &["1..=200"], family: Family::Length { member: "query" } },
    Bound { clause: "LIM-7", tokens: &["1..=2000"], family: Family::Length { member: "text" } },
    Bound { clause: "LIM-7", tokens: &["1..=120"], family: Family::Length { member: "name" } },
    Bound { clause: "LIM-7", tokens: &["1 MiB"], family: Family::Body },
    Bound { clause: "LIM-5", tokens: &["128 KiB"], family: Family::Page },
    Bound { clause: "ENV-3", tokens: &["4 KiB"], family: Family::Output },
    Bound { clause: "LIM-4", tokens: &["15 s", "30 s", "20 s"], family: Family::Deadline },
    Bound {
        clause: "LIM-2",
        tokens: &["1000 calls per minute", "1000/min", "500/min", "60 s"],
        family: Family::Scenarios { feature: "rate_limits.feature" },
    },
    Bound {
        clause: "IDEM-6",
        tokens: &["24 h"],
        family: Family::Scenarios { feature: "idempotency.feature" },
    },
];

/// The characters a length edge is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// "é": 2 UTF-8 bytes, 1 UTF-16 code unit.
    TwoBytes,
    /// "😀": 4 UTF-8 bytes, 2 UTF-16 code units.
    Astral,
    /// Flags ("🇫🇷"): two regional indicators, one grapheme cluster of two characters (8 UTF-8
    /// bytes, 4 UTF-16 units): what a server counting what a person sees counts once.
    Flag,
    /// "é" written decomposed ("e" and U+0301): two characters (3 UTF-8 bytes, 2 UTF-16 units)
    /// that Unicode normalization (NFC) makes one.
    Decomposed,
    /// Lines ended by CRLF ("ab" then CR LF): each ending two characters, that a server which
    /// normalizes line endings to LF before measuring counts once.
    CrLf,
}

impl Unit {
    /// `n` characters of this unit: for flags, `n / 2` of them and a lone regional indicator
    /// when `n` is odd.
    pub fn repeat(self, n: usize) -> String {
        match self {
            Unit::TwoBytes => "é".repeat(n),
            Unit::Astral => "😀".repeat(n),
            Unit::Flag => {
                let mut s = "🇫🇷".repeat(n / 2);
                if n % 2 == 1 {
                    s.push('🇫');
                }
                s
            }
            Unit::Decomposed => {
                let mut s = "e\u{301}".repeat(n / 2);
                if n % 2 == 1 {
                    s.push('e');
                }
                s
            }
            Unit::CrLf => "ab\r\n".chars().cycle().take(n).collect(),
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Unit::TwoBytes => "two-byte characters (é)",
            Unit::Astral => "astral characters (😀, two UTF-16 units)",
            Unit::Flag => "characters in flags (🇫🇷, two to a flag, one grapheme)",
            Unit::Decomposed => "characters of a decomposed é (e and U+0301, one once normalized)",
            Unit::CrLf => "characters in lines ended by CRLF (two characters, one once normalized to LF)",
        }
    }
}

/// The choice an astral row checks: the seed says "characters", and a server on the TypeScript
/// SDK (zod) counts UTF-16 code units.
pub const CODE_POINTS: &str = "length-code-points";

/// One length edge of a string member bounded by `min..=max` characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LengthEdge {
    pub chars: usize,
    pub unit: Unit,
    /// Whether the value is within the bound (served) or not (refused).
    pub within: bool,
    /// `Some`: a reading the seed allows differs here (UTF-16 counting): full level only.
    pub choice: Option<&'static str>,
}

impl LengthEdge {
    /// `n` two-byte characters: a value within a bound of `n` counted in characters or UTF-16
    /// units, and over it in UTF-8 bytes (the fuzzer's draw of the rows `within` in that unit).
    pub fn within_two_bytes(n: usize) -> String {
        LengthEdge { chars: n, unit: Unit::TwoBytes, within: true, choice: None }.value()
    }

    pub fn value(&self) -> String {
        self.unit.repeat(self.chars)
    }

    pub fn describe(&self, member: &str) -> String {
        let side = if self.within { "within" } else { "outside" };
        format!("`{member}` of {} {}, {side} its bound", self.chars, self.unit.describe())
    }
}

/// The edges of a length bound, in units other than ASCII (ASCII is `bound_rows`' own): on the
/// maximum and one past it, and for a minimum over 1 one short of it. A server counting bytes
/// refuses the two-byte maximum and accepts the two-byte value one short of the minimum; one
/// counting UTF-16 refuses the astral maximum and accepts the astral value one short of the
/// minimum (those two rows are the choice [`CODE_POINTS`]). In flags, a server counting grapheme
/// clusters accepts a value one past the maximum and refuses one on the minimum (no SDK counts
/// so: those rows are rules); UTF-16 refuses the flag maximum, the choice again. Past the maximum
/// every count of characters refuses.
pub fn length_edges(min: usize, max: usize) -> Vec<LengthEdge> {
    let mut out = Vec::new();
    for unit in [Unit::TwoBytes, Unit::Astral, Unit::Flag, Unit::Decomposed] {
        // Code points and UTF-16 units count a decomposed é alike: only astral and flag rows
        // tell the two readings apart.
        let choice = matches!(unit, Unit::Astral | Unit::Flag).then_some(CODE_POINTS);
        out.push(LengthEdge { chars: max, unit, within: true, choice });
        out.push(LengthEdge { chars: max + 1, unit, within: false, choice: None });
        if min > 1 {
            out.push(LengthEdge { chars: min - 1, unit, within: false, choice });
            out.push(LengthEdge { chars: min, unit, within: true, choice: None });
        }
    }
    // Past the maximum only: a text with line breaks within a bound is not every member's to
    // serve (a key, a query), and normalizing CRLF only ever shortens what is measured.
    out.push(LengthEdge { chars: max + 1, unit: Unit::CrLf, within: false, choice: None });
    out
}

/// The characters `s` has in each unit: (Unicode scalar values, UTF-8 bytes, UTF-16 units).
pub fn counts(s: &str) -> (usize, usize, usize) {
    (s.chars().count(), s.len(), s.encode_utf16().count())
}

/// Whether an input schema has LIM-1's range: `from` and `to`, both dates.
pub fn has_range(schema: &serde_json::Value) -> bool {
    ["from", "to"].iter().all(|m| {
        schema.pointer(&format!("/properties/{m}/pattern")).and_then(serde_json::Value::as_str)
            == Some("^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
    })
}

/// One range of LIM-1's calendar edges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeEdge {
    pub from: String,
    pub to: String,
    pub within: bool,
    pub why: String,
}

/// The first leap year from 2028 on: far enough from the dataset's days that no series is
/// large, the same in every run.
fn leap_year() -> i64 {
    (2028..).find(|y| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0).unwrap_or(2028)
}

/// LIM-1's range (`from..=to`, at most [`MAX_RANGE_DAYS`] days, `to ≥ from`) at the calendar's
/// edges, each range derived from the bound by day arithmetic: the longest range that is a
/// leap year, that ends on 29 February, that starts on it, and one without a leap day; a day
/// longer for each (a leap day inside); a single day on 29 February and on a year's last day;
/// `to` the day before `from` across a month end, 29 February and a year end.
pub fn calendar_edges() -> Vec<RangeEdge> {
    let n = MAX_RANGE_DAYS;
    let y = leap_year();
    let leap_day = days_from_civil(y, 2, 29);
    let new_year = days_from_civil(y, 1, 1);
    let plain = days_from_civil(plain_year(), 1, 1);
    let mut out = Vec::new();
    let mut push = |from: i64, to: i64, why: &str| {
        let span = to - from + 1;
        let within = to >= from && span <= n;
        let why = format!("{why} ({span} days)");
        out.push(RangeEdge { from: format_date(from), to: format_date(to), within, why });
    };
    push(new_year, new_year + n - 1, "a whole leap year");
    push(new_year, new_year + n, "a leap year and a day");
    push(leap_day - n + 1, leap_day, "the longest range ending on 29 February");
    push(leap_day - n + 1, leap_day + 1, "a day longer, through 29 February");
    push(leap_day, leap_day + n - 1, "the longest range starting on 29 February");
    push(leap_day, leap_day + n, "a day longer, from 29 February");
    push(plain, plain + n - 1, "the longest range without a leap day");
    push(plain, plain + n, "a day longer, without a leap day");
    push(leap_day, leap_day, "29 February alone");
    push(new_year - 1, new_year - 1, "a year's last day alone");
    push(leap_day + 1, leap_day, "`to` on 29 February, the day before `from`");
    push(days_from_civil(y, 5, 1), days_from_civil(y, 4, 30), "`to` a month's last day, before `from`");
    push(new_year, new_year - 1, "`to` the last day of the year before `from`");
    // Across daylight-saving changes: a range measured between local midnights (the
    // restaurants' time zone, Europe/Paris) is an hour short from winter to summer time and an
    // hour long from summer to winter time; a bound counted in elapsed days then takes a day
    // more, or one fewer.
    let z = plain_year();
    let spring = days_from_civil(z, 3, sunday(z, 3, 0)) - 1;
    let autumn = days_from_civil(z, 10, sunday(z, 10, 0)) - 1;
    push(spring, spring + n - 1, "the longest range from winter time into the next summer time");
    push(spring, spring + n, "a day longer, from winter time into the next summer time");
    push(autumn, autumn + n - 1, "the longest range from summer time into the next winter time");
    push(autumn, autumn + n, "a day longer, from summer time into the next winter time");
    out.push(month_straddling_edge());
    out
}

/// A year two after the leap year: neither it nor the next holds a 29 February.
fn plain_year() -> i64 {
    leap_year() + 2
}

/// The longest range within the bound that starts in the middle of a month: it touches 13
/// calendar months, which a bound counted in monthly buckets (12) refuses.
pub fn month_straddling_edge() -> RangeEdge {
    let from = days_from_civil(plain_year(), 1, 15);
    let to = from + MAX_RANGE_DAYS - 1;
    RangeEdge {
        from: format_date(from),
        to: format_date(to),
        within: true,
        why: format!(
            "the longest range from the middle of a month, over 13 calendar months ({MAX_RANGE_DAYS} days)"
        ),
    }
}

/// A daylight-saving change of a common time zone: the 24 hours of IDEM-6 are elapsed time,
/// which a retention counted in local days (the same wall-clock time the next day) makes 23 or
/// 25 hours across it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DstEdge {
    pub zone: &'static str,
    /// The change, in seconds since the epoch (UTC).
    pub at_s: i64,
    pub why: &'static str,
}

/// The day of the month of the `n`th (1-based; 0: the last) Sunday of `month` in `year`.
fn sunday(year: i64, month: u32, n: usize) -> u32 {
    let first = days_from_civil(year, month, 1);
    let next =
        if month == 12 { days_from_civil(year + 1, 1, 1) } else { days_from_civil(year, month + 1, 1) };
    // 1970-01-01, day 0, was a Thursday: day z is a Sunday when (z + 4) mod 7 is 0.
    let sundays: Vec<u32> =
        (1..=(next - first) as u32).filter(|d| (first + i64::from(*d) - 1 + 4).rem_euclid(7) == 0).collect();
    let pick = if n == 0 { sundays.last() } else { sundays.get(n - 1) };
    pick.copied().unwrap_or(1)
}

/// The four daylight-saving changes of `year` in Europe (last Sunday of March and of October,
/// 01:00 UTC) and the United States' Eastern zone (second Sunday of March, 07:00 UTC; first
/// Sunday of November, 06:00 UTC), in the order they come.
pub fn dst_edges(year: i64) -> Vec<DstEdge> {
    let at = |month: u32, day: u32, hour: i64| days_from_civil(year, month, day) * 86_400 + hour * 3600;
    const SPRING: &str = "spring forward (23-hour day)";
    const FALL: &str = "fall back (25-hour day)";
    let mut out: Vec<DstEdge> = [
        ("America/New_York", at(3, sunday(year, 3, 2), 7), SPRING),
        ("Europe/Paris", at(3, sunday(year, 3, 0), 1), SPRING),
        ("Europe/Paris", at(10, sunday(year, 10, 0), 1), FALL),
        ("America/New_York", at(11, sunday(year, 11, 1), 6), FALL),
    ]
    .into_iter()
    .map(|(zone, at_s, why)| DstEdge { zone, at_s, why })
    .collect();
    out.sort_by_key(|e| e.at_s);
    out
}

/// One transport edge of LIM-7's body limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyEdge {
    pub bytes: usize,
    /// Sent chunked, with no Content-Length: the server learns the size only by reading.
    pub chunked: bool,
    /// Padded with whitespace between JSON tokens rather than in a string argument: the body's
    /// size is the bytes sent, not the message parsed and written again (which drops them).
    pub whitespace: bool,
    pub within: bool,
}

const fn body_edge(bytes: usize, chunked: bool, whitespace: bool, within: bool) -> BodyEdge {
    BodyEdge { bytes, chunked, whitespace, within }
}

/// LIM-7 on both framings: exactly 1 MiB is read, a byte more is 413, with a Content-Length or
/// chunked without one; and a byte more of whitespace, which a limit measured on the
/// re-serialized message lets through.
pub const BODY_EDGES: &[BodyEdge] = &[
    body_edge(chataigne_contract::MAX_BODY_BYTES, false, false, true),
    body_edge(chataigne_contract::MAX_BODY_BYTES + 1, false, false, false),
    body_edge(chataigne_contract::MAX_BODY_BYTES, true, false, true),
    body_edge(chataigne_contract::MAX_BODY_BYTES + 1, true, false, false),
    body_edge(chataigne_contract::MAX_BODY_BYTES + 1, false, true, false),
];

/// An integer past a schema's bound that a server reading it into 32 bits before the check
/// takes for a value within: `2^32 + max` (wraps to the maximum), `2^31` (one past `i32::MAX`,
/// negative as an `i32`) and `min - 2^32` (wraps to the minimum).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrapEdge {
    pub value: i64,
    /// Above the maximum (else below the minimum).
    pub above: bool,
    pub why: &'static str,
}

pub fn integer_wrap_edges(min: i64, max: i64) -> Vec<WrapEdge> {
    const WRAP: i64 = 1 << 32;
    vec![
        WrapEdge { value: WRAP + max, above: true, why: "2^32 + its maximum, the maximum in 32 bits" },
        WrapEdge { value: 1 << 31, above: true, why: "2^31, past a 32-bit signed integer" },
        WrapEdge { value: min - WRAP, above: false, why: "its minimum - 2^32, the minimum in 32 bits" },
    ]
    .into_iter()
    // A bound as wide as 32 bits has no wrap past it.
    .filter(|e| !(min..=max).contains(&e.value))
    .collect()
}

#[cfg(test)]
mod tests {
    use chataigne_contract::time::parse_date;

    use super::*;

    fn span(e: &RangeEdge) -> i64 {
        parse_date(&e.to).unwrap() - parse_date(&e.from).unwrap() + 1
    }

    #[test]
    fn calendar_edges_sit_on_and_past_the_bound_across_leap_days() {
        let edges = calendar_edges();
        let find =
            |from: &str, to: &str| edges.iter().find(|e| e.from == from && e.to == to).map(|e| e.within);
        // The brief's examples: both 366 days.
        assert_eq!(find("2028-01-01", "2028-12-31"), Some(true));
        assert_eq!(find("2027-03-01", "2028-02-29"), Some(true));
        assert_eq!(find("2027-03-01", "2028-03-01"), Some(false));
        assert_eq!(find("2028-01-01", "2029-01-01"), Some(false));
        assert_eq!(find("2028-02-29", "2029-02-28"), Some(true));
        assert_eq!(find("2028-02-29", "2028-02-29"), Some(true));
        assert_eq!(find("2028-03-01", "2028-02-29"), Some(false));
        for e in &edges {
            let s = span(e);
            assert_eq!(e.within, (1..=MAX_RANGE_DAYS).contains(&s), "{e:?}");
            assert!(s == 1 || s == 0 || s == MAX_RANGE_DAYS || s == MAX_RANGE_DAYS + 1, "{e:?}");
        }
    }

    #[test]
    fn length_edges_separate_the_units_a_server_could_count() {
        let edges = length_edges(8, 255);
        let row = |chars, unit, within| {
            edges.iter().find(|e| e.chars == chars && e.unit == unit && e.within == within).cloned()
        };
        // 255 "é": 255 characters, 510 bytes — a server counting bytes refuses it.
        let max = row(255, Unit::TwoBytes, true).unwrap();
        assert_eq!(counts(&max.value()), (255, 510, 255));
        assert_eq!(max.choice, None);
        // 255 astral characters are 510 UTF-16 units: zod refuses them, a reading left open.
        let astral = row(255, Unit::Astral, true).unwrap();
        assert_eq!(counts(&astral.value()), (255, 1020, 510));
        assert_eq!(astral.choice, Some(CODE_POINTS));
        // 7 "é" are 14 bytes: a server counting bytes lets them through.
        assert_eq!(counts(&row(7, Unit::TwoBytes, false).unwrap().value()).1, 14);
        assert_eq!(row(7, Unit::Astral, false).unwrap().choice, Some(CODE_POINTS));
        assert!(row(256, Unit::TwoBytes, false).is_some() && row(256, Unit::Astral, false).is_some());
        // 255 characters in flags: 127 flags and a lone indicator, 128 graphemes.
        let flags = row(255, Unit::Flag, true).unwrap();
        assert_eq!(counts(&flags.value()), (255, 1020, 510));
        assert_eq!(flags.choice, Some(CODE_POINTS));
        // 8 characters are 4 flags: a grapheme count refuses them, a rule.
        assert_eq!(row(8, Unit::Flag, true).unwrap().value(), "🇫🇷".repeat(4));
        assert_eq!(row(8, Unit::Flag, true).unwrap().choice, None);
        // 256 characters of decomposed é are 128 once normalized (NFC): a server that normalizes
        // before it counts lets them through, a rule in every reading (UTF-16 counts them alike).
        let decomposed = row(256, Unit::Decomposed, false).unwrap();
        assert_eq!(counts(&decomposed.value()), (256, 384, 256));
        assert_eq!(row(255, Unit::Decomposed, true).unwrap().choice, None);
        // Past the maximum every unit refuses: never a choice.
        assert!(edges.iter().filter(|e| e.chars > 255).all(|e| e.choice.is_none()));
        // No minimum to go under for 1..=200.
        assert!(length_edges(1, 200).iter().all(|e| e.chars >= 200));
    }

    #[test]
    fn dst_edges_are_the_known_changes() {
        let when = |e: &DstEdge| chataigne_contract::time::format_timestamp(e.at_s);
        let edges: Vec<String> = dst_edges(2027).iter().map(when).collect();
        assert_eq!(
            edges,
            ["2027-03-14T07:00:00Z", "2027-03-28T01:00:00Z", "2027-10-31T01:00:00Z", "2027-11-07T06:00:00Z"]
        );
        let edges: Vec<String> = dst_edges(2028).iter().map(when).collect();
        assert_eq!(
            edges,
            ["2028-03-12T07:00:00Z", "2028-03-26T01:00:00Z", "2028-10-29T01:00:00Z", "2028-11-05T06:00:00Z"]
        );
    }

    #[test]
    fn body_edges_cover_both_framings_on_and_past_the_limit() {
        for chunked in [false, true] {
            let mine: Vec<_> = BODY_EDGES.iter().filter(|e| e.chunked == chunked).collect();
            assert!(mine.iter().any(|e| e.within && e.bytes == chataigne_contract::MAX_BODY_BYTES));
            assert!(mine.iter().any(|e| !e.within && e.bytes == chataigne_contract::MAX_BODY_BYTES + 1));
        }
        assert!(BODY_EDGES.iter().any(|e| e.whitespace && !e.within));
    }

    #[test]
    fn integer_wraps_land_on_the_bound_or_overflow_32_bits() {
        let edges = integer_wrap_edges(1, 50);
        let values: Vec<i64> = edges.iter().map(|e| e.value).collect();
        assert_eq!(values, [(1 << 32) + 50, 1 << 31, 1 - (1 << 32)]);
        // Cast to 32 bits, the wrapped ones are the bounds themselves: served if the cast comes
        // before the check.
        assert_eq!(edges[0].value as u32, 50);
        assert_eq!(edges[2].value as i32, 1);
        assert_eq!(edges[1].value as i32, i32::MIN);
        assert!(edges.iter().all(|e| !(1..=50).contains(&e.value)));
    }
}
