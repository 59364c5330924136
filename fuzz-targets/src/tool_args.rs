//! Tool arguments, structure-aware, through the real HTTP router as a client sends them.
//!
//! Two input forms:
//! - text `#<tool>#<persona>#<arguments JSON>` (readable seeds, and any JSON the mutator makes);
//! - anything else drives `arbitrary`: one of the 17 tools, a persona, then for each property of
//!   the tool's published input schema either a plausible value (dataset IDs, the schema's enums,
//!   digit-shaped dates and timestamps whose fields may be out of range, bounds ± 1) or a value of
//!   any type; sometimes an extra property. A list answer's `next_cursor` is then followed for a
//!   few pages, sometimes tampered with or sent with changed filters.
//!
//! Checked on every answer: never a 5xx, an answer within 5 s, JSON, and a JSON-RPC error or the
//! contract's envelope (output schema, isError, the code's category/retryable/message).

use std::sync::OnceLock;

use arbitrary::{Result, Unstructured};
use chataigne_contract::ToolName;
use serde_json::{Map, Value, json};

use crate::{PERSONAS, harness};

/// One input of the `tool_args` target.
pub fn tool_args(data: &[u8]) {
    let h = harness();
    h.reset();
    if let Some(text) = data.strip_prefix(b"#") {
        let text = String::from_utf8_lossy(text);
        let mut parts = text.splitn(3, '#');
        let (Some(tool), Some(persona), Some(args)) = (parts.next(), parts.next(), parts.next()) else {
            return;
        };
        let Ok(args) = serde_json::from_str::<Value>(args) else { return };
        // A persona no client could put in an Authorization header is not a server input.
        if http::HeaderValue::from_str(persona).is_err() {
            return;
        }
        h.call_checked(persona, tool, &args);
        return;
    }
    let _ = structured(&mut Unstructured::new(data));
}

fn structured(u: &mut Unstructured<'_>) -> Result<()> {
    let h = harness();
    let tool = *u.choose(ToolName::ALL)?;
    let persona = *u.choose(&PERSONAS)?;
    let mut args = arguments(u, tool)?;
    let pages = u.int_in_range(0..=3)?;
    let mut message = h.call_checked(persona, tool.as_str(), &args);
    for _ in 0..pages {
        let Some(mut cursor) = message
            .as_ref()
            .and_then(|m| m.pointer("/result/structuredContent/meta/next_cursor"))
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            break;
        };
        if u.ratio(1, 4)? && !cursor.is_empty() {
            // One character changed: PAG-6 says the server refuses it, never serves a page.
            let at = u.choose_index(cursor.len())?;
            let with = *u.choose(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ".as_slice(),
            )?;
            let mut bytes = cursor.into_bytes();
            bytes[at] = with;
            cursor = String::from_utf8_lossy(&bytes).into_owned();
        }
        let map = args.as_object_mut().expect("the structured form builds objects");
        map.insert("cursor".into(), Value::String(cursor));
        if u.ratio(1, 4)? {
            // The same cursor under other filters: refused (the cursor is bound to them).
            let (name, value) = property(u, tool)?;
            map.insert(name, value);
        }
        message = h.call_checked(persona, tool.as_str(), &args);
    }
    Ok(())
}

/// An arguments object with the tool's property names.
fn arguments(u: &mut Unstructured<'_>, tool: ToolName) -> Result<Value> {
    let schema = tool.input_schema();
    let mut args = Map::new();
    for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
        if u.ratio(4, 5)? {
            args.insert(name.clone(), value_for(u, name, prop)?);
        }
    }
    if u.ratio(1, 16)? {
        args.insert(u.arbitrary()?, any(u, 2)?);
    }
    Ok(Value::Object(args))
}

/// One of the tool's properties with a value for it.
fn property(u: &mut Unstructured<'_>, tool: ToolName) -> Result<(String, Value)> {
    let schema = tool.input_schema();
    let props: Vec<(&String, &Value)> = schema["properties"].as_object().into_iter().flatten().collect();
    let (name, prop) = *u.choose(&props)?;
    Ok((name.clone(), value_for(u, name, prop)?))
}

