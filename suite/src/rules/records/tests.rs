use serde_json::{Value, json};

use super::*;

fn tenancy() -> Tenancy {
    Tenancy::new(&chataigne_contract::dataset::generate(), str::to_owned)
}

/// A tools/call of `tool` with `args` by `persona`, answered with `data` (a success).
fn call(persona: &str, tool: &str, args: Value, data: Value) -> Exchange {
    let message = json!({ "jsonrpc": "2.0", "id": 1, "result": {
        "content": [{ "type": "text", "text": "done" }],
        "structuredContent": { "data": data, "meta": { "request_id": "req_0123456789abcdefAB" } },
    }});
    let mut ex = Exchange::answered_for_test(Some(message));
    ex.persona = Some(persona.into());
    ex.tool = Some(tool.into());
    ex.request_body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": { "name": tool, "arguments": args } })
    .to_string();
    ex
}

/// The clauses whose tenancy rule applies to `ex` and finds a record it must not serve.
fn leaks(ex: &Exchange) -> Vec<&'static str> {
    let t = tenancy();
    [FOREIGN, REVOKED, NOT_OWNED]
        .into_iter()
        .filter(|c| applies_tenancy(ex, &t, c) && foreign_record(ex, &t, c).is_some())
        .collect()
}

#[test]
fn a_record_of_the_foreign_tenant_is_a_leak_under_the_clause_of_how_it_was_reached() {
    let rival = json!({ "restaurant": { "id": "rst_rival", "organization_id": "org_rival" } });
    // Asked for by its own ID: outside the caller's memberships (AUTH-4).
    let ex = call("owner", "get_restaurant", json!({ "restaurant_id": "rst_rival" }), rival.clone());
    assert_eq!(leaks(&ex), [FOREIGN]);
    // Reached through a restaurant of the caller's own (AUTH-5).
    let order = json!({ "order": { "id": "ord_r0001", "restaurant_id": "rst_rival" } });
    let ex =
        call("owner", "get_order", json!({ "restaurant_id": "rst_central", "order_id": "ord_r0001" }), order);
    assert_eq!(leaks(&ex), [NOT_OWNED]);
    // The former staff's organization, through a revoked membership (AUTH-7).
    let ex = call(
        "revoked",
        "list_organizations",
        json!({}),
        json!({ "organizations": [{ "id": "org_maison" }] }),
    );
    assert_eq!(leaks(&ex), [REVOKED]);
    // The outsider sees the home tenant as foreign; in a text summary too, here through its own
    // restaurant (AUTH-5) and without naming one (AUTH-4).
    let mut ex =
        call("outsider", "list_orders", json!({ "restaurant_id": "rst_rival" }), json!({ "orders": [] }));
    ex.response_mut_for_test().message.as_mut().unwrap()["result"]["content"][0]["text"] =
        json!("see also rst_central.");
    assert_eq!(leaks(&ex), [NOT_OWNED]);
    let orgs = json!({ "organizations": [{ "id": "org_maison" }] });
    assert_eq!(leaks(&call("outsider", "list_organizations", json!({}), orgs)), [FOREIGN]);
}

#[test]
fn the_callers_own_records_refusals_and_unknown_ids_are_no_leak() {
    let own = json!({ "restaurant": { "id": "rst_central", "organization_id": "org_maison" } });
    let ex = call("owner", "get_restaurant", json!({ "restaurant_id": "rst_central" }), own.clone());
    assert!(leaks(&ex).is_empty());
    // The staff limited to one restaurant: the dataset's memberships are an upper bound, and its
    // organization's other restaurants are not judged.
    let small = json!({ "restaurant": { "id": "rst_small", "organization_id": "org_maison" } });
    assert!(
        leaks(&call("staff", "get_restaurant", json!({ "restaurant_id": "rst_small" }), small)).is_empty()
    );
    // A record created during the run is not the dataset's.
    let created = json!({ "organization": { "id": "org_made_in_this_run_01" } });
    assert!(leaks(&call("outsider", "create_organization", json!({}), created)).is_empty());
    // A refusal serves nothing, whatever it names.
    let mut ex = call("owner", "get_restaurant", json!({ "restaurant_id": "rst_rival" }), json!({}));
    let result = &mut ex.response_mut_for_test().message.as_mut().unwrap()["result"];
    result["isError"] = json!(true);
    result["structuredContent"]["data"] =
        json!({ "error": { "code": "MCP_RESOURCE_FORBIDDEN", "id": "rst_rival" } });
    assert!(leaks(&ex).is_empty());
    // A word that merely starts like an ID is not one.
    let ex = call(
        "owner",
        "list_orders",
        json!({ "restaurant_id": "rst_central" }),
        json!({ "note": "rst_rival2" }),
    );
    assert!(leaks(&ex).is_empty());
}

