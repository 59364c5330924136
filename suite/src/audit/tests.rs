use std::time::{Duration, Instant};

use super::{Expect, Kind, Note, Record, Snapshot, after_writes, compare, from_dataset};
use crate::schedule::{WriteOutcome, WriteSeen};

fn snap(records: &[(&str, Kind, &str)]) -> Snapshot {
    Snapshot {
        records: records
            .iter()
            .map(|(id, kind, state)| {
                ((*id).to_owned(), Record { kind: *kind, state: (*state).to_owned(), ..Record::default() })
            })
            .collect(),
        filtered: Vec::new(),
    }
}

fn untouched<'a>(touched: &'a [&'a str]) -> impl Fn(&str, &Record) -> Expect + 'a {
    move |id, _| if touched.contains(&id) { Expect::Unknown } else { Expect::Unchanged }
}

fn broken(notes: &[Note]) -> Vec<(&'static str, String)> {
    notes.iter().filter_map(|n| n.difference.clone().map(|d| (n.clause, d))).collect()
}

#[test]
fn an_untouched_record_unchanged_is_evidence_and_nothing_more() {
    let was = snap(&[("ord_1", Kind::Order, "received"), ("cnv_1", Kind::Conversation, "open, 3 messages")]);
    let notes = compare(&was, &was.clone(), untouched(&[]));
    assert_eq!(notes.len(), 2);
    assert!(broken(&notes).is_empty());
}

#[test]
fn an_order_no_write_named_that_moved_breaks_pre1_and_a_touched_one_is_left_out() {
    let was = snap(&[("ord_1", Kind::Order, "received"), ("ord_2", Kind::Order, "received")]);
    let now = snap(&[("ord_1", Kind::Order, "accepted"), ("ord_2", Kind::Order, "accepted")]);
    let notes = compare(&was, &now, untouched(&["ord_2"]));
    assert_eq!(notes.len(), 1, "the touched order is not compared");
    let found = broken(&notes);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "PRE-1");
    assert!(found[0].1.contains("ord_1"));
}

#[test]
fn a_cancellation_a_deletion_and_a_broadcast_break_abs2() {
    let was = snap(&[
        ("ord_1", Kind::Order, "received"),
        ("rst_1", Kind::Restaurant, "open"),
        ("cnv_1", Kind::Conversation, "open, 3 messages"),
    ]);
    let now = snap(&[("ord_1", Kind::Order, "cancelled"), ("cnv_1", Kind::Conversation, "open, 4 messages")]);
    let found = broken(&compare(&was, &now, untouched(&[])));
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.iter().all(|(clause, _)| *clause == "ABS-2"), "{found:?}");
}

#[test]
fn a_restaurant_paused_by_no_write_breaks_pre1() {
    let was = snap(&[("rst_1", Kind::Restaurant, "open")]);
    let now = snap(&[("rst_1", Kind::Restaurant, "paused")]);
    assert_eq!(broken(&compare(&was, &now, untouched(&[])))[0].0, "PRE-1");
}

#[test]
fn records_created_during_the_run_are_not_expected() {
    let was = snap(&[("ord_1", Kind::Order, "received")]);
    let now = snap(&[("ord_1", Kind::Order, "received"), ("ord_new", Kind::Order, "received")]);
    assert_eq!(compare(&was, &now, untouched(&[])).len(), 1);
}

#[test]
fn the_dataset_gives_every_record_of_the_owners_organizations_and_no_other() {
    let dataset = crate::context::load_dataset(None).expect("the built-in dataset");
    let home = dataset.landmarks.home_organization.clone();
    let reader = super::Reader {
        persona: "viewer".to_owned(),
        user: "usr_viewer".to_owned(),
        organization: home.clone(),
    };
    let expected = from_dataset(&dataset, &[reader]);
    let restaurants: Vec<&str> =
        dataset.restaurants.iter().filter(|r| r.organization_id == home).map(|r| r.id.as_str()).collect();
    let orders = dataset.orders.iter().filter(|o| restaurants.contains(&o.restaurant_id.as_str())).count();
    let of = |kind| expected.records.values().filter(|r| r.kind == kind).count();
    assert_eq!(of(Kind::Order), orders);
    assert_eq!(of(Kind::Restaurant), restaurants.len());
    assert!(of(Kind::Conversation) > 0 && of(Kind::Instruction) > 0);
    let foreign = &dataset.landmarks.foreign_order;
    assert!(!expected.records.contains_key(foreign), "another tenant's order is not this organization's");
    let long = &dataset.landmarks.long_conversation;
    let count = dataset.messages.iter().filter(|m| &m.conversation_id == long).count();
    assert!(expected.records[long].state.ends_with(&format!("{count} messages")));
}

/// A write of `ord_1` sent `at` ms after `t0`, answered 10 ms later.
fn write(t0: Instant, at: u64, target: &str, outcome: WriteOutcome) -> WriteSeen {
    let sent = t0 + Duration::from_millis(at);
    WriteSeen {
        id: "ord_1".to_owned(),
        target: Some(target.to_owned()),
        sent,
        answered: sent + Duration::from_millis(10),
        outcome,
    }
}

fn wants(e: &Expect) -> Option<(&str, &'static str)> {
    match e {
        Expect::State { state, clause, .. } => Some((state.as_str(), *clause)),
        _ => None,
    }
}

#[test]
fn the_last_acknowledged_write_is_what_reads_must_show() {
    let t0 = Instant::now();
    let refused = WriteOutcome::Refused { conflict: true };
    let writes = [
        write(t0, 0, "accepted", WriteOutcome::Done),
        write(t0, 20, "ready", refused),
        write(t0, 40, "preparing", WriteOutcome::Done),
    ];
    assert_eq!(wants(&after_writes(&writes, "ord_1", None, "received")), Some(("preparing", "PRE-2")));
}

