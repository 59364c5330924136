//! The control API (`--control-api`): reset, virtual clock, fault injection, deadlines,
//! membership revocation and order arrival, so a conformance run tests time and failures in
//! seconds. Off by default; every route needs `x-control-secret`. Documented in docs/CONTROL_API.md.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chataigne_contract::dataset::{Order, OrderItem};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::App;
use crate::dev::faults::Fault;
use crate::output::Output;
use crate::state::store::{Change, Failed, Planned};

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(capabilities))
        .route("/reset", post(reset))
        .route("/clock", get(clock))
        .route("/clock/advance", post(advance))
        .route("/faults", get(list_faults).post(set_fault).delete(clear_faults))
        .route("/deadlines", get(deadlines).post(set_deadlines))
        .route("/memberships/revoke", post(revoke))
        .route("/memberships/restore", post(restore))
        .route("/orders", post(new_order))
        .layer(from_fn_with_state(app.clone(), secret))
        .with_state(app)
}

async fn secret(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let given = request.headers().get("x-control-secret").map(|v| v.as_bytes());
    match (&app.config.control_secret, given) {
        (Some(expected), Some(given)) if same_secret(expected.as_bytes(), given) => next.run(request).await,
        _ => (StatusCode::UNAUTHORIZED, "control API: missing or wrong x-control-secret").into_response(),
    }
}

/// A secret nobody can guess, for a control API started without one (there is no default).
pub fn random_secret() -> String {
    use rand::Rng;
    rand::rng().sample_iter(rand::distr::Alphanumeric).take(32).map(char::from).collect()
}

/// Constant time, on digests so that the time taken does not tell the secret's length either.
/// `App::new` refuses an empty secret, so an empty header never matches.
fn same_secret(expected: &[u8], given: &[u8]) -> bool {
    use sha2::{Digest, Sha256};
    use subtle::ConstantTimeEq;
    Sha256::digest(expected).as_slice().ct_eq(Sha256::digest(given).as_slice()).into()
}

async fn capabilities() -> Json<Value> {
    Json(json!({ "capabilities": ["reset", "clock", "faults", "deadlines", "memberships", "orders"] }))
}

