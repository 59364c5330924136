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
    let ok = super::Answer::Success { data: json!({}), replayed: false, complete: false };
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

/// The whole flow on the reference, as a rerun meets it: the target holds an earlier run's
/// write (an order the dataset has `received` is `accepted` there). Seeded from what the
/// scenario observed, the move on and the read back agree; a stale read, or the order listed
/// under a status it no longer has, differs, under PRE-2.
#[cfg(feature = "embedded")]
#[test]
fn a_rerun_is_compared_from_the_state_observed_and_a_stale_read_is_found() {
    use super::{Answer, Oracle};
    let dataset = crate::context::load_dataset(None).expect("dataset");
    let busy = dataset.landmarks.busy_restaurant.clone();
    let order = dataset
        .orders
        .iter()
        .find(|o| o.restaurant_id == busy && o.status == "received")
        .expect("a received order")
        .clone();
    let oracle = Oracle::start(&dataset);
    assert!(oracle.is_on(), "{:?}", oracle.not_run);
    let mut as_json = serde_json::to_value(&order).expect("order");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut shadow = Shadow::default();
    let mut after = |shadow: &mut Shadow, tool: &str, args: Value, status: &str| {
        as_json["status"] = json!(status);
        let data = match tool {
            "list_orders" => json!({ "orders": [as_json.clone()] }),
            _ => json!({ "order": as_json.clone() }),
        };
        let answer = Answer::Success { data, replayed: false, complete: false };
        runtime.block_on(oracle.after(shadow, "owner", tool, &args, &answer, Some("req_test")))
    };
    let list = json!({ "restaurant_id": busy, "status": ["accepted"] });
    assert!(
        after(&mut shadow, "list_orders", list.clone(), "accepted").is_empty(),
        "an observation compares nothing"
    );
    let write = json!({ "restaurant_id": busy, "order_id": order.id, "status": "preparing", "expected_status": "accepted" });
    let notes = after(&mut shadow, "update_order_status", write, "preparing");
    assert_eq!(notes, vec![super::Note { clause: "PRE-2", difference: None }], "the write agrees");
    let read = json!({ "restaurant_id": busy, "order_id": order.id });
    let notes = after(&mut shadow, "get_order", read.clone(), "preparing");
    assert_eq!(notes, vec![super::Note { clause: "PRE-2", difference: None }], "the read agrees");
    // A stale read: the status before the write.
    let notes = after(&mut shadow, "get_order", read, "accepted");
    assert_eq!(notes.len(), 1);
    let detail = notes[0].difference.as_deref().expect("a difference");
    assert!(detail.contains("\"accepted\"") && detail.contains("\"preparing\""), "{detail}");
    assert!(detail.contains("list_orders") && detail.contains("update_order_status"), "{detail}");
    // Listed under `accepted` while it is `preparing`, whatever status the item shows.
    let notes = after(&mut shadow, "list_orders", list, "preparing");
    assert!(notes[0].difference.as_deref().is_some_and(|d| d.contains("listed under status")), "{notes:?}");
}

#[test]
fn a_created_restaurants_status_is_free_and_no_other_status_is() {
    use super::without_initial_status;
    let created = |status: &str| json!({"restaurant": {"id": "rst_new", "organization_id": "org_maison", "timezone": "Europe/Paris", "status": status}});
    let (target, reference) = (created("paused"), created("open"));
    check(without_initial_status(&target), without_initial_status(&reference), false, 0);
    // Everywhere else a status is compared: an order's, and a restaurant's outside that path.
    check(target, reference, false, 1);
    let order = |status: &str| json!({"order": {"id": "ord_1", "status": status}});
    check(without_initial_status(&order("accepted")), without_initial_status(&order("received")), false, 1);
}
