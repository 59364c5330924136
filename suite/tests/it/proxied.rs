//! False passes, each shown by a fault proxy in front of the reference server: the suite must
//! fail the clause the fault breaks (issue 37). Each fault passed an earlier version of the suite.

use std::collections::HashMap;
use std::sync::Mutex;

use chataigne_conformance::cli::Outcome;
use chataigne_conformance::report::{ClauseResult, Status};
use chataigne_contract::ErrorCode;
use serde_json::{Value, json};

use crate::proxy::{self, Fault, Req, Resp};

fn clause<'a>(outcome: &'a Outcome, id: &str) -> &'a ClauseResult {
    let report = outcome.report.as_ref().unwrap_or_else(|| panic!("no report: {outcome:?}"));
    report.clauses.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no clause {id}"))
}

#[track_caller]
fn assert_failed(outcome: &Outcome, id: &str) {
    let c = clause(outcome, id);
    assert_eq!(c.status, Status::Failed, "{id} at the seed level: {c:#?}");
    assert_eq!(outcome.code, 1, "exit code: {:?}", outcome.error);
}

/// The error code of a tool error's answer.
fn code_of(v: &Value) -> Option<&str> {
    v.pointer("/result/structuredContent/data/error/code").and_then(Value::as_str)
}

/// Sets a tool error's code (and, unless `keep_category`, the code's own category).
fn set_code(v: &mut Value, code: ErrorCode, keep_category: bool) {
    if let Some(err) = v.pointer_mut("/result/structuredContent/data/error") {
        err["code"] = json!(code.as_str());
        if !keep_category {
            err["category"] = json!(code.category().as_str());
        }
    }
}

/// ENV-5 on one persona's refusals only, while the same server also echoes an id in its
/// refusals (ENV-6, an ext rule): the ext findings once filled a cap shared by every clause, and
/// the mislabelled category was never checked.
#[test]
fn a_mislabelled_category_is_found_whatever_else_the_server_breaks() {
    let fault = Fault {
        response: Some(Box::new(|req: &Req, resp: &mut Resp| {
            // One persona, on the tools the matrix reaches last: after the ext findings of
            // every earlier refusal.
            let late = matches!(
                req.tool(),
                "update_order_status" | "set_restaurant_status" | "send_message" | "create_instruction"
            );
            if !late || !req.header("authorization").is_some_and(|a| a.ends_with("outsider")) {
                return;
            }
            resp.edit_json(|v| {
                if code_of(v) == Some(ErrorCode::ResourceForbidden.as_str())
                    && let Some(err) = v.pointer_mut("/result/structuredContent/data/error")
                {
                    err["category"] = json!("not_found");
                }
            });
        })),
        ..Fault::default()
    };
    let server = proxy::start(&[mock_server::Defect::ForbiddenEchoesId], fault);
    let outcome = server.run(&["--tags", "@AUTH-4 or @ENV-5", "--level", "seed"]);
    assert_failed(&outcome, "ENV-5");
}

/// PROTO-5 past the handshake: a server that checks the Origin on `initialize` only.
#[test]
fn an_origin_checked_on_initialize_only_fails_proto_5() {
    let fault = Fault {
        request: Some(Box::new(|req: &mut Req| {
            if req.method() != "initialize" {
                req.headers.remove("origin");
            }
            None
        })),
        ..Fault::default()
    };
    let outcome = proxy::start(&[], fault).run(&["--tags", "@PROTO-5", "--level", "seed"]);
    assert_failed(&outcome, "PROTO-5");
}

/// LIM-5 on filtered pages: a page cut short under a filter, not marked truncated.
#[test]
fn a_cut_filtered_page_without_the_mark_fails_lim_5() {
    let fault = Fault {
        response: Some(Box::new(|req: &Req, resp: &mut Resp| {
            let args = req.json.pointer("/params/arguments");
            let filtered = args.is_some_and(|a| {
                ["status", "channel", "created_from", "created_to"].iter().any(|k| a.get(k).is_some())
            });
            if req.tool() != "list_orders" || !filtered {
                return;
            }
            resp.edit_json(|v| {
                if let Some(meta) = v.pointer_mut("/result/structuredContent/meta")
                    && meta.get("truncated") == Some(&json!(true))
                {
                    meta["truncated"] = json!(false);
                }
            });
        })),
        ..Fault::default()
    };
    let outcome = proxy::start(&[], fault).run(&["--tags", "@LIM-5", "--level", "seed"]);
    assert_failed(&outcome, "LIM-5");
}

