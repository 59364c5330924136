//! LIM-1's date ranges: a tool whose input has a `from` and a `to` date takes `from ≤ to` over at
//! most [`MAX_RANGE_DAYS`] days, a rule no JSON Schema states (`Analytics refuse …` in
//! limits.feature). The fuzzer holds every call to it and sends each tool the two edges past it.

use chataigne_contract::MAX_RANGE_DAYS;
use chataigne_contract::time::{format_date, parse_date};
use serde_json::{Value, json};

/// Whether the input schema has a range: `from` and `to`, both dates.
pub fn has_range(schema: &Value) -> bool {
    crate::edges::has_range(schema)
}

fn days(args: &Value) -> Option<(i64, i64)> {
    let day = |m: &str| args.get(m).and_then(Value::as_str).and_then(parse_date);
    Some((day("from")?, day("to")?))
}

/// What is wrong with the arguments' range, if they have one (`None`: no range, or a right one).
pub fn range_problem(args: &Value) -> Option<String> {
    let (from, to) = days(args)?;
    if to < from {
        return Some("`to` before `from`".to_owned());
    }
    let span = to - from + 1;
    (span > MAX_RANGE_DAYS).then(|| format!("a range of {span} days (at most {MAX_RANGE_DAYS})"))
}

/// `from` and `to` in order, when both are there: a valid call's range.
pub fn ordered(args: &mut Value) {
    if let Some((from, to)) = days(args)
        && to < from
        && let Some(m) = args.as_object_mut()
    {
        m.insert("from".into(), json!(format_date(to)));
        m.insert("to".into(), json!(format_date(from)));
    }
}

/// The two ranges past the rule, from valid arguments: one day too long (ending on `to`), and
/// `to` the day before `from`.
pub fn past_edges(args: &Value) -> Vec<Value> {
    let Some((_, to)) = days(args) else { return Vec::new() };
    let with = |from: i64, to: i64| {
        let mut a = args.clone();
        a["from"] = json!(format_date(from));
        a["to"] = json!(format_date(to));
        a
    };
    vec![with(to - MAX_RANGE_DAYS, to), with(to + 1, to)]
}

#[cfg(test)]
mod tests {
    use chataigne_contract::ToolName;

    use super::*;

    #[test]
    fn ranges_past_the_rule() {
        assert!(has_range(&ToolName::GetAnalytics.input_schema()));
        assert!(!has_range(&ToolName::ListOrders.input_schema()));
        let ok = json!({ "from": "2025-12-01", "to": "2026-12-01" });
        assert_eq!(range_problem(&ok), None);
        let edges = past_edges(&ok);
        assert_eq!(edges[0]["from"], "2025-11-30");
        assert!(edges.iter().all(|e| range_problem(e).is_some()));
        let mut reversed = json!({ "from": "2026-11-30", "to": "2026-11-29" });
        assert!(range_problem(&reversed).is_some());
        ordered(&mut reversed);
        assert_eq!(reversed, json!({ "from": "2026-11-29", "to": "2026-11-30" }));
    }
}