#[test]
fn resources_and_prompts_are_judged_catalogues_are_not() {
    let mut ex = call("owner", "", json!({}), json!({}));
    ex.method = "resources/read".into();
    ex.tool = None;
    ex.request_body = json!({ "params": { "uri": "chataigne://orders/ord_r0001" } }).to_string();
    ex.response_mut_for_test().message = Some(json!({ "jsonrpc": "2.0", "id": 1, "result": {
        "contents": [{ "uri": "chataigne://orders/ord_r0001", "text": "{\"id\":\"ord_r0001\"}" }] } }));
    assert_eq!(leaks(&ex), [FOREIGN]);
    ex.method = "tools/list".into();
    assert!(leaks(&ex).is_empty(), "a catalogue may name the dataset's IDs as examples");
}

#[test]
fn every_persona_of_the_dataset_has_its_foreign_records_and_the_owner_none_of_its_own() {
    let d = chataigne_contract::dataset::generate();
    let t = tenancy();
    let owner = &t.foreign["owner"];
    assert!(
        owner.contains_key(&d.landmarks.foreign_restaurant) && owner.contains_key(&d.landmarks.foreign_order)
    );
    assert!(!owner.contains_key(&d.landmarks.busy_restaurant));
    assert!(d.messages.iter().any(|m| owner.contains_key(&m.id)), "the foreign tenant's messages");
    let revoked = &t.foreign["revoked"];
    assert_eq!(revoked.get(&d.landmarks.busy_restaurant), Some(&REVOKED));
    assert_eq!(revoked.get(&d.landmarks.foreign_restaurant), Some(&FOREIGN));
    // Only the dataset's records: as many as its organizations, restaurants and their children
    // that the outsider is not a member of.
    let outsider = &t.foreign["outsider"];
    assert_eq!(outsider.get(&d.landmarks.home_organization), Some(&FOREIGN));
    assert!(!outsider.contains_key(&d.landmarks.foreign_restaurant));
}

#[test]
fn a_record_not_the_one_addressed_or_of_another_restaurant_is_served_wrongly() {
    let asked = json!({ "restaurant_id": "rst_central", "order_id": "ord_c0001" });
    let right = json!({ "order": { "id": "ord_c0001", "restaurant_id": "rst_central" } });
    let ex = call("owner", "get_order", asked.clone(), right);
    assert!(applies_addressed(&ex) && addressed_record(&ex).is_none());
    let other = json!({ "order": { "id": "ord_c0002", "restaurant_id": "rst_central" } });
    assert!(addressed_record(&call("owner", "get_order", asked.clone(), other)).is_some());
    let elsewhere = json!({ "order": { "id": "ord_c0001", "restaurant_id": "rst_small" } });
    assert!(addressed_record(&call("owner", "get_order", asked, elsewhere)).is_some());
    let list = json!({ "orders": [{ "id": "ord_c0001", "restaurant_id": "rst_central" },
                                  { "id": "ord_s0001", "restaurant_id": "rst_small" }] });
    assert!(
        addressed_record(&call("owner", "list_orders", json!({ "restaurant_id": "rst_central" }), list))
            .is_some()
    );
    // A creation names its parent, not a record to serve.
    let created = json!({ "restaurant": { "id": "rst_new", "organization_id": "org_maison" } });
    assert!(!applies_addressed(&call(
        "owner",
        "create_restaurant",
        json!({ "organization_id": "org_maison" }),
        created
    )));
}

