//! Canonical JSON: sorted keys and integral numbers written as integers, so that arguments equal
//! as JSON (key order, `1` vs `1.0`) hash the same (IDEM-2) and cursors bind filters stably.

use serde_json::Value;
use sha2::{Digest, Sha256};

pub fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Number(n) => match n.as_f64() {
            // 1.0 and 1 are the same JSON number; integers beyond 2^53 keep their exact text.
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => out.push_str(&(f as i64).to_string()),
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

/// SHA-256 of the canonical form of `value` without the listed top-level keys.
pub fn digest_without(value: &Value, skip: &[&str]) -> [u8; 32] {
    let mut text = String::new();
    match value {
        Value::Object(map) => {
            let kept: serde_json::Map<String, Value> = map
                .iter()
                .filter(|(k, _)| !skip.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            write(&Value::Object(kept), &mut text);
        }
        other => write(other, &mut text),
    }
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_json_hashes_equal() {
        let a = json!({"b": 1, "a": [1.0, {"y": 2, "x": "s"}]});
        let b = json!({"a": [1, {"x": "s", "y": 2.0}], "b": 1.0});
        assert_eq!(digest_without(&a, &[]), digest_without(&b, &[]));
        assert_ne!(digest_without(&a, &[]), digest_without(&json!({"b": 2, "a": []}), &[]));
        assert_eq!(digest_without(&json!({"k": 1, "x": 2}), &["k"]), digest_without(&json!({"x": 2}), &[]));
    }
}
