//! Analytics: up to 8 distinct metrics over at most 366 days (LIM-1), per day, ISO week or month,
//! computed from the restaurant's orders and conversations.

use std::collections::{BTreeMap, HashMap};

use chataigne_contract::time::{civil_from_days, days_from_civil, format_date, parse_date, parse_timestamp};
use serde_json::{Map, Value, json};

use super::{Call, Output};
use crate::error::ToolError;

/// Longest range, inclusive of both ends.
const MAX_DAYS: i64 = chataigne_contract::MAX_RANGE_DAYS;

fn range(args: &Value) -> Result<(i64, i64), ToolError> {
    let day = |name| args.get(name).and_then(Value::as_str).and_then(parse_date);
    let (Some(from), Some(to)) = (day("from"), day("to")) else {
        return Err(ToolError::invalid("/from or /to is not a calendar date"));
    };
    Ok((from, to))
}

pub fn validate(args: &Value) -> Result<(), ToolError> {
    let (from, to) = range(args)?;
    if to < from {
        return Err(ToolError::invalid("/to is before /from"));
    }
    if to - from + 1 > MAX_DAYS {
        return Err(ToolError::invalid("the range exceeds 366 days"));
    }
    Ok(())
}

fn bucket(day: i64, granularity: &str) -> i64 {
    match granularity {
        // 1970-01-01 was a Thursday: shift so weeks start on Monday.
        "week" => day - (day + 3).rem_euclid(7),
        "month" => {
            let (y, m, _) = civil_from_days(day);
            days_from_civil(y, m, 1)
        }
        _ => day,
    }
}

#[derive(Default)]
struct Acc {
    orders: u64,
    revenue: u64,
    paid_orders: u64,
    completed: u64,
    conversations: u64,
    received: u64,
    sent: u64,
    first_responses: Vec<i64>,
    new_customers: u64,
    repeat_customers: u64,
}

impl Acc {
    fn value(&self, metric: &str) -> Value {
        match metric {
            "orders_count" => json!(self.orders),
            "revenue_cents" => json!(self.revenue),
            "average_order_cents" => json!(self.revenue.checked_div(self.paid_orders).unwrap_or(0)),
            "completed_orders" => json!(self.completed),
            "conversations_count" => json!(self.conversations),
            "messages_received" => json!(self.received),
            "messages_sent" => json!(self.sent),
            "median_first_response_s" => {
                let mut v = self.first_responses.clone();
                v.sort_unstable();
                json!(v.get(v.len() / 2).copied().unwrap_or(0))
            }
            "new_customers" => json!(self.new_customers),
            "repeat_customers" => json!(self.repeat_customers),
            _ => Value::Null,
        }
    }
}

fn day_of(ts: &str) -> Option<i64> {
    parse_timestamp(ts).map(|s| s.div_euclid(86_400))
}

pub fn get(call: &Call) -> Result<Output, ToolError> {
    let (from, to) = range(&call.args)?;
    let granularity = call.str("granularity").unwrap_or("day");
    let mut metrics: Vec<&str> = call
        .args
        .get("metrics")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // A repeat reaches here only when the schema allows it (`repeats-as-once`): computed once.
    let mut seen = std::collections::HashSet::new();
    metrics.retain(|m| seen.insert(*m));
    let rid = call.restaurant_id()?;
    let data = call.app.store.read();
    let mut buckets: BTreeMap<i64, Acc> = BTreeMap::new();
    let mut d = from;
    while d <= to {
        buckets.entry(bucket(d, granularity)).or_default();
        d += 1;
    }
    let mut total = Acc::default();
    let in_range = |day: i64| (from..=to).contains(&day);

    // Orders oldest first, so a customer's first order is seen first.
    let mut seen: HashMap<&str, ()> = HashMap::new();
    for o in data.orders_of(rid) {
        let Some(day) = day_of(o.created_at()) else { continue };
        let o = o.row;
        let first = seen.insert(&o.customer_name, ()).is_none();
        if !in_range(day) {
            continue;
        }
        for acc in [buckets.entry(bucket(day, granularity)).or_default(), &mut total] {
            acc.orders += 1;
            if !matches!(&*o.status, "cancelled" | "rejected") {
                acc.revenue += o.total_cents;
                acc.paid_orders += 1;
            }
            acc.completed += u64::from(&*o.status == "completed");
            if first { acc.new_customers += 1 } else { acc.repeat_customers += 1 }
        }
    }
    for c in data.conversations.get(rid).into_iter().flat_map(|m| m.values()) {
        let messages: Vec<_> = data.messages.get(&c.id).into_iter().flat_map(|m| m.values()).collect();
        if let Some(day) = day_of(&c.created_at).filter(|d| in_range(*d)) {
            let inbound = messages.iter().find(|m| m.direction == "inbound");
            let reply = inbound
                .and_then(|i| messages.iter().find(|m| m.direction == "outbound" && m.sent_at > i.sent_at));
            let wait = inbound
                .zip(reply)
                .and_then(|(i, r)| Some(parse_timestamp(&r.sent_at)? - parse_timestamp(&i.sent_at)?));
            for acc in [buckets.entry(bucket(day, granularity)).or_default(), &mut total] {
                acc.conversations += 1;
                acc.first_responses.extend(wait);
            }
        }
        for m in &messages {
            let Some(day) = day_of(&m.sent_at).filter(|d| in_range(*d)) else { continue };
            for acc in [buckets.entry(bucket(day, granularity)).or_default(), &mut total] {
                if m.direction == "inbound" { acc.received += 1 } else { acc.sent += 1 }
            }
        }
    }
    let values = |acc: &Acc| metrics.iter().map(|m| (m.to_string(), acc.value(m))).collect::<Map<_, _>>();
    let series: Vec<Value> = buckets
        .iter()
        .map(|(start, acc)| json!({ "period_start": format_date(*start), "values": values(acc) }))
        .collect();
    let data = json!({
        "restaurant_id": rid, "from": format_date(from), "to": format_date(to), "granularity": granularity,
        "metrics": metrics, "series": series, "totals": values(&total),
    });
    Ok(Output::new(
        data,
        format!("{} metrics of {rid} over {} days, per {granularity}", metrics.len(), to - from + 1),
    ))
}