#[test]
fn an_item_the_filters_exclude_is_wrong_and_a_range_edge_is_the_servers_reading() {
    let args = json!({ "restaurant_id": "rst_central", "status": ["received", "ready"], "channel": "web",
                       "created_from": "2026-03-01T00:00:00Z", "created_to": "2026-03-31T00:00:00Z" });
    let item = |status: &str, channel: &str, at: &str| json!({ "id": "ord_c0001", "restaurant_id": "rst_central", "status": status, "channel": channel, "created_at": at });
    let judged = |items: Vec<Value>| {
        let ex = call("owner", "list_orders", args.clone(), json!({ "orders": items }));
        assert!(applies_filters(&ex));
        filtered_items(&ex)
    };
    assert_eq!(
        judged(vec![
            item("ready", "web", "2026-03-31T00:00:00Z"),
            item("received", "web", "2026-03-01T00:00:00Z")
        ]),
        None
    );
    assert!(judged(vec![item("accepted", "web", "2026-03-02T00:00:00Z")]).is_some());
    assert!(judged(vec![item("ready", "phone", "2026-03-02T00:00:00Z")]).is_some());
    assert!(judged(vec![item("ready", "web", "2026-02-28T23:59:59Z")]).is_some());
    assert!(judged(vec![item("ready", "web", "2026-03-31T00:00:01Z")]).is_some());
    // A list without a filter is not this rule's.
    let ex = call("owner", "list_orders", json!({ "restaurant_id": "rst_central" }), json!({ "orders": [] }));
    assert!(!applies_filters(&ex));
}

#[test]
fn a_prompt_may_say_back_the_id_it_was_given_and_nothing_else() {
    let mut ex = call("owner", "", json!({}), json!({}));
    ex.method = "prompts/get".into();
    ex.tool = None;
    ex.request_body =
        json!({ "params": { "name": "triage", "arguments": { "restaurant_id": "rst_rival" } } }).to_string();
    let said = |text: &str| {
        json!({ "jsonrpc": "2.0", "id": 1, "result": {
        "messages": [{ "role": "user", "content": { "type": "text", "text": text } }] } })
    };
    ex.response_mut_for_test().message = Some(said("Look at restaurant rst_rival."));
    assert!(leaks(&ex).is_empty());
    ex.response_mut_for_test().message = Some(said("Look at rst_rival; its last order is ord_r0001."));
    assert_eq!(leaks(&ex), [FOREIGN]);
}

#[test]
fn a_tool_served_without_its_scope_or_below_its_role_is_found() {
    let t = tenancy();
    let order = json!({ "order": { "id": "ord_c0001", "restaurant_id": "rst_central" } });
    let move_it = json!({ "restaurant_id": "rst_central", "order_id": "ord_c0001", "status": "accepted" });
    let ex = call("noscope", "update_order_status", move_it.clone(), order.clone());
    assert!(applies_scope(&ex, &t) && served_without_scope(&ex, &t).is_some());
    let ex = call("staff", "update_order_status", move_it.clone(), order.clone());
    assert!(applies_role(&ex, &t) && served_below_role(&ex, &t).is_none());
    assert!(served_without_scope(&ex, &t).is_none());
    let ex = call("viewer", "update_order_status", move_it, order);
    assert!(served_below_role(&ex, &t).is_some());
    let created = json!({ "restaurant": { "id": "rst_new" } });
    let ex =
        call("manager", "create_restaurant", json!({ "organization_id": "org_maison" }), created.clone());
    assert!(served_below_role(&ex, &t).is_some(), "creating a restaurant is the owner's");
    let ex = call("owner", "create_restaurant", json!({ "organization_id": "org_maison" }), created.clone());
    assert!(served_below_role(&ex, &t).is_none());
    // An organization made during the run, and a caller with no live membership: not this rule's.
    let ex = call("manager", "create_restaurant", json!({ "organization_id": "org_new" }), created.clone());
    assert!(!applies_role(&ex, &t));
    let ex = call("revoked", "create_restaurant", json!({ "organization_id": "org_maison" }), created);
    assert!(!applies_role(&ex, &t));
}

