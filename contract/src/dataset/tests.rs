//! Tests of the dataset: the committed fixture equals the generator, the §12 properties hold, and
//! every record validates against the tool output schemas.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::generate::{BUSY_ORDERS, FOREIGN_ORDERS, LARGE_ORDERS, LONG_CONVERSATION_MESSAGES, SMALL_ORDERS};
use super::{Dataset, RECEIVED_PER_RUN, RERUNS, generate, synthetic_orders};
use crate::MAX_STRUCTURED_BYTES;
use crate::schema::Validator;
use crate::time::parse_timestamp;
use crate::tools::{
    CONVERSATION_CHANNELS, CONVERSATION_STATUSES, ORDER_CHANNELS, ORDER_STATUSES, SCOPES, ToolName,
};

const FIXTURE: &str = include_str!("../../../fixtures/dataset.json");
const UPDATE_HINT: &str = "run `UPDATE_FIXTURES=1 cargo test -p chataigne-contract dataset`";

fn rendered() -> String {
    serde_json::to_string_pretty(&generate()).unwrap() + "\n"
}

#[test]
fn fixture_matches_the_generator() {
    let expected = rendered();
    if std::env::var_os("UPDATE_FIXTURES").is_some_and(|v| v == "1") {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/dataset.json");
        // Only write on change, so an unchanged fixture keeps its mtime and nothing recompiles.
        if FIXTURE != expected {
            std::fs::write(&path, &expected).unwrap();
        }
        return;
    }
    let parsed =
        Dataset::from_json(FIXTURE).unwrap_or_else(|e| panic!("fixtures/dataset.json: {e}; {UPDATE_HINT}"));
    // `assert!`, not `assert_eq!`: a Debug diff of half a megabyte helps nobody.
    assert!(parsed == generate(), "fixtures/dataset.json differs from generate(); {UPDATE_HINT}");
    assert!(FIXTURE == expected, "fixtures/dataset.json is not in canonical form; {UPDATE_HINT}");
}

#[test]
fn generation_is_deterministic() {
    assert!(generate() == generate());
    assert!(synthetic_orders("rst_bench", 500, 7).eq(synthetic_orders("rst_bench", 500, 7)));
}

