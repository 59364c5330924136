//! Races repeated 1,000 rounds, in process through the same pipeline HTTP calls use (the HTTP
//! path adds no shared state): concurrent identical keyed writes, operators racing from one
//! observed state, and pagination while orders arrive. Each round asserts exactly one effect.
//! With `IT_REDIS` (support.rs) the racers are spread over two replicas on that Redis, and the
//! orders arrive through one while the other pages.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mock_server::auth::Principal;
use mock_server::output::Output;
use mock_server::state::store::{Change, Data, Planned};
use mock_server::{App, Config, pipeline};
use serde_json::{Value, json};

const ROUNDS: usize = 1000;
const RACERS: usize = 8;

/// The embedded dataset, with the defects of `IT_DEFECTS` (see support.rs) switched on: one
/// server twice, or with `IT_REDIS` two replicas on one namespace of that Redis.
async fn apps() -> (Arc<App>, Arc<App>) {
    let mut config = Config::embedded();
    config.defects = crate::support::defects_under_test()
        .iter()
        .map(|name| mock_server::Defect::parse(name).expect("a known defect"))
        .collect();
    match std::env::var("IT_REDIS") {
        Ok(url) => {
            static NAMESPACE: AtomicU64 = AtomicU64::new(0);
            config.redis_url = Some(url);
            config.redis_namespace =
                format!("it-races-{}-{}", std::process::id(), NAMESPACE.fetch_add(1, Ordering::Relaxed));
            config.secret = Some("races".into());
            let a = App::start(config.clone()).await.expect("a replica on IT_REDIS");
            let b = App::start(config).await.expect("a replica on IT_REDIS");
            (Arc::new(a), Arc::new(b))
        }
        Err(_) => {
            let app = Arc::new(App::new(config).unwrap());
            (app.clone(), app)
        }
    }
}

/// A minute later for every replica: the rate windows (500 writes, 1000 reads) stay out of it.
async fn next_minute(app: &App) {
    let moved = app.store.advance_clock(&app.clock, 61_000).await.expect("the store answers");
    moved.expect("within the bound");
}

/// The data as every replica has it now.
async fn current(app: &App) -> std::sync::RwLockReadGuard<'_, mock_server::state::store::Data> {
    app.store.catch_up().await.expect("the store answers");
    app.store.read()
}

fn owner() -> Principal {
    let persona = Config::embedded().dataset.persona("owner").cloned().expect("the owner persona");
    Principal { user_id: persona.user_id, client_id: persona.client_id, scopes: persona.scopes }
}

async fn call(app: &Arc<App>, who: &Principal, tool: &str, args: Value) -> pipeline::Outcome {
    let args = args.as_object().cloned();
    pipeline::call(app, Some(who), tool, args).await.expect("a known tool")
}

async fn messages(app: &App, conversation: &str) -> usize {
    current(app).await.message_count(conversation)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_identical_keyed_writes_have_one_effect_every_round() {
    let (a, b) = apps().await;
    let who = owner();
    for round in 0..ROUNDS {
        next_minute(&a).await;
        let before = messages(&b, "cnv_c03").await;
        let args = json!({"restaurant_id": "rst_central", "conversation_id": "cnv_c03",
            "text": "Your order is on its way", "idempotency_key": format!("race-key-{round:05}")});
        let racers = (0..RACERS).map(|i| {
            let (app, who, args) = (if i % 2 == 0 { &a } else { &b }.clone(), who.clone(), args.clone());
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
        assert_eq!(messages(&a, "cnv_c03").await, before + 1, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn operators_racing_from_one_observed_state_have_one_winner_every_round() {
    let (a, b) = apps().await;
    let who = owner();
    let mut observed = a.store.read().restaurant("rst_central").unwrap().status.clone();
    for round in 0..ROUNDS {
        next_minute(&b).await;
        let target = if observed == "open" { "paused" } else { "open" };
        let args = json!({"restaurant_id": "rst_central", "status": target, "expected_status": observed});
        let racers = (0..RACERS).map(|i| {
            let (app, who, args) = (if i % 2 == 0 { &a } else { &b }.clone(), who.clone(), args.clone());
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
        observed = current(if round % 2 == 0 { &a } else { &b })
            .await
            .restaurant("rst_central")
            .unwrap()
            .status
            .clone();
        assert_eq!(observed, target, "round {round}: the winner's state stays");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn walks_while_orders_arrive_see_each_existing_order_once_every_round() {
    let (app, arrivals) = apps().await;
    let who = owner();
    let existing: Vec<String> = {
        let data = app.store.read();
        data.orders["rst_small"].keys().rev().map(|(_, id)| id.clone()).collect()
    };
    for round in 0..ROUNDS {
        next_minute(&app).await;
        let (mut seen, mut cursor) = (Vec::new(), None::<String>);
        for arrival in 0.. {
            let mut args = json!({"restaurant_id": "rst_small", "limit": 1});
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            // An order arrives between every two pages, always newer than the walk's position.
            let inserter = {
                let app = arrivals.clone();
                tokio::spawn(async move {
                    let mut order = current(&app).await.orders_of("rst_small").next().unwrap().to_order();
                    order.id = format!("ord_race{round:05}x{arrival}");
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
        app.reset().await.expect("the store answers");
    }
}