/// A page of `n` orders created a minute apart (descending), with `meta` members.
fn page(tool: &str, args: Value, n: usize, meta: Value) -> Exchange {
    let items: Vec<Value> = (0..n)
        .map(|i| {
            json!({ "id": format!("ord_c{:04}", i + 1), "restaurant_id": "rst_central",
                         "created_at": format!("2026-03-01T10:{:02}:00Z", 59 - i) })
        })
        .collect();
    let mut ex = call("owner", tool, args, json!({ "orders": items }));
    let s = &mut ex.response_mut_for_test().message.as_mut().unwrap()["result"]["structuredContent"];
    for (k, v) in meta.as_object().unwrap() {
        s["meta"][k] = v.clone();
    }
    ex
}

#[test]
fn a_page_holds_the_default_or_its_limit_and_a_next_cursor_is_never_empty() {
    let rst = json!({ "restaurant_id": "rst_central" });
    assert!(applies_page(&page("list_orders", rst.clone(), 20, json!({}))));
    assert_eq!(page_size(&page("list_orders", rst.clone(), 20, json!({ "next_cursor": "c" }))), None);
    assert!(page_size(&page("list_orders", rst.clone(), 21, json!({}))).is_some());
    assert!(page_size(&page("list_orders", rst.clone(), 19, json!({ "next_cursor": "c" }))).is_some());
    // Cut for its size (LIM-5), or a continuation: fewer is allowed.
    assert_eq!(
        page_size(&page("list_orders", rst.clone(), 19, json!({ "next_cursor": "c", "truncated": true }))),
        None
    );
    let args = json!({ "restaurant_id": "rst_central", "limit": 5 });
    assert!(page_size(&page("list_orders", args.clone(), 6, json!({}))).is_some());
    assert_eq!(page_size(&page("list_orders", args, 5, json!({ "next_cursor": "c" }))), None);
    // Past the maximum, clamping is PAG-2's (ext) reading: not this rule's.
    let over = json!({ "restaurant_id": "rst_central", "limit": 51 });
    assert_eq!(page_size(&page("list_orders", over, 50, json!({}))), None);
    let last = page("list_orders", rst, 3, json!({ "next_cursor": "" }));
    assert!(applies_next_cursor(&last) && empty_next_cursor(&last).is_some());
}

#[test]
fn messages_stay_within_message_limit_and_100() {
    let conv = |limit: Option<u64>, n: usize| {
        let mut args = json!({ "restaurant_id": "rst_central", "conversation_id": "cnv_long" });
        if let Some(l) = limit {
            args["message_limit"] = json!(l);
        }
        let messages: Vec<Value> = (0..n).map(|i| json!({ "id": format!("msg_{i}") })).collect();
        call(
            "owner",
            "get_conversation",
            args,
            json!({ "conversation": { "id": "cnv_long" }, "messages": messages }),
        )
    };
    assert_eq!(message_count(&conv(Some(10), 10)), None);
    assert!(message_count(&conv(Some(10), 11)).is_some());
    assert_eq!(message_count(&conv(Some(101), 100)), None, "101 clamped to 100 is allowed");
    assert!(message_count(&conv(Some(100), 101)).is_some());
    assert!(message_count(&conv(None, 101)).is_some());
    assert_eq!(message_count(&conv(None, 60)), None, "the default of 50 is the contract's, not the seed's");
}

