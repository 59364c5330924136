//! The differential oracle (`chataigne_conformance::oracle`) against faulty servers: a stale read
//! after a write, a write that changes what it should not (both differences from the reference,
//! filed under PRE-2), and a server whose data is not the published dataset (the oracle says
//! why it did not run, and nothing it would have compared passes on its account).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use chataigne_conformance::cli::Outcome;
use chataigne_conformance::report::{ClauseResult, Status};
use serde_json::{Value, json};

use crate::proxy::{self, Fault, Req, Resp};

fn clause<'a>(outcome: &'a Outcome, id: &str) -> &'a ClauseResult {
    let report = outcome.report.as_ref().unwrap_or_else(|| panic!("no report: {outcome:?}"));
    report.clauses.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no clause {id}"))
}

/// Whether the clause failed on a difference the oracle found (the finding shows both answers).
#[track_caller]
fn failed_by_oracle(outcome: &Outcome, id: &str) {
    let c = clause(outcome, id);
    assert_eq!(c.status, Status::Failed, "{id}: {c:#?}");
    let found = c.findings.iter().find(|f| f.contains("differential oracle")).unwrap_or_else(|| {
        panic!("{id} failed, but not on a difference from the reference: {:#?}", c.findings)
    });
    assert!(
        found.contains("target:") && found.contains("reference:") && found.contains("calls that led here"),
        "{found}"
    );
}

#[test]
fn a_stale_read_after_write_differs_from_the_reference() {
    let server = proxy::start(&[mock_server::Defect::StaleReadAfterWrite], Fault::default());
    let outcome = server.run(&["--tags", "@PRE-2", "--level", "seed"]);
    failed_by_oracle(&outcome, "PRE-2");
}

/// A fault proxy's answer rewrite: after an order was moved, every get_order of it shows a
/// total 100 cents higher (a write that changes what it should not). No step or property reads
/// the total, every envelope and schema stays valid; only the comparison with the reference
/// sees it. `moved` collects the orders moved.
fn total_changed_after_a_move(moved: Arc<Mutex<HashSet<String>>>) -> Fault {
    let seen = moved;
    Fault {
        response: Some(Box::new(move |req: &Req, resp: &mut Resp| {
            let arg = |k: &str| req.json.pointer(&format!("/params/arguments/{k}")).and_then(Value::as_str);
            let mut moved = seen.lock().unwrap_or_else(|e| e.into_inner());
            match req.tool() {
                "update_order_status" => {
                    if let Some(order) = arg("order_id") {
                        moved.insert(order.to_owned());
                    }
                }
                "get_order" if arg("order_id").is_some_and(|o| moved.contains(o)) => resp.edit_json(|v| {
                    if let Some(total) = v.pointer_mut("/result/structuredContent/data/order/total_cents") {
                        *total = json!(total.as_u64().unwrap_or(0) + 100);
                    }
                }),
                _ => {}
            }
        })),
        ..Fault::default()
    }
}

#[test]
fn a_write_that_changes_another_field_differs_from_the_reference() {
    let moved: Arc<Mutex<HashSet<String>>> = Arc::default();
    let server = proxy::start(&[], total_changed_after_a_move(moved.clone()));
    let outcome = server.run(&["--tags", "@PRE-2", "--level", "seed"]);
    failed_by_oracle(&outcome, "PRE-2");
    assert!(!moved.lock().unwrap_or_else(|e| e.into_inner()).is_empty(), "no order was moved");
}

/// The fuzzer's state-changing sequences use the same comparison: the finding is PRE-2's, with
/// the shrunk sequence of calls before it.
#[test]
fn fuzz_finds_a_write_that_changes_another_field() {
    let server = proxy::start(&[], total_changed_after_a_move(Arc::default()));
    let report = server.profile.with_file_name("fuzz.json");
    let args = [
        "chataigne-conformance",
        "fuzz",
        "--profile",
        server.profile.to_str().unwrap(),
        "--seed",
        "7",
        "--budget",
        "1000calls",
        "--report-json",
        report.to_str().unwrap(),
    ];
    let outcome = chataigne_conformance::cli::execute_args(args, std::io::sink());
    assert_eq!(outcome.code, 1, "{:?}", outcome.error);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let findings = json["findings"].as_array().cloned().unwrap_or_default();
    let found = findings
        .iter()
        .find(|f| f["clause"] == "PRE-2" && f.to_string().contains("differential oracle"))
        .unwrap_or_else(|| panic!("no PRE-2 difference from the reference: {json:#}"));
    assert!(found.to_string().contains("update_order_status"), "the calls before it: {found:#}");
}

/// A server whose restaurants are not the published dataset's: the oracle is not run, the
/// report says why once, and the clauses keep only their own evidence.
#[test]
fn a_server_with_other_data_is_told_the_oracle_did_not_run() {
    let fault = Fault {
        response: Some(Box::new(|req: &Req, resp: &mut Resp| {
            if req.tool() == "get_restaurant" {
                resp.edit_json(|v| {
                    if let Some(name) = v.pointer_mut("/result/structuredContent/data/restaurant/name") {
                        *name = json!("Another restaurant");
                    }
                });
            }
        })),
        ..Fault::default()
    };
    let server = proxy::start(&[mock_server::Defect::StaleReadAfterWrite], fault);
    let outcome = server.run(&["--tags", "@PRE-2", "--level", "seed"]);
    let report = outcome.report.as_ref().expect("a report");
    let why = report.oracle_not_run.as_deref().expect("the oracle is said not to have run");
    assert!(why.contains("not the published dataset"), "{why}");
    let markdown = chataigne_conformance::report::markdown(report);
    assert_eq!(markdown.matches("Differential oracle skipped").count(), 1, "{markdown}");
    let html = chataigne_conformance::report::html(report);
    assert_eq!(html.matches("Differential oracle skipped").count(), 1);
    // The stale read is still caught by the step that reads the order back, not by the oracle.
    let c = clause(&outcome, "PRE-2");
    assert!(c.findings.iter().all(|f| !f.contains("differential oracle")), "{:#?}", c.findings);
}

/// A created record listed with another author than the one who created it: the create's answer
/// is right, only the later list is wrong; filed under IDEM-2 with both records.
#[test]
fn a_created_record_listed_otherwise_differs_from_the_reference() {
    let created: Arc<Mutex<HashSet<String>>> = Arc::default();
    let seen = created.clone();
    let fault = Fault {
        response: Some(Box::new(move |req: &Req, resp: &mut Resp| {
            let mut created = seen.lock().unwrap_or_else(|e| e.into_inner());
            match req.tool() {
                "create_instruction" => resp.edit_json(|v| {
                    let id =
                        v.pointer("/result/structuredContent/data/instruction/id").and_then(Value::as_str);
                    if let Some(id) = id {
                        created.insert(id.to_owned());
                    }
                }),
                "list_instructions" => resp.edit_json(|v| {
                    let items = v
                        .pointer_mut("/result/structuredContent/data/instructions")
                        .and_then(Value::as_array_mut);
                    for item in items.into_iter().flatten() {
                        if item["id"].as_str().is_some_and(|id| created.contains(id)) {
                            item["created_by"] = json!("usr_someone_else");
                        }
                    }
                }),
                _ => {}
            }
        })),
        ..Fault::default()
    };
    let server = proxy::start(&[], fault);
    let outcome = server.run(&["--tags", "@IDEM-2", "--level", "seed"]);
    failed_by_oracle(&outcome, "IDEM-2");
    assert!(!created.lock().unwrap_or_else(|e| e.into_inner()).is_empty(), "nothing was created");
}