#[test]
fn a_record_only_refused_must_be_as_it_was_under_the_refusals_clause() {
    let t0 = Instant::now();
    let writes = [
        write(t0, 0, "accepted", WriteOutcome::Refused { conflict: false }),
        write(t0, 20, "ready", WriteOutcome::Refused { conflict: true }),
    ];
    let expect = after_writes(&writes, "ord_1", None, "received");
    assert_eq!(wants(&expect), Some(("received", "PRE-1")));
    let was = snap(&[("ord_1", Kind::Order, "received")]);
    let found_in = |state: &str| {
        let now = snap(&[("ord_1", Kind::Order, state)]);
        let notes = compare(&was, &now, |_, _| expect.clone());
        broken(&notes).first().map(|(c, _)| *c)
    };
    assert_eq!(found_in("received"), None);
    assert_eq!(found_in("accepted"), Some("AUTH-8"), "the scope-refused write took effect");
    assert_eq!(found_in("ready"), Some("PRE-2"), "the precondition-refused write took effect");
    assert_eq!(found_in("completed"), Some("PRE-1"), "no write asked for it");
}

#[test]
fn nothing_is_expected_of_a_record_whose_writes_did_not_say_or_overlapped() {
    let t0 = Instant::now();
    let unknown =
        [write(t0, 0, "accepted", WriteOutcome::Done), write(t0, 20, "ready", WriteOutcome::Unknown)];
    assert_eq!(after_writes(&unknown, "ord_1", None, "received"), Expect::Unknown);
    let racing = [write(t0, 0, "accepted", WriteOutcome::Done), write(t0, 5, "accepted", WriteOutcome::Done)];
    assert_eq!(after_writes(&racing, "ord_1", None, "received"), Expect::Unknown);
    let other_case = [write(t0, 0, "accepted", WriteOutcome::Done)];
    assert_eq!(after_writes(&other_case, "ORD_1", None, "received"), Expect::Unknown);
}

#[test]
fn writes_before_the_last_reset_are_undone_by_it() {
    let t0 = Instant::now();
    let writes = [write(t0, 0, "accepted", WriteOutcome::Done)];
    let reset = Some(t0 + Duration::from_millis(100));
    assert_eq!(after_writes(&writes, "ord_1", reset, "received"), Expect::Unchanged);
    let spanning = Some(t0 + Duration::from_millis(5));
    assert_eq!(after_writes(&writes, "ord_1", spanning, "received"), Expect::Unknown);
}

#[test]
fn a_record_gone_after_a_write_is_abs2() {
    let was = snap(&[("ord_1", Kind::Order, "received")]);
    let now = snap(&[]);
    let expect = |_: &str, _: &Record| Expect::State {
        state: "accepted".to_owned(),
        clause: "PRE-2",
        why: "its last write, acknowledged, set \"accepted\"".to_owned(),
        refused_into: Vec::new(),
    };
    assert_eq!(broken(&compare(&was, &now, expect))[0].0, "ABS-2");
}

fn order(id: &str, status: &str, channel: &str) -> (String, Record) {
    let facets = vec![("status".to_owned(), status.to_owned()), ("channel".to_owned(), channel.to_owned())];
    (
        id.to_owned(),
        Record { kind: Kind::Order, state: status.to_owned(), within: "rst_1".to_owned(), facets },
    )
}

fn filtered(member: &'static str, value: &str, ids: &[&str]) -> super::Filtered {
    super::Filtered {
        tool: "list_orders",
        kind: Kind::Order,
        within: "rst_1".to_owned(),
        member,
        value: value.to_owned(),
        args: serde_json::json!({ "restaurant_id": "rst_1", member: [value] }),
        ids: ids.iter().map(|s| (*s).to_owned()).collect(),
    }
}

#[test]
fn a_filtered_walk_lists_exactly_what_the_whole_walk_shows_with_that_value() {
    let records = [
        order("ord_1", "received", "web"),
        order("ord_2", "accepted", "web"),
        order("ord_3", "received", "app"),
    ];
    let now =
        |filtered: Vec<super::Filtered>| Snapshot { records: records.iter().cloned().collect(), filtered };
    let right = now(vec![
        filtered("status", "received", &["ord_1", "ord_3"]),
        filtered("channel", "web", &["ord_2", "ord_1"]),
    ]);
    let notes = super::filter_notes(&right, |_| false);
    assert_eq!(notes.len(), 2, "one note per filtered walk");
    assert!(broken(&notes).is_empty());

    let lagging = now(vec![filtered("status", "received", &["ord_1", "ord_2", "ord_3"])]);
    assert_eq!(
        broken(&super::filter_notes(&lagging, |id| id == "ord_2"))[0].0,
        "PRE-2",
        "a written order misplaced"
    );
    assert_eq!(broken(&super::filter_notes(&lagging, |_| false))[0].0, "PAG-4");
    let short = now(vec![filtered("channel", "web", &["ord_1"])]);
    assert_eq!(broken(&super::filter_notes(&short, |_| true))[0].0, "PAG-4", "a channel is never a write's");
    let mut sibling = now(vec![filtered("channel", "web", &["ord_1", "ord_2", "ord_9"])]);
    let (id, mut other) = order("ord_9", "received", "web");
    other.within = "rst_2".to_owned();
    sibling.records.insert(id, other);
    assert_eq!(
        broken(&super::filter_notes(&sibling, |_| false))[0].0,
        "AUTH-5",
        "another restaurant's order"
    );
    let repeated = now(vec![filtered("channel", "app", &["ord_3", "ord_3"])]);
    assert_eq!(broken(&super::filter_notes(&repeated, |_| false)).len(), 1);
}
