//! Races repeated 1,000 rounds, in process through the same pipeline HTTP calls use (the HTTP
//! path adds no shared state): concurrent identical keyed writes, operators racing from one
//! observed state, and pagination while orders arrive. Each round asserts exactly one effect.

use std::sync::Arc;

use mock_server::auth::Principal;
use mock_server::output::Output;
use mock_server::state::store::{Change, Data, Planned};
use mock_server::{App, Config, pipeline};
use serde_json::{Value, json};

const ROUNDS: usize = 1000;
const RACERS: usize = 8;

/// The embedded dataset, with the defects of `IT_DEFECTS` (see support.rs) switched on.
fn app() -> Arc<App> {
    let mut config = Config::embedded();
    config.defects = crate::support::defects_under_test()
        .iter()
        .map(|name| mock_server::Defect::parse(name).expect("a known defect"))
        .collect();
    Arc::new(App::new(config).unwrap())
}

fn owner() -> Principal {
    let persona = Config::embedded().dataset.persona("owner").cloned().expect("the owner persona");
    Principal { user_id: persona.user_id, client_id: persona.client_id, scopes: persona.scopes }
}

async fn call(app: &Arc<App>, who: &Principal, tool: &str, args: Value) -> pipeline::Outcome {
    let args = args.as_object().cloned();
    pipeline::call(app, Some(who), tool, args).await.expect("a known tool")
}

fn messages(app: &App, conversation: &str) -> usize {
    app.store.read().message_count(conversation)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_identical_keyed_writes_have_one_effect_every_round() {
    let app = app();
    let who = owner();
    for round in 0..ROUNDS {
        // A minute per round keeps the rate windows (500 writes, 1000 reads) out of the race.
        app.clock.advance_ms(61_000).expect("within the bound");
        let before = messages(&app, "cnv_c03");
        let args = json!({"restaurant_id": "rst_central", "conversation_id": "cnv_c03",
            "text": "Your order is on its way", "idempotency_key": format!("race-key-{round:05}")});
        let racers = (0..RACERS).map(|_| {
            let (app, who, args) = (app.clone(), who.clone(), args.clone());
            tokio::spawn(async move { call(&app, &who, "send_message", args).await })
        });
        let outcomes: Vec<_> =
            futures::future::join_all(racers).await.into_iter().map(Result::unwrap).collect();
        let first = outcomes.iter().filter(|o| matches!(o, Ok(out) if !out.replayed)).count();
        assert_eq!(first, 1, "round {round}: {outcomes:?}");
        for o in &outcomes {
            if let Err(e) = o {
                assert_eq!(e.code.as_str(), "MCP_OPERATION_IN_PROGRESS", "round {round}");
            }
        }
        assert_eq!(messages(&app, "cnv_c03"), before + 1, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn operators_racing_from_one_observed_state_have_one_winner_every_round() {
    let app = app();
    let who = owner();
    let mut observed = app.store.read().restaurant("rst_central").unwrap().status.clone();
    for round in 0..ROUNDS {
        app.clock.advance_ms(61_000).expect("within the bound");
        let target = if observed == "open" { "paused" } else { "open" };
        let args = json!({"restaurant_id": "rst_central", "status": target, "expected_status": observed});
        let racers = (0..RACERS).map(|_| {
            let (app, who, args) = (app.clone(), who.clone(), args.clone());
            tokio::spawn(async move { call(&app, &who, "set_restaurant_status", args).await })
        });
        let outcomes: Vec<_> =
            futures::future::join_all(racers).await.into_iter().map(Result::unwrap).collect();
        assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1, "round {round}: {outcomes:?}");
        for e in outcomes.iter().filter_map(|o| o.as_ref().err()) {
            assert!(
                matches!(e.code.as_str(), "MCP_EXPECTED_STATE_MISMATCH" | "ORDER_STATUS_PRECONDITION_FAILED"),
                "round {round}: {e:?}"
            );
        }
        observed = app.store.read().restaurant("rst_central").unwrap().status.clone();
        assert_eq!(observed, target, "round {round}: the winner's state stays");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn walks_while_orders_arrive_see_each_existing_order_once_every_round() {
    let app = app();
    let who = owner();
    let existing: Vec<String> = {
        let data = app.store.read();
        data.orders["rst_small"].keys().rev().map(|(_, id)| id.clone()).collect()
    };
    for round in 0..ROUNDS {
        app.clock.advance_ms(61_000).expect("within the bound");
        let (mut seen, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let mut args = json!({"restaurant_id": "rst_small", "limit": 1});
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            // An order arrives between every two pages, always newer than the walk's position.
            let inserter = {
                let app = app.clone();
                tokio::spawn(async move {
                    let mut order = app.store.read().orders_of("rst_small").next().unwrap().to_order();
                    order.id = format!("ord_race{round:05}x{}", app.store.read().orders["rst_small"].len());
                    order.created_at = app.clock.now_timestamp();
                    let output = Output::new(Value::Null, "");
                    let plan = |_: &Data| {
                        Ok::<_, ()>(Planned {
                            change: Change::Order { order: order.clone() },
                            output: output.clone(),
                        })
                    };
                    app.store.commit(None, plan).await.expect("the order arrives");
                })
            };
            let page = call(&app, &who, "list_orders", args).await.expect("a page");
            inserter.await.unwrap();
            seen.extend(
                page.data["orders"].as_array().unwrap().iter().map(|o| o["id"].as_str().unwrap().to_owned()),
            );
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        let old: Vec<&String> = seen.iter().filter(|id| existing.contains(id)).collect();
        assert_eq!(
            old,
            existing.iter().collect::<Vec<_>>(),
            "round {round}: each existing order once, in order"
        );
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seen.len(), "round {round}: no duplicate");
        // The next round walks the same three orders again.
        app.store.reset().await.expect("in memory");
    }
}