/// PAG-6: a cursor reused with changed arguments must be refused as the cursor's refusal, or
/// as the changed arguments alone are refused; another refusal is neither.
#[test]
fn a_cursor_refusal_with_another_code_fails_pag_6() {
    let alone: Mutex<HashMap<String, String>> = Mutex::new(HashMap::new());
    let key = |args: &Value| {
        let mut a = args.clone();
        if let Some(o) = a.as_object_mut() {
            o.remove("cursor");
        }
        a.to_string()
    };
    let fault = Fault {
        response: Some(Box::new(move |req: &Req, resp: &mut Resp| {
            let Some(args) = req.json.pointer("/params/arguments") else { return };
            let with_cursor = args.get("cursor").is_some();
            resp.edit_json(|v| {
                let Some(code) = code_of(v).map(str::to_owned) else { return };
                let mut seen = alone.lock().unwrap();
                if !with_cursor {
                    seen.insert(key(args), code);
                } else if let Some(own) = seen.get(&key(args)) {
                    // A refusal, but neither the cursor's nor the arguments' own.
                    let other = if own == ErrorCode::ResourceNotFound.as_str() {
                        ErrorCode::ResourceForbidden
                    } else {
                        ErrorCode::ResourceNotFound
                    };
                    set_code(v, other, false);
                }
            });
        })),
        ..Fault::default()
    };
    let outcome = proxy::start(&[], fault).run(&["--tags", "@PAG-6", "--level", "seed"]);
    assert_failed(&outcome, "PAG-6");
}

/// LIM-6 for every persona: a record over 128 KiB answered by a small success.
#[test]
fn a_small_success_for_an_oversized_record_fails_lim_6() {
    let fault = Fault {
        response: Some(Box::new(|req: &Req, resp: &mut Resp| {
            // The owner's refusal stays right (a scenario of its own checks it).
            if !req.header("authorization").is_some_and(|a| a.ends_with("manager") || a.ends_with("staff")) {
                return;
            }
            resp.edit_json(|v| {
                if code_of(v) == Some(ErrorCode::OutputTooLarge.as_str())
                    && let Some(sc) = v.pointer_mut("/result/structuredContent")
                {
                    // The record shortened to its id: a success within 128 KiB.
                    sc["data"] = json!({ "transcript": { "id": "trs_huge" } });
                    sc["meta"]["truncated"] = json!(false);
                    sc["meta"]["replayed"] = json!(false);
                    v["result"]["isError"] = json!(false);
                }
            });
        })),
        ..Fault::default()
    };
    let outcome = proxy::start(&[], fault).run(&["--tags", "@LIM-6", "--level", "seed"]);
    assert_failed(&outcome, "LIM-6");
}

/// "Not applicable" needs proof: a server that says it has no `server/discover` but serves
/// 2026-07-28 calls, and ignores their Mcp-Method header, is held to the header rules.
#[test]
fn a_server_without_discover_that_serves_2026_is_held_to_its_headers() {
    let fault = Fault {
        request: Some(Box::new(|req: &mut Req| {
            if req.method() == "server/discover" {
                let id = req.json["id"].clone();
                return Some(Resp::json(
                    200,
                    &json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "Method not found" } }),
                ));
            }
            // The headers ignored: made to agree with the body before the reference reads them.
            if req.header("mcp-protocol-version") == Some("2026-07-28") {
                let method = req.method().to_owned();
                let name = req.tool().to_owned();
                req.headers.insert("mcp-method", method.parse().expect("header"));
                if !name.is_empty() {
                    req.headers.insert("mcp-name", name.parse().expect("header"));
                }
            }
            None
        })),
        ..Fault::default()
    };
    let outcome = proxy::start(&[], fault).run(&["--tags", "@PROTO-1 and @needs-http", "--level", "seed"]);
    assert_failed(&outcome, "PROTO-1");
}