/// 503 when the data is shared and Redis did not answer: the data is as it was.
async fn reset(State(app): State<Arc<App>>) -> StatusCode {
    match app.reset().await {
        Ok(()) => StatusCode::NO_CONTENT,
        Err(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}

async fn clock(State(app): State<Arc<App>>) -> Json<Value> {
    // On Redis, the clock every replica shares (as this one last saw it, if Redis is down).
    let _ = app.store.catch_up().await;
    now(&app)
}

fn now(app: &App) -> Json<Value> {
    Json(
        json!({ "now": app.clock.now_timestamp(), "now_ms": app.clock.now_ms(), "offset_ms": app.clock.offset_ms() }),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Advance {
    #[serde(default)]
    seconds: i64,
    #[serde(default)]
    ms: i64,
}

/// 400 for a move backward or past ten years ahead in all (the offset would wrap negative); on
/// Redis the clock moves for every replica, and 503 when Redis did not answer (it did not move).
async fn advance(State(app): State<Arc<App>>, Json(by): Json<Advance>) -> Response {
    let Some(ms) = by.seconds.checked_mul(1000).and_then(|s| s.checked_add(by.ms)) else {
        return (StatusCode::BAD_REQUEST, crate::state::clock::Advance::TooFar.to_string()).into_response();
    };
    match app.store.advance_clock(&app.clock, ms).await {
        Ok(Ok(_)) => now(&app).into_response(),
        Ok(Err(refused)) => (StatusCode::BAD_REQUEST, refused.to_string()).into_response(),
        Err(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

/// On Redis, the faults and deadlines as every replica shares them (as this one last saw them,
/// if Redis is down).
async fn synced(app: &App) {
    if app.store.is_shared() {
        let _ = app.store.catch_up().await;
        app.sync_control();
    }
}

async fn list_faults(State(app): State<Arc<App>>) -> Json<Value> {
    synced(&app).await;
    Json(json!({ "faults": app.faults.list() }))
}

/// On Redis for every replica; 503 when Redis did not answer (nothing changed).
async fn set_fault(State(app): State<Arc<App>>, Json(fault): Json<Fault>) -> Response {
    if chataigne_contract::ToolName::parse(&fault.tool).is_none() {
        return (StatusCode::BAD_REQUEST, "unknown tool").into_response();
    }
    match app.set_fault(fault).await {
        Ok(()) => Json(json!({ "faults": app.faults.list() })).into_response(),
        Err(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

async fn clear_faults(State(app): State<Arc<App>>) -> StatusCode {
    match app.clear_faults().await {
        Ok(()) => StatusCode::NO_CONTENT,
        Err(_) => StatusCode::SERVICE_UNAVAILABLE,
    }
}

async fn deadlines(State(app): State<Arc<App>>) -> Json<Value> {
    synced(&app).await;
    Json(json!(app.deadlines()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeadlinePatch {
    read_ms: Option<u64>,
    analytics_ms: Option<u64>,
    write_ms: Option<u64>,
}

async fn set_deadlines(State(app): State<Arc<App>>, Json(patch): Json<DeadlinePatch>) -> Response {
    match app.set_deadlines(patch.read_ms, patch.analytics_ms, patch.write_ms).await {
        Ok(()) => Json(json!(app.deadlines())).into_response(),
        Err(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MembershipRef {
    user_id: String,
    organization_id: String,
}

async fn set_revoked(app: &App, m: MembershipRef, revoked: bool) -> StatusCode {
    let change = Change::Membership { user_id: m.user_id, organization_id: m.organization_id, revoked };
    let planned = app
        .store
        .commit(None, |data| match &change {
            Change::Membership { user_id, organization_id, .. }
                if data.has_membership(user_id, organization_id) =>
            {
                Ok(Planned { change: change.clone(), output: Output::new(Value::Null, "") })
            }
            _ => Err(StatusCode::NOT_FOUND),
        })
        .await;
    match planned {
        Ok(_) => StatusCode::NO_CONTENT,
        Err(failed) => refused(failed),
    }
}

/// The status of a change the store did not make (or may have made).
fn refused(failed: Failed<StatusCode>) -> StatusCode {
    match failed {
        Failed::Refused(status) => status,
        Failed::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Failed::Unknown => StatusCode::GATEWAY_TIMEOUT,
    }
}

async fn revoke(State(app): State<Arc<App>>, Json(m): Json<MembershipRef>) -> StatusCode {
    set_revoked(&app, m, true).await
}

async fn restore(State(app): State<Arc<App>>, Json(m): Json<MembershipRef>) -> StatusCode {
    set_revoked(&app, m, false).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewOrder {
    restaurant_id: String,
}

/// A new order arrives now (no tool creates orders): lets a run insert during a walk (PAG-4).
async fn new_order(State(app): State<Arc<App>>, Json(req): Json<NewOrder>) -> Response {
    let now = app.clock.now_timestamp();
    let order = Order {
        id: crate::tools::new_id("ord"),
        restaurant_id: req.restaurant_id.clone(),
        status: "received".into(),
        channel: "app".into(),
        customer_name: "Walk-in Guest".into(),
        items: vec![OrderItem { name: "Chestnut soup".into(), quantity: 1, unit_price_cents: 900 }],
        total_cents: 900,
        currency: "EUR".into(),
        notes: String::new(),
        created_at: now.clone(),
        updated_at: now,
    };
    let planned = app
        .store
        .commit(None, |data| match data.restaurant(&order.restaurant_id) {
            Some(_) => Ok(Planned {
                change: Change::Order { order: order.clone() },
                output: Output::new(json!(order), ""),
            }),
            None => Err(StatusCode::NOT_FOUND),
        })
        .await;
    match planned {
        Ok(output) => (StatusCode::CREATED, Json(output.data)).into_response(),
        Err(failed) => refused(failed).into_response(),
    }
}
