use chataigne_contract::Category;
use serde_json::{Value, json};

use super::*;
use crate::invariants::code_of_its_own;

fn answered(error: Value, arguments: Value) -> Exchange {
    let rid = "req_0123456789abcdefAB";
    let mut error = error;
    error["request_id"] = json!(rid);
    let message = json!({ "jsonrpc": "2.0", "id": 1, "result": {
        "isError": true,
        "content": [{ "type": "text", "text": "refused" }],
        "structuredContent": { "data": { "error": error }, "meta": { "request_id": rid } },
    }});
    let mut ex = Exchange::answered_for_test(Some(message));
    ex.response_mut_for_test().headers = vec![("x-request-id".into(), rid.into())];
    ex.response_mut_for_test().content_type = "application/json".into();
    ex.sent_strings = crate::client::sent_strings(&arguments);
    ex.tool = Some("list_orders".into());
    ex
}

fn seen(ex: &Exchange) -> Seen<'_> {
    Seen { ex, token: Some("secret-token-123"), published: None, tenancy: None }
}

fn clauses(ex: &Exchange) -> Vec<&'static str> {
    let mut out: Vec<&str> = judge(&seen(ex)).1.into_iter().map(|b| b.clause).collect();
    out.dedup();
    out
}

#[test]
fn every_rule_has_a_unique_name_a_known_clause_and_no_level_above_its_clauses() {
    let mut names: Vec<&str> = RULES.iter().map(|r| r.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), RULES.len(), "two rules share a name");
    for rule in RULES {
        let clause = chataigne_contract::clauses::CLAUSES
            .iter()
            .find(|c| c.id == rule.clause)
            .unwrap_or_else(|| panic!("{}: unknown clause {}", rule.name, rule.clause));
        // A rule of an ext clause cannot be required at the seed level.
        assert!(
            !clause.ext || rule.level == RuleLevel::Ext,
            "{} is seed in ext clause {}",
            rule.name,
            rule.clause
        );
        // An ext rule of a seed clause names the reference choice it checks (the fuzzer counts
        // its findings at the full level only); no other rule does.
        let needs_choice = !clause.ext && rule.level == RuleLevel::Ext;
        assert_eq!(rule.choice.is_some(), needs_choice, "{}: choice {:?}", rule.name, rule.choice);
        if let Some(choice) = rule.choice {
            assert!(
                chataigne_contract::clauses::CHOICES.iter().any(|(name, _)| *name == choice),
                "{}: unknown choice {choice}",
                rule.name
            );
        }
    }
}

#[test]
fn an_answer_is_json_or_an_event_stream_with_the_requests_id() {
    let ok = answered(
        json!({ "code": "MCP_CURSOR_INVALID", "category": "validation", "retryable": false,
        "message": "no" }),
        json!({}),
    );
    assert_eq!(clauses(&ok), Vec::<&str>::new());
    let mut as_text = ok.clone();
    as_text.response_mut_for_test().content_type = "text/plain".into();
    assert_eq!(clauses(&as_text), ["PROTO-1"]);
    for id in [json!(2), json!("1"), Value::Null] {
        let mut other = ok.clone();
        other.response_mut_for_test().message.as_mut().unwrap()["id"] = id.clone();
        assert_eq!(clauses(&other), ["PROTO-2"], "id {id}");
    }
    // A refusal with an HTTP error status may carry a null id; a raw body is not judged here.
    let mut refused = ok.clone();
    refused.response_mut_for_test().status = Some(400);
    refused.response_mut_for_test().message.as_mut().unwrap()["id"] = Value::Null;
    assert!(!judge(&seen(&refused)).0.contains(&("PROTO-2", RuleLevel::Seed)));
    let mut raw = as_text;
    raw.method = "raw".into();
    assert_eq!(clauses(&raw), Vec::<&str>::new());
}

#[test]
fn a_code_of_the_servers_own_is_data_not_a_failure() {
    let error = json!({ "code": "INVALID_ARGUMENT", "category": "validation", "retryable": false,
        "message": "The arguments were rejected by the input schema" });
    let ex = answered(error, json!({ "restaurant_id": "rst_central", "status": "rejected", "limit": 0 }));
    assert_eq!(clauses(&ex), Vec::<&str>::new());
    assert_eq!(code_of_its_own(&ex), Some(("INVALID_ARGUMENT".into(), Category::Validation, false)));
}

#[test]
fn a_table_code_off_its_row_or_an_unknown_category_is_env_5() {
    let error = json!({ "code": "MCP_CURSOR_INVALID", "category": "conflict", "retryable": false,
        "message": "no" });
    assert_eq!(clauses(&answered(error, json!({}))), ["ENV-5"]);
    let error = json!({ "code": "INVALID_ARGUMENT", "category": "bad_input", "retryable": false,
        "message": "no" });
    let ex = answered(error, json!({}));
    assert_eq!(clauses(&ex), ["ENV-5"]);
    assert_eq!(code_of_its_own(&ex), None);
}

