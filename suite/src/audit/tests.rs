use super::{Kind, Note, Record, Snapshot, compare, from_dataset};

fn snap(records: &[(&str, Kind, &str)]) -> Snapshot {
    Snapshot {
        records: records
            .iter()
            .map(|(id, kind, state)| ((*id).to_owned(), Record { kind: *kind, state: (*state).to_owned() }))
            .collect(),
    }
}

fn broken(notes: &[Note]) -> Vec<(&'static str, String)> {
    notes.iter().filter_map(|n| n.difference.clone().map(|d| (n.clause, d))).collect()
}

#[test]
fn an_untouched_record_unchanged_is_evidence_and_nothing_more() {
    let was = snap(&[("ord_1", Kind::Order, "received"), ("cnv_1", Kind::Conversation, "open, 3 messages")]);
    let notes = compare(&was, &was.clone(), |_| false);
    assert_eq!(notes.len(), 2);
    assert!(broken(&notes).is_empty());
}

#[test]
fn an_order_no_write_named_that_moved_breaks_pre1_and_a_touched_one_is_left_out() {
    let was = snap(&[("ord_1", Kind::Order, "received"), ("ord_2", Kind::Order, "received")]);
    let now = snap(&[("ord_1", Kind::Order, "accepted"), ("ord_2", Kind::Order, "accepted")]);
    let notes = compare(&was, &now, |id| id == "ord_2");
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
    let found = broken(&compare(&was, &now, |_| false));
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.iter().all(|(clause, _)| *clause == "ABS-2"), "{found:?}");
}

#[test]
fn a_restaurant_paused_by_no_write_breaks_pre1() {
    let was = snap(&[("rst_1", Kind::Restaurant, "open")]);
    let now = snap(&[("rst_1", Kind::Restaurant, "paused")]);
    assert_eq!(broken(&compare(&was, &now, |_| false))[0].0, "PRE-1");
}

#[test]
fn records_created_during_the_run_are_not_expected() {
    let was = snap(&[("ord_1", Kind::Order, "received")]);
    let now = snap(&[("ord_1", Kind::Order, "received"), ("ord_new", Kind::Order, "received")]);
    assert_eq!(compare(&was, &now, |_| false).len(), 1);
}

#[test]
fn the_dataset_gives_every_record_of_the_owners_organizations_and_no_other() {
    let dataset = crate::context::load_dataset(None).expect("the built-in dataset");
    let home = dataset.landmarks.home_organization.clone();
    let expected = from_dataset(&dataset, std::slice::from_ref(&home));
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
