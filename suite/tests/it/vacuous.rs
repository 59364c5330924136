//! Checks that must not pass on nothing: a server whose answers the suite cannot read, or that
//! answers with nothing, never gets a clause passed (issue 27). Each test runs one scenario on a
//! fake and names the verdict a wrong server used to get.

use chataigne_conformance::cli::Outcome;
use chataigne_conformance::report::{ClauseResult, Status};
use chataigne_contract::ErrorCode;
use chataigne_contract::envelope::{self, ErrorBody};
use serde_json::{Value, json};

use crate::fake::{Fake, Reply, conforming, dataset, request_id, success};

fn clause<'a>(outcome: &'a Outcome, id: &str) -> &'a ClauseResult {
    let report = outcome.report.as_ref().unwrap_or_else(|| panic!("no report: {outcome:?}"));
    report.clauses.iter().find(|c| c.id == id).unwrap()
}

fn refused(code: ErrorCode) -> Reply {
    Reply::Result(json!({
        "content": [{ "type": "text", "text": "Refused." }],
        "structuredContent": envelope::error(&ErrorBody::new(code, request_id())),
        "isError": true,
    }))
}

/// The suite on `fake` with one feature file of `text` only.
fn run_feature(fake: &Fake, text: &str) -> Outcome {
    let dir = std::env::temp_dir().join(format!("chataigne-vacuous-{}-{}", std::process::id(), request_id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("one.feature"), text).unwrap();
    let outcome = fake.run(3000, &["--features", dir.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

const NO_SECOND_INSTRUCTION: &str = r#"Feature: Counting effects
  @IDEM-3
  Scenario: An instruction never created is not there
    Given the persona "owner"
    Then the busy restaurant has exactly 0 instructions "Second CANARY"
"#;

/// IDEM-3's "exactly 0" over a list the suite cannot read is blocked by ENV-7, not a count of 0.
#[test]
fn an_unreadable_list_counts_nothing_it_blocks() {
    for data in [
        json!({ "items": [] }),
        json!({ "instructions": { "total": 0 } }),
        json!({ "instructions": [{ "id": "ins_c1", "body": "Second CANARY" }] }),
    ] {
        let fake = Fake::start();
        let answer = data.clone();
        fake.serve_tools(move |tool, args| match tool {
            "list_instructions" => success(answer.clone()),
            _ => conforming(tool, args),
        });
        let outcome = run_feature(&fake, NO_SECOND_INSTRUCTION);
        let c = clause(&outcome, "IDEM-3");
        assert_eq!(c.status, Status::Blocked, "{data}: {c:?}");
        assert!(c.reason.as_deref().is_some_and(|r| r.contains("blocked by ENV-7")), "{c:?}");
    }
    // The same scenario on a list it can read counts, and passes.
    let fake = Fake::start();
    fake.serve_tools(|tool, args| match tool {
        "list_instructions" => success(json!({ "instructions": [] })),
        _ => conforming(tool, args),
    });
    assert_eq!(clause(&run_feature(&fake, NO_SECOND_INSTRUCTION), "IDEM-3").status, Status::Passed);
}

fn instructions_of(restaurant: &str) -> Vec<Value> {
    let d = dataset();
    d.instructions
        .iter()
        .filter(|i| i.restaurant_id == restaurant)
        .map(|i| serde_json::to_value(i).unwrap())
        .collect()
}

/// AUTH-5's instruction scenario as features/authorization.feature has it, on a fake listing
/// `instructions` for the busy restaurant.
fn sibling_scenario(instructions: Vec<Value>) -> Status {
    let fake = Fake::start();
    fake.serve_tools(move |tool, args| match tool {
        "list_instructions" => success(json!({ "instructions": instructions.clone() })),
        _ => conforming(tool, args),
    });
    let outcome = fake.run(3000, &["--name", "A restaurant's instructions never include a sibling's"]);
    let c = clause(&outcome, "AUTH-5");
    assert_eq!(c.scenarios.len(), 1, "{c:?}");
    c.status
}

#[test]
fn a_restaurants_instructions_are_judged_by_their_owner_and_an_empty_list_proves_nothing() {
    assert_eq!(sibling_scenario(instructions_of("rst_central")), Status::Passed);
    // Nothing listed: no leak seen, and nothing checked either.
    assert_eq!(sibling_scenario(Vec::new()), Status::Failed);
    // The sibling's instruction, labelled with the restaurant asked.
    let mut leaked = instructions_of("rst_central");
    let mut sibling = instructions_of("rst_small").remove(0);
    sibling["restaurant_id"] = json!("rst_central");
    leaked.push(sibling);
    assert_eq!(sibling_scenario(leaked), Status::Failed);
}

/// AUTH-7's "shown no organizations" on a value that is not a list: not zero organizations.
#[test]
fn a_list_that_is_not_an_array_is_not_an_empty_one() {
    let run = |organizations: Value| {
        let fake = Fake::start();
        fake.serve_tools(move |tool, args| match tool {
            "get_restaurant" => refused(ErrorCode::ResourceForbidden),
            "list_organizations" => success(json!({ "organizations": organizations.clone() })),
            "list_restaurants" => success(json!({ "restaurants": [] })),
            _ => conforming(tool, args),
        });
        let outcome =
            fake.run(3000, &["--name", "A revoked membership grants nothing, whatever the token says"]);
        clause(&outcome, "AUTH-7").status
    };
    assert_eq!(run(json!([])), Status::Passed);
    assert_eq!(run(json!({ "count": 0 })), Status::Blocked);
    assert_eq!(run(json!(null)), Status::Blocked);
    assert_eq!(run(json!([{ "id": "org_maison", "name": "Maison" }])), Status::Failed);
}