#[test]
fn a_page_of_orders_is_ordered_by_created_at_either_way() {
    let rst = json!({ "restaurant_id": "rst_central" });
    let mut ex = page("list_orders", rst.clone(), 5, json!({}));
    assert_eq!(page_order(&ex), None);
    let items = |ex: &mut Exchange| -> Vec<Value> {
        ex.response_mut_for_test().message.as_ref().unwrap()["result"]["structuredContent"]["data"]["orders"]
            .as_array()
            .unwrap()
            .clone()
    };
    let set = |ex: &mut Exchange, v: Vec<Value>| {
        ex.response_mut_for_test().message.as_mut().unwrap()["result"]["structuredContent"]["data"]["orders"] =
            json!(v);
    };
    let mut reversed = items(&mut ex);
    reversed.reverse();
    set(&mut ex, reversed.clone());
    assert_eq!(page_order(&ex), None, "ascending is an order too");
    reversed.swap(1, 3);
    set(&mut ex, reversed.clone());
    assert!(page_order(&ex).is_some());
    // Another list may go by another key.
    let mut other = page("list_restaurants", json!({}), 5, json!({}));
    let mut shuffled = items(&mut other);
    shuffled.swap(1, 3);
    other.response_mut_for_test().message.as_mut().unwrap()["result"]["structuredContent"]["data"]["orders"] =
        json!(shuffled);
    assert_eq!(page_order(&other), None);
}

#[test]
fn a_page_a_cursor_led_to_is_never_empty_unless_a_status_filter_let_items_go() {
    let args = json!({ "restaurant_id": "rst_central", "cursor": "c1" });
    let empty = page("list_orders", args, 0, json!({}));
    assert!(applies_continuation(&empty) && empty_continuation(&empty).is_some());
    let filtered = page(
        "list_orders",
        json!({ "restaurant_id": "rst_central", "cursor": "c1", "status": ["ready"] }),
        0,
        json!({}),
    );
    assert!(!applies_continuation(&filtered));
    assert!(!applies_continuation(&page(
        "list_orders",
        json!({ "restaurant_id": "rst_central" }),
        0,
        json!({})
    )));
    let conv = json!({ "restaurant_id": "rst_central", "conversation_id": "cnv_long", "cursor": "c1" });
    let ex = call(
        "owner",
        "get_conversation",
        conv,
        json!({ "conversation": { "id": "cnv_long" }, "messages": [] }),
    );
    assert!(applies_continuation(&ex) && empty_continuation(&ex).is_some());
}

#[test]
fn every_success_carries_a_text_a_person_can_read() {
    let mut ex = page("list_orders", json!({ "restaurant_id": "rst_central", "cursor": "c1" }), 2, json!({}));
    assert!(applies_tool_success(&ex) && no_text(&ex).is_none());
    ex.response_mut_for_test().message.as_mut().unwrap()["result"]["content"] = json!([]);
    assert!(no_text(&ex).is_some());
    ex.response_mut_for_test().message.as_mut().unwrap()["result"]["content"] =
        json!([{ "type": "text", "text": " " }]);
    assert!(no_text(&ex).is_some());
    // A JSON serialization beside the summary is an SDK's; a second prose block is not.
    ex.response_mut_for_test().message.as_mut().unwrap()["result"]["content"] =
        json!([{ "type": "text", "text": "3 orders" }, { "type": "text", "text": "{\"orders\": []}" }]);
    assert!(no_text(&ex).is_none());
    ex.response_mut_for_test().message.as_mut().unwrap()["result"]["content"] =
        json!([{ "type": "text", "text": "3 orders" }, { "type": "text", "text": "day,orders\n1,3" }]);
    assert!(no_text(&ex).is_some_and(|d| d.contains("2 text blocks")));
}