/// Mostly a plausible value for the property, sometimes anything.
fn value_for(u: &mut Unstructured<'_>, name: &str, prop: &Value) -> Result<Value> {
    if u.ratio(1, 5)? {
        return any(u, 3);
    }
    if let Some(values) = prop["enum"].as_array() {
        return Ok(u.choose(values.as_slice())?.clone());
    }
    if let Some(values) = prop["items"]["enum"].as_array() {
        let n = u.int_in_range(0..=values.len() + 1)?;
        let items = (0..n).map(|_| u.choose(values.as_slice()).cloned()).collect::<Result<Vec<_>>>()?;
        return Ok(Value::Array(items));
    }
    let pattern = prop["pattern"].as_str().unwrap_or_default();
    if let Some(prefix) = pattern.strip_prefix('^').and_then(|p| p.split_once('_')).map(|(p, _)| p)
        && prefix.len() == 3
        && prefix.bytes().all(|b| b.is_ascii_lowercase())
    {
        return Ok(Value::String(id_of(u, prefix)?));
    }
    if pattern.contains("T[0-9]{2}") {
        return Ok(Value::String(timestamp(u)?));
    }
    if pattern.starts_with("^[0-9]{4}") {
        return Ok(Value::String(date(u)?));
    }
    match (prop["type"].as_str(), name) {
        (Some("integer"), _) => {
            let min = prop["minimum"].as_i64().unwrap_or(0);
            let max = prop["maximum"].as_i64().unwrap_or(100);
            Ok(json!(u.int_in_range(min - 1..=max + 1)?))
        }
        (_, "idempotency_key") => {
            // A few keys, so replays and key reuse with other arguments happen.
            let keys = ["fuzz-key-0001", "fuzz-key-0002", "fuzz-key-0003", "short"];
            Ok(json!(*u.choose(&keys)?))
        }
        (_, "timezone") => {
            let zones =
                ["Europe/Paris", "UTC", "America/Argentina/Buenos_Aires", "Etc/GMT+14", "Mars/Olympus"];
            Ok(json!(*u.choose(&zones)?))
        }
        (_, "cursor") => Ok(Value::String(u.arbitrary()?)),
        _ => {
            let max = prop["maxLength"].as_u64().unwrap_or(64) as usize;
            let len = u.int_in_range(0..=max + 1)?;
            let text: String = (0..len).map(|_| u.arbitrary::<char>()).collect::<Result<_>>()?;
            Ok(Value::String(text))
        }
    }
}

/// A dataset ID with this prefix (or one that does not exist).
fn id_of(u: &mut Unstructured<'_>, prefix: &str) -> Result<String> {
    static IDS: OnceLock<Vec<String>> = OnceLock::new();
    let ids = IDS.get_or_init(|| {
        let d = &harness().app.config.dataset;
        let mut ids: Vec<String> = Vec::new();
        ids.extend(d.organizations.iter().map(|x| x.id.clone()));
        ids.extend(d.restaurants.iter().map(|x| x.id.clone()));
        ids.extend(d.orders.iter().map(|x| x.id.clone()));
        ids.extend(d.conversations.iter().map(|x| x.id.clone()));
        ids.extend(d.transcripts.iter().map(|x| x.id.clone()));
        ids
    });
    let candidates: Vec<&String> = ids.iter().filter(|id| id.starts_with(&format!("{prefix}_"))).collect();
    if candidates.is_empty() || u.ratio(1, 8)? {
        let tail: String = u.arbitrary()?;
        return Ok(format!("{prefix}_{tail}"));
    }
    Ok(u.choose(&candidates)?.to_string())
}

/// `YYYY-MM-DD` with each field anywhere in its digit range (so 2026-02-31, 0000-00-00, 9999-99-99).
fn date(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(1, 2)? {
        let plausible = ["2026-11-01", "2026-11-30", "2025-11-30", "2026-12-31", "2024-02-29", "2025-12-01"];
        return Ok(u.choose(&plausible)?.to_string());
    }
    Ok(format!(
        "{:04}-{:02}-{:02}",
        u.int_in_range(0..=9999)?,
        u.int_in_range(0..=99)?,
        u.int_in_range(0..=99)?
    ))
}

fn timestamp(u: &mut Unstructured<'_>) -> Result<String> {
    let day = date(u)?;
    if u.ratio(1, 2)? {
        return Ok(format!("{day}T00:00:00Z"));
    }
    let (h, m, s) = (u.int_in_range(0..=99)?, u.int_in_range(0..=99)?, u.int_in_range(0..=99)?);
    Ok(format!("{day}T{h:02}:{m:02}:{s:02}Z"))
}

/// A JSON value of any type, nested at most `depth` deep.
fn any(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 6 } else { 8 };
    Ok(match u.int_in_range(0..=kinds - 1)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => json!(u.arbitrary::<i64>()?),
        3 => json!(u.arbitrary::<u64>()?),
        4 => json!(u.arbitrary::<f64>()?),
        5 => Value::String(u.arbitrary()?),
        6 => {
            let n = u.int_in_range(0..=4)?;
            Value::Array((0..n).map(|_| any(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0..=4)?;
            let mut map = Map::new();
            for _ in 0..n {
                map.insert(u.arbitrary()?, any(u, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}