/// `^<prefix>_[0-9A-Za-z_]{1,60}$` without a regex dependency.
fn is_id(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).and_then(|rest| rest.strip_prefix('_')).is_some_and(|rest| {
        (1..=60).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

fn is_timestamp(text: &str) -> bool {
    text.len() == 20 && parse_timestamp(text).is_some()
}

#[test]
fn ids_are_well_formed_and_unique() {
    let d = generate();
    let mut ids: Vec<(&str, &str)> = Vec::new();
    ids.extend(d.organizations.iter().map(|x| (x.id.as_str(), "org")));
    ids.extend(d.restaurants.iter().map(|x| (x.id.as_str(), "rst")));
    ids.extend(d.users.iter().map(|x| (x.id.as_str(), "usr")));
    ids.extend(d.clients.iter().map(|x| (x.id.as_str(), "cli")));
    ids.extend(d.orders.iter().map(|x| (x.id.as_str(), "ord")));
    ids.extend(d.conversations.iter().map(|x| (x.id.as_str(), "cnv")));
    ids.extend(d.messages.iter().map(|x| (x.id.as_str(), "msg")));
    ids.extend(d.transcripts.iter().map(|x| (x.id.as_str(), "trs")));
    ids.extend(d.instructions.iter().map(|x| (x.id.as_str(), "ins")));
    let mut seen = BTreeSet::new();
    for (id, prefix) in ids {
        assert!(is_id(id, prefix), "{id} is not a {prefix}_ id");
        assert!(seen.insert(id), "{id} appears twice");
    }
    let personas: BTreeSet<&str> = d.personas.iter().map(|p| p.persona.as_str()).collect();
    assert_eq!(personas.len(), d.personas.len());
}

#[test]
fn timestamps_are_fixed_width_utc() {
    let d = generate();
    let mut all: Vec<&str> = Vec::new();
    all.extend(d.organizations.iter().map(|x| x.created_at.as_str()));
    all.extend(d.restaurants.iter().map(|x| x.created_at.as_str()));
    all.extend(d.orders.iter().flat_map(|x| [x.created_at.as_str(), x.updated_at.as_str()]));
    all.extend(d.conversations.iter().map(|x| x.created_at.as_str()));
    all.extend(d.messages.iter().map(|x| x.sent_at.as_str()));
    all.extend(d.transcripts.iter().map(|x| x.call_started_at.as_str()));
    all.extend(d.instructions.iter().map(|x| x.created_at.as_str()));
    for t in all {
        assert!(is_timestamp(t), "{t}");
    }
}

#[test]
fn references_resolve() {
    let d = generate();
    let orgs: BTreeSet<&str> = d.organizations.iter().map(|o| o.id.as_str()).collect();
    let restaurants: BTreeMap<&str, &str> =
        d.restaurants.iter().map(|r| (r.id.as_str(), r.organization_id.as_str())).collect();
    let users: BTreeSet<&str> = d.users.iter().map(|u| u.id.as_str()).collect();
    let clients: BTreeSet<&str> = d.clients.iter().map(|c| c.id.as_str()).collect();
    let conversations: BTreeSet<&str> = d.conversations.iter().map(|c| c.id.as_str()).collect();

    for r in &d.restaurants {
        assert!(orgs.contains(r.organization_id.as_str()), "{}", r.id);
        assert!(["open", "paused"].contains(&r.status.as_str()), "{}", r.id);
    }
    for m in &d.memberships {
        assert!(users.contains(m.user_id.as_str()) && orgs.contains(m.organization_id.as_str()));
        for rid in m.restaurant_ids.iter().flatten() {
            assert_eq!(restaurants.get(rid.as_str()), Some(&m.organization_id.as_str()), "{rid}");
        }
    }
    for p in &d.personas {
        assert!(users.contains(p.user_id.as_str()), "{}", p.persona);
        assert!(clients.contains(p.client_id.as_str()), "{}", p.persona);
        assert!(p.scopes.iter().all(|s| SCOPES.contains(&s.as_str())), "{}", p.persona);
        assert!(!p.description.is_empty() && !p.description.contains('\n'), "{}", p.persona);
    }
    let owners: Vec<&str> = d.orders.iter().map(|o| o.restaurant_id.as_str()).collect();
    let owners = owners
        .into_iter()
        .chain(d.conversations.iter().map(|c| c.restaurant_id.as_str()))
        .chain(d.transcripts.iter().map(|t| t.restaurant_id.as_str()))
        .chain(d.instructions.iter().map(|i| i.restaurant_id.as_str()));
    for rid in owners {
        assert!(restaurants.contains_key(rid), "{rid}");
    }
    for m in &d.messages {
        assert!(conversations.contains(m.conversation_id.as_str()), "{}", m.id);
    }
    // An instruction's author is an active member of the restaurant's organization.
    for i in &d.instructions {
        let org = restaurants[i.restaurant_id.as_str()];
        assert!(
            d.memberships.iter().any(|m| m.user_id == i.created_by && m.organization_id == org && !m.revoked),
            "{}",
            i.id
        );
    }
}

#[test]
fn landmarks_point_at_the_right_things() {
    let d = generate();
    let l = &d.landmarks;
    let restaurant = |id: &str| d.restaurants.iter().find(|r| r.id == id).unwrap();
    assert_eq!(restaurant(&l.busy_restaurant).organization_id, l.home_organization);
    assert_eq!(restaurant(&l.small_restaurant).organization_id, l.home_organization);
    assert_eq!(restaurant(&l.large_orders_restaurant).organization_id, l.home_organization);
    assert_eq!(restaurant(&l.foreign_restaurant).organization_id, l.foreign_organization);
    assert_ne!(l.home_organization, l.foreign_organization);

    let transcript = |id: &str| d.transcripts.iter().find(|t| t.id == id).unwrap();
    let small = transcript(&l.small_transcript);
    assert_eq!(small.restaurant_id, l.busy_restaurant);
    assert!(small.text.contains(&l.transcript_phrase));
    assert!(transcript(&l.foreign_transcript).text.contains(&l.transcript_phrase), "a leak must be visible");
    assert_eq!(transcript(&l.foreign_transcript).restaurant_id, l.foreign_restaurant);
    let hits = d
        .transcripts
        .iter()
        .filter(|t| t.restaurant_id == l.busy_restaurant && t.text.contains(&l.transcript_phrase));
    assert!(hits.count() >= 3, "several busy transcripts contain the phrase");

    // fixtures/README.md promises exactly these hits, whatever the search's case sensitivity.
    let gluten: Vec<&str> = d
        .transcripts
        .iter()
        .filter(|t| t.text.to_lowercase().contains("gluten"))
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(gluten, ["trs_c02", "trs_c03", "trs_c06", "trs_c09", "trs_s01", "trs_rival"]);

    let order = d.orders.iter().find(|o| o.id == l.foreign_order).unwrap();
    assert_eq!(order.restaurant_id, l.foreign_restaurant);
    let conversation = d.conversations.iter().find(|c| c.id == l.foreign_conversation).unwrap();
    assert_eq!(conversation.restaurant_id, l.foreign_restaurant);
    // The sibling's records belong to the small restaurant, in the busy one's organization, and
    // its transcript holds the phrase: a search scoped to the organization would show it.
    let sibling = d.conversations.iter().find(|c| c.id == l.sibling_conversation).unwrap();
    assert_eq!(sibling.restaurant_id, l.small_restaurant);
    assert!(d.messages.iter().any(|m| m.conversation_id == l.sibling_conversation));
    assert_eq!(transcript(&l.sibling_transcript).restaurant_id, l.small_restaurant);
    assert!(transcript(&l.sibling_transcript).text.contains(&l.transcript_phrase), "a leak must be visible");
    let instruction = d.instructions.iter().find(|i| i.id == l.sibling_instruction).unwrap();
    assert_eq!(instruction.restaurant_id, l.small_restaurant);
    let long = d.conversations.iter().find(|c| c.id == l.long_conversation).unwrap();
    assert_eq!(long.restaurant_id, l.busy_restaurant);
}

#[test]
fn section_12_counts_and_sizes() {
    let d = generate();
    let l = &d.landmarks;
    let count = |rid: &str| d.orders_of(rid).count();
    assert_eq!(count(&l.busy_restaurant), BUSY_ORDERS);
    assert_eq!(count(&l.small_restaurant), SMALL_ORDERS);
    assert_eq!(count(&l.large_orders_restaurant), LARGE_ORDERS);
    assert_eq!(count(&l.foreign_restaurant), FOREIGN_ORDERS);
    assert_eq!(d.orders.len(), BUSY_ORDERS + SMALL_ORDERS + LARGE_ORDERS + FOREIGN_ORDERS);
    assert_eq!(d.organizations.len(), 2);

    // Every status and channel in the busy restaurant, each more than once so filters have pages.
    for status in ORDER_STATUSES {
        let n = d.orders_of(&l.busy_restaurant).filter(|o| o.status == status).count();
        assert!(n >= 2, "{status}: {n}");
    }
    for channel in ORDER_CHANNELS {
        let n = d.orders_of(&l.busy_restaurant).filter(|o| o.channel == channel).count();
        assert!(n >= 2, "{channel}: {n}");
    }

    // Groups of 2 and 3 orders share a created_at (the `id desc` tie-break).
    let mut by_time: BTreeMap<&str, usize> = BTreeMap::new();
    for o in d.orders_of(&l.busy_restaurant) {
        *by_time.entry(o.created_at.as_str()).or_default() += 1;
    }
    assert!(by_time.values().any(|&n| n == 2) && by_time.values().any(|&n| n == 3));
    assert!(by_time.values().all(|&n| n <= 3));

    // The large restaurant's 50 orders make a page over 128 KiB; one order is far below.
    let large: Vec<_> = d.orders_of(&l.large_orders_restaurant).collect();
    assert!(serde_json::to_vec(&large).unwrap().len() > MAX_STRUCTURED_BYTES);
    for o in &large {
        assert!(serde_json::to_vec(o).unwrap().len() < 16 * 1024, "{}", o.id);
    }
    let huge = d.transcripts.iter().find(|t| t.id == l.huge_transcript).unwrap();
    assert!(huge.text.len() > MAX_STRUCTURED_BYTES);
    assert!(huge.text.len() > 140 * 1024);
    assert!(!huge.text.contains("gluten"), "the huge transcript stays out of the phrase search");

    let long: Vec<_> = d.messages.iter().filter(|m| m.conversation_id == l.long_conversation).collect();
    assert_eq!(long.len(), LONG_CONVERSATION_MESSAGES);
    for pair in long.windows(2) {
        assert_ne!(pair[0].direction, pair[1].direction, "alternating");
        let (a, b) = (parse_timestamp(&pair[0].sent_at).unwrap(), parse_timestamp(&pair[1].sent_at).unwrap());
        assert_eq!(b - a, 60, "one minute apart");
        assert!(pair[0].id < pair[1].id, "IDs grow with sent_at");
    }

    let busy_conversations = d.conversations.iter().filter(|c| c.restaurant_id == l.busy_restaurant).count();
    assert!(busy_conversations >= 20);
    let instructions = |rid: &str| d.instructions.iter().filter(|i| i.restaurant_id == rid).count();
    assert_eq!(instructions(&l.busy_restaurant), 5);
    assert_eq!(instructions(&l.foreign_restaurant), 2);
}

/// A server seeded once survives `RERUNS` runs of the suite: each moves at most
/// `RECEIVED_PER_RUN` received orders of the busy restaurant forward, and needs an order in each
/// status PRE-3 moves back from (refused, so never consumed).
#[test]
fn the_busy_restaurant_has_orders_for_many_runs() {
    let d = generate();
    let busy = &d.landmarks.busy_restaurant;
    let count = |status: &str| d.orders_of(busy).filter(|o| o.status == status).count();
    assert!(count("received") >= RERUNS * RECEIVED_PER_RUN, "received: {}", count("received"));
    for status in ["accepted", "preparing", "ready", "completed"] {
        assert!(count(status) >= 2, "{status}: {}", count(status));
    }
}

#[test]
fn records_are_consistent() {
    let d = generate();
    for o in &d.orders {
        assert!((1..=4).contains(&o.items.len()), "{}", o.id);
        let sum: u64 = o.items.iter().map(|i| u64::from(i.quantity) * i.unit_price_cents).sum();
        assert_eq!(o.total_cents, sum, "{}", o.id);
        assert!(o.items.iter().all(|i| i.quantity >= 1), "{}", o.id);
        assert_eq!(o.currency, "EUR");
        assert!(o.updated_at >= o.created_at, "{}", o.id);
        assert!(ORDER_STATUSES.contains(&o.status.as_str()) && ORDER_CHANNELS.contains(&o.channel.as_str()));
    }
    for c in &d.conversations {
        assert!(
            CONVERSATION_STATUSES.contains(&c.status.as_str())
                && CONVERSATION_CHANNELS.contains(&c.channel.as_str())
        );
        let messages: Vec<_> = d.messages.iter().filter(|m| m.conversation_id == c.id).collect();
        assert!(!messages.is_empty(), "{}", c.id);
        assert_eq!(messages[0].sent_at, c.created_at, "{}", c.id);
        assert!(messages.windows(2).all(|p| p[0].sent_at < p[1].sent_at), "{}", c.id);
    }
    for m in &d.messages {
        assert!(m.direction == "inbound" || m.direction == "outbound");
    }
    for t in &d.transcripts {
        assert!(t.language == "fr" || t.language == "en", "{}", t.id);
    }
    let memberships = |user: &str| d.memberships.iter().filter(|m| m.user_id == user).collect::<Vec<_>>();
    assert!(memberships("usr_revoked").iter().all(|m| m.revoked));
    assert_eq!(memberships("usr_staff")[0].restaurant_ids.as_deref(), Some(&["rst_central".to_owned()][..]));
    assert_eq!(d.persona("noscope").unwrap().scopes.len(), 0);
    assert_eq!(d.persona("owner").unwrap().scopes.len(), SCOPES.len());
    assert!(d.persona("other_audience").unwrap().audience.is_some());
}

/// What a success of `tool` looks like with `data`.
fn envelope(data: Value) -> Value {
    json!({ "data": data, "meta": { "request_id": "req_0123456789abcdefAB", "truncated": false, "replayed": false } })
}

fn assert_valid(tool: ToolName, data: Value, what: &str) {
    let validator = Validator::new(&tool.output_schema()).unwrap();
    let instance = envelope(data);
    assert!(validator.is_valid(&instance), "{what}: {:?}", validator.failures(&instance));
}

#[test]
fn records_validate_against_the_output_schemas() {
    let d = generate();
    let order = Validator::new(&ToolName::GetOrder.output_schema()).unwrap();
    for o in &d.orders {
        let instance = envelope(json!({ "order": o }));
        assert!(order.is_valid(&instance), "{}: {:?}", o.id, order.failures(&instance));
    }
    // The validator really checks patterns: a malformed ID fails.
    let mut bad = serde_json::to_value(&d.orders[0]).unwrap();
    bad["id"] = json!("order-1");
    assert!(!order.is_valid(&envelope(json!({ "order": bad }))));

    let organizations: Vec<Value> = d
        .organizations
        .iter()
        .map(|o| {
            let mut v = serde_json::to_value(o).unwrap();
            v["role"] = json!("owner");
            v
        })
        .collect();
    assert_valid(ToolName::ListOrganizations, json!({ "organizations": organizations }), "organizations");
    assert_valid(ToolName::ListRestaurants, json!({ "restaurants": d.restaurants }), "restaurants");
    for c in &d.conversations {
        // The server derives message_count and last_message_at from the messages.
        let messages: Vec<_> = d.messages.iter().filter(|m| m.conversation_id == c.id).collect();
        let mut v = serde_json::to_value(c).unwrap();
        v["message_count"] = json!(messages.len());
        v["last_message_at"] = json!(messages.last().unwrap().sent_at);
        assert_valid(ToolName::GetConversation, json!({ "conversation": v, "messages": messages }), &c.id);
    }
    for t in &d.transcripts {
        assert_valid(ToolName::GetTranscript, json!({ "transcript": t }), &t.id);
    }
    assert_valid(ToolName::ListInstructions, json!({ "instructions": d.instructions }), "instructions");
    // Timezones are accepted by create_restaurant's pattern.
    let create = Validator::new(&ToolName::CreateRestaurant.input_schema()).unwrap();
    for r in &d.restaurants {
        let args = json!({ "organization_id": r.organization_id, "name": r.name, "timezone": r.timezone, "idempotency_key": "dataset-check" });
        assert!(create.is_valid(&args), "{}: {:?}", r.id, create.failures(&args));
    }
}

#[test]
fn synthetic_orders_are_valid_unique_and_spread() {
    let orders: Vec<_> = synthetic_orders("rst_bench", 5000, 42).collect();
    assert_eq!(orders.len(), 5000);
    let ids: BTreeSet<&str> = orders.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids.len(), orders.len());
    let other: Vec<_> = synthetic_orders("rst_bench", 10, 43).collect();
    assert!(other.iter().all(|o| !ids.contains(o.id.as_str())), "seeds do not collide");
    let validator = Validator::new(&ToolName::GetOrder.output_schema()).unwrap();
    for o in &orders {
        assert_eq!(o.restaurant_id, "rst_bench");
        assert!(validator.is_valid(&envelope(json!({ "order": o }))), "{}", o.id);
    }
    // Newest first, with ties, over hours (a year for a million).
    assert!(orders.windows(2).all(|p| p[0].created_at >= p[1].created_at));
    assert!(orders.windows(2).any(|p| p[0].created_at == p[1].created_at));
    let span =
        parse_timestamp(&orders[0].created_at).unwrap() - parse_timestamp(&orders[4999].created_at).unwrap();
    assert!(span > 24 * 3600, "{span}");
    for status in ORDER_STATUSES {
        assert!(orders.iter().any(|o| o.status == status));
    }
}