#[test]
fn a_code_this_project_added_is_held_to_its_row_at_the_full_level_only() {
    let error = json!({ "code": "MCP_RATE_LIMITED", "category": "conflict", "retryable": true,
        "message": "slow down" });
    let broken = judge(&seen(&answered(error, json!({})))).1;
    assert_eq!(broken.len(), 1);
    assert_eq!((broken[0].clause, broken[0].level), ("ENV-5", RuleLevel::Ext));
}

#[test]
fn an_error_without_its_members_is_env_4() {
    let ex = answered(json!({ "code": "MCP_CURSOR_INVALID", "message": "no" }), json!({}));
    assert_eq!(clauses(&ex), ["ENV-4"]);
}

#[test]
fn an_echo_is_what_the_caller_sent() {
    let error = json!({ "code": "MCP_RESOURCE_FORBIDDEN", "category": "authorization",
        "retryable": false, "message": "Restaurant rst_central is not yours" });
    assert_eq!(clauses(&answered(error, json!({ "restaurant_id": "rst_central" }))), ["ENV-6"]);
    let error = json!({ "code": "MCP_RESOURCE_FORBIDDEN", "category": "authorization",
        "retryable": false, "message": "token secret-token-123 refused" });
    assert_eq!(clauses(&answered(error, json!({}))), ["ENV-6"]);
}

/// Issue 37: twenty ext findings (an echo on every call) once stopped the checking, and an ENV-5
/// fault on the 21st exchange passed. Every exchange is judged; only what is kept is capped.
#[test]
fn ext_findings_never_stop_the_checking_of_later_exchanges() {
    let echo = json!({ "code": "MCP_RESOURCE_FORBIDDEN", "category": "authorization",
        "retryable": false, "message": "Restaurant rst_central is not yours" });
    let mut tally = Tally::default();
    for i in 0..100 {
        tally.judge(&seen(&answered(echo.clone(), json!({ "restaurant_id": "rst_central" }))), Some(i));
    }
    let mislabelled = json!({ "code": "MCP_RESOURCE_FORBIDDEN", "category": "validation",
        "retryable": false, "message": "no" });
    tally.judge(&seen(&answered(mislabelled, json!({}))), Some(100));
    let env5 = tally.get("ENV-5").expect("ENV-5 judged");
    assert_eq!(env5.judged_seed, 101, "every error judged once, whatever number of rules");
    assert_eq!(env5.broken_seed, 1);
    let env6 = tally.get("ENV-6").unwrap();
    assert_eq!((env6.judged_ext, env6.broken_ext), (101, 100));
    assert_eq!(env6.kept.len(), KEPT_PER_CLAUSE);
}

#[test]
fn evidence_counts_per_level_and_merges() {
    let ok = answered(
        json!({ "code": "MCP_CURSOR_INVALID", "category": "validation", "retryable": false,
        "message": "no" }),
        json!({}),
    );
    let mut a = Tally::default();
    a.judge(&seen(&ok), None);
    let mut run = Tally::default();
    run.merge(&a);
    run.merge(&a);
    run.note("ENV-2", RuleLevel::Ext, Some("request_id reused".into()));
    let env2 = run.get("ENV-2").unwrap();
    assert_eq!(env2.judged(false), 0, "ENV-2's rules are ext");
    assert_eq!(env2.judged(true), 2 + 1, "an exchange counts once per clause and level");
    assert_eq!(env2.broken(true), 1);
    assert_eq!(run.get("PROTO-2").unwrap().judged(false), 2);
}

#[test]
fn a_ping_is_answered_with_an_empty_result_whoever_sent_it() {
    let check = |method: &str, body: &str, result: Value, expected: &[&str]| {
        let mut ex =
            Exchange::answered_for_test(Some(json!({ "jsonrpc": "2.0", "id": 1, "result": result })));
        ex.response_mut_for_test().content_type = "application/json".into();
        ex.method = method.into();
        ex.request_body = body.into();
        assert_eq!(clauses(&ex), expected, "{method} {body}");
    };
    check("ping", "", json!({}), &[]);
    check("ping", "", json!({ "_meta": {} }), &[]);
    check("ping", "", json!({ "pong": true }), &["PROTO-1"]);
    check("ping", "", json!([]), &["PROTO-1"]);
    check("raw", r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, json!({ "pong": true }), &["PROTO-1"]);
    check("raw", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, json!({ "tools": [] }), &[]);
    check("tools/list", "", json!({ "tools": [] }), &[]);
}

#[test]
fn a_code_on_the_wrong_row_breaks_the_clause_that_states_the_row_too() {
    let error = json!({ "code": "MCP_OPERATION_IN_PROGRESS", "category": "conflict", "retryable": false,
                        "message": "running", "retry_after_ms": 100 });
    let found = clauses(&answered(error, json!({})));
    assert!(found.contains(&"ENV-5") && found.contains(&"IDEM-4"), "{found:?}");
    let right = json!({ "code": "MCP_OPERATION_IN_PROGRESS", "category": "conflict", "retryable": true,
                        "message": "running", "retry_after_ms": 100 });
    assert!(!clauses(&answered(right, json!({}))).contains(&"IDEM-4"));
}
