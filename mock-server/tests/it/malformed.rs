//! The committed corpus of malformed requests (tests/corpus/malformed.jsonl, 200+ cases): each
//! gets the contract's answer — the expected HTTP status and JSON-RPC or tool error — never a
//! 5xx, a panic or a hang; and the server still answers a normal call afterwards.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{self, Server};

const CORPUS: &str = include_str!("../corpus/malformed.jsonl");

fn body_of(case: &Value) -> Vec<u8> {
    if let Some(text) = case["body"].as_str() {
        return text.as_bytes().to_vec();
    }
    let repeat = &case["body_repeat"];
    let unit = repeat["text"].as_str().unwrap_or(" ");
    let times = repeat["times"].as_u64().unwrap_or(0) as usize;
    let mut body = case["body_prefix"].as_str().unwrap_or_default().as_bytes().to_vec();
    body.extend(unit.repeat(times).into_bytes());
    body.extend(case["body_suffix"].as_str().unwrap_or_default().as_bytes());
    body
}

async fn send(server: &Server, case: &Value) -> support::Http {
    let auth = match (case.get("auth"), case["authorization"].as_str()) {
        (Some(Value::Bool(false)), _) => None,
        (_, Some(given)) => Some(given.to_owned()),
        _ => Some(format!("Bearer {}", support::token("owner"))),
    };
    let mut headers: Vec<(&str, String)> = Vec::new();
    if let Some(auth) = auth {
        headers.push(("authorization", auth));
    }
    for (field, header) in [("content_type", "content-type"), ("accept", "accept"), ("origin", "origin")] {
        if let Some(value) = case[field].as_str() {
            headers.push((header, value.to_owned()));
        }
    }
    let extra: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let answer = server.post_mcp(&extra, body_of(case));
    // A hang is a failure too.
    tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .unwrap_or_else(|_| panic!("{}: no answer in 10 s", case["name"]))
}

fn check(case: &Value, http: &support::Http) -> Result<(), String> {
    let name = case["name"].as_str().unwrap_or("?");
    if http.status >= 500 {
        return Err(format!("{name}: HTTP {} {}", http.status, http.text));
    }
    let expected = case["status"].as_u64().unwrap_or(0) as u16;
    if http.status != expected {
        return Err(format!(
            "{name}: HTTP {} (expected {expected}) {}",
            http.status,
            http.text.chars().take(300).collect::<String>()
        ));
    }
    if let Some(code) = case["rpc"].as_i64() {
        let got = http.json.pointer("/error/code").and_then(Value::as_i64);
        if got != Some(code) {
            return Err(format!("{name}: JSON-RPC error {got:?} (expected {code}) {}", http.text));
        }
    }
    if let Some(code) = case["tool"].as_str() {
        let result =
            http.json.get("result").ok_or_else(|| format!("{name}: no tool result: {}", http.text))?;
        let is_error = result["isError"].as_bool().unwrap_or(false);
        let got = result.pointer("/structuredContent/data/error/code").and_then(Value::as_str);
        let ok = if code == "ok" { !is_error } else { is_error && got == Some(code) };
        if !ok {
            return Err(format!(
                "{name}: tool answer {got:?} (expected {code}) {}",
                http.text.chars().take(300).collect::<String>()
            ));
        }
    }
    Ok(())
}

#[tokio::test]
async fn every_malformed_request_gets_the_contracts_error_and_the_server_keeps_serving() {
    let server = support::start().await;
    let cases: Vec<Value> =
        CORPUS.lines().map(|l| serde_json::from_str(l).expect("a corpus line is JSON")).collect();
    assert!(cases.len() >= 200, "the corpus holds {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let http = send(&server, case).await;
        if let Err(e) = check(case, &http) {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    let after = server.call("owner", "get_restaurant", json!({ "restaurant_id": "rst_central" })).await;
    support::expect_ok(&after);
}