#[test]
fn analytics_totals_are_the_sum_of_their_series() {
    let served = |total: u64| {
        call(
            "owner",
            "get_analytics",
            json!({ "restaurant_id": "rst_central", "metrics": ["orders_count", "average_order_cents"],
                    "from": "2026-11-29", "to": "2026-11-30" }),
            json!({ "metrics": ["orders_count", "average_order_cents"],
                    "series": [{ "period_start": "2026-11-29", "values": { "orders_count": 11, "average_order_cents": 900 } },
                               { "period_start": "2026-11-30", "values": { "orders_count": 6, "average_order_cents": 1500 } }],
                    "totals": { "orders_count": total, "average_order_cents": 1111 } }),
        )
    };
    assert!(applies_totals(&served(17)));
    assert_eq!(totals_add_up(&served(17)), None, "an average is not a sum");
    assert!(totals_add_up(&served(11)).is_some(), "the last day left out");
}

#[test]
fn a_state_write_answers_the_state_it_set() {
    let args = json!({ "restaurant_id": "rst_central", "order_id": "ord_c0001", "status": "accepted", "expected_status": "received" });
    let ok = call(
        "owner",
        "update_order_status",
        args.clone(),
        json!({ "order": { "id": "ord_c0001", "status": "accepted" } }),
    );
    assert!(applies_state_write(&ok) && write_shows_its_state(&ok).is_none());
    let stale = call(
        "owner",
        "update_order_status",
        args,
        json!({ "order": { "id": "ord_c0001", "status": "received" } }),
    );
    assert!(write_shows_its_state(&stale).is_some());
    let bare = call(
        "owner",
        "update_order_status",
        json!({ "status": "accepted" }),
        json!({ "id": "ord_c0001", "status": "accepted" }),
    );
    assert!(!applies_state_write(&bare), "the data shape is ENV-7's (variant bare-order-data)");
}

#[test]
fn a_page_holds_each_item_once() {
    let args = json!({ "restaurant_id": "rst_central", "query": "gluten" });
    let hits = |ids: &[&str]| {
        let items: Vec<Value> =
            ids.iter().map(|id| json!({ "id": id, "restaurant_id": "rst_central" })).collect();
        call("owner", "search_transcripts", args.clone(), json!({ "transcripts": items }))
    };
    assert!(applies_page(&hits(&["trs_c01"])));
    assert_eq!(repeated_item(&hits(&["trs_c01", "trs_c02"])), None);
    assert!(repeated_item(&hits(&["trs_c01", "trs_c02", "trs_c01"])).is_some());
}

#[test]
fn a_restaurant_read_as_a_resource_needs_the_scope_of_get_restaurant() {
    let t = tenancy();
    let mut ex = call("noscope", "", json!({}), json!({}));
    ex.method = "resources/read".into();
    ex.tool = None;
    ex.request_body = json!({ "params": { "uri": "chataigne://restaurants/rst_central" } }).to_string();
    ex.response_mut_for_test().message = Some(json!({ "jsonrpc": "2.0", "id": 1, "result": {
        "contents": [{ "uri": "chataigne://restaurants/rst_central", "text": "{}" }] } }));
    assert!(applies_scope(&ex, &t) && served_without_scope(&ex, &t).is_some());
    ex.persona = Some("owner".into());
    assert!(served_without_scope(&ex, &t).is_none());
    ex.request_body = json!({ "params": { "uri": "chataigne://contract" } }).to_string();
    assert!(!applies_scope(&ex, &t), "a resource that names no restaurant");
}

#[test]
fn a_page_cut_for_its_size_holds_fewer_items_than_asked() {
    let rst = json!({ "restaurant_id": "rst_central" });
    let cut = json!({ "next_cursor": "c", "truncated": true });
    assert!(!applies_truncated(&page("list_orders", rst.clone(), 20, json!({ "next_cursor": "c" }))));
    let full = page("list_orders", rst.clone(), 20, cut.clone());
    assert!(applies_truncated(&full) && truncated_in_full(&full).is_some());
    assert_eq!(truncated_in_full(&page("list_orders", rst.clone(), 7, cut.clone())), None);
    let limit5 = json!({ "restaurant_id": "rst_central", "limit": 5 });
    assert!(truncated_in_full(&page("list_orders", limit5.clone(), 5, cut.clone())).is_some());
    assert_eq!(truncated_in_full(&page("list_orders", limit5, 4, cut)), None);
}
