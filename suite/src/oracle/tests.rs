//! The comparison: freedoms applied, differences found and shown with both answers.

use serde_json::{Value, json};

use super::{IdPairs, Shadow, compare, redacted};

fn check(target: Value, reference: Value, fresh: bool, differences: usize) {
    let got = compare(&target, &reference, &mut IdPairs::default(), fresh);
    assert_eq!(got.len(), differences, "{target} vs {reference}: {got:?}");
}

#[test]
fn freedoms_are_not_differences() {
    // Timestamps, request_ids and texts are free.
    check(
        json!({"order": {"id": "ord_1", "status": "accepted", "updated_at": "2026-01-01T00:00:00Z"}}),
        json!({"order": {"id": "ord_1", "status": "accepted", "updated_at": "2027-05-05T10:00:00Z"}}),
        false,
        0,
    );
    check(
        json!({"message": {"text": "a", "request_id": "req_1"}}),
        json!({"message": {"text": "b", "request_id": "req_2"}}),
        false,
        0,
    );
    // Order among ties: items matched by ID.
    check(
        json!({"orders": [{"id": "ord_2", "status": "ready"}, {"id": "ord_1", "status": "received"}]}),
        json!({"orders": [{"id": "ord_1", "status": "received"}, {"id": "ord_2", "status": "ready"}]}),
        false,
        0,
    );
    // Members the target adds are its own; members it lacks are ENV-7's.
    check(
        json!({"order": {"id": "ord_1", "extra": 1}}),
        json!({"order": {"id": "ord_1", "status": "x"}}),
        false,
        0,
    );
    // A generated ID pairs with the reference's when the reference created it.
    check(json!({"instruction": {"id": "ins_target"}}), json!({"instruction": {"id": "ins_ref"}}), true, 0);
}

#[test]
fn differences_are_found() {
    // A stale status.
    check(
        json!({"order": {"id": "ord_1", "status": "received"}}),
        json!({"order": {"id": "ord_1", "status": "accepted"}}),
        false,
        1,
    );
    // An ID the reference did not create in this answer.
    check(json!({"instruction": {"id": "ins_target"}}), json!({"instruction": {"id": "ins_ref"}}), false, 1);
    // Items without IDs compared in place.
    check(json!({"items": [1, 2]}), json!({"items": [1, 2, 3]}), false, 1);
}

#[test]
fn a_replay_must_keep_the_created_ids() {
    let mut ids = IdPairs::default();
    let first =
        compare(&json!({"message": {"id": "msg_t1"}}), &json!({"message": {"id": "msg_r1"}}), &mut ids, true);
    assert!(first.is_empty(), "{first:?}");
    // The reference replays msg_r1: the target's replay must answer msg_t1 again.
    let same = compare(
        &json!({"message": {"id": "msg_t1"}}),
        &json!({"message": {"id": "msg_r1"}}),
        &mut ids,
        false,
    );
    assert!(same.is_empty(), "{same:?}");
    let new = compare(
        &json!({"message": {"id": "msg_t2"}}),
        &json!({"message": {"id": "msg_r1"}}),
        &mut ids,
        false,
    );
    assert_eq!(new.len(), 1, "{new:?}");
    assert!(new[0].contains("msg_t1") && new[0].contains("msg_t2"), "{new:?}");
    // Arguments naming a created record reach the reference with its own ID.
    assert_eq!(ids.to_reference(&json!({"conversation_id": "msg_t1"})), json!({"conversation_id": "msg_r1"}));
}

#[test]
fn a_finding_shows_both_answers_and_the_calls_but_no_text() {
    let mut shadow = Shadow::default();
    let args = json!({"restaurant_id": "rst_1", "order_id": "ord_1", "status": "accepted", "expected_status": "received"});
    let ok = super::Answer::Success { data: json!({}), replayed: false };
    shadow.log("owner", "update_order_status", &args, &ok, Some("req_abc"));
    let t = json!({"order": {"id": "ord_1", "status": "received", "notes": "kitchen note"}});
    let r = json!({"order": {"id": "ord_1", "status": "accepted", "text": "secret words"}});
    let note = shadow.difference("PRE-2", "order ord_1", &["data.order.status".to_owned()], &t, &r);
    let detail = note.difference.expect("a difference");
    assert_eq!(note.clause, "PRE-2");
    assert!(detail.contains("\"received\"") && detail.contains("\"accepted\""), "{detail}");
    assert!(detail.contains("1. owner update_order_status(") && detail.contains("req_abc"), "{detail}");
    assert!(!detail.contains("secret words") && detail.contains("kitchen note"), "{detail}");
    assert_eq!(redacted(&json!({"text": "hello"})), json!({"text": "(5 bytes of text, not compared)"}));
}
