//! The check order of AUTH-8, as one pipeline every tool call goes through, on every transport:
//!
//! authentication → tool exists → rate limit → input schema → scope → resource ownership and
//! membership → role → idempotency → preconditions → effect (under its deadline).
//!
//! Each step is one line of [`call`]; a step that fails ends the call with its contract error.
//! The `access-before-schema` variant (docs/VARIANTS.md) moves steps 5–7 before step 4, chosen
//! by one branch.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chataigne_contract::{ErrorCode, Role, ToolName};
use serde_json::Value;

use crate::app::App;
use crate::auth::Principal;
use crate::error::ToolError;
pub use crate::state::idempotency::Owned;
use crate::state::idempotency::{Claim, Owner, RUNNING_TTL, StoreError};
use crate::state::ratelimit::RateKey;
use crate::tools::{self, Call, Output};

/// The tool name is not one of ours: a JSON-RPC error (-32602), not a tool result (PROTO-2).
#[derive(Debug, PartialEq, Eq)]
pub struct UnknownTool;

pub type Outcome = Result<Output, ToolError>;

pub async fn call(
    app: &Arc<App>,
    principal: Option<&Principal>,
    name: &str,
    args: Option<serde_json::Map<String, Value>>,
) -> Result<Outcome, UnknownTool> {
    // 1. Authentication. Over HTTP the middleware already answered 401; here only stdio lands.
    let Some(principal) = principal else {
        return Ok(Err(ErrorCode::AuthenticationRequired.into()));
    };
    // 2. The tool exists.
    let tool = ToolName::parse(name).ok_or(UnknownTool)?;
    let args = app.defects.read_arguments(args.unwrap_or_default());
    Ok(checked(app, principal, tool, Value::Object(args)).await)
}

async fn checked(app: &Arc<App>, principal: &Principal, tool: ToolName, args: Value) -> Outcome {
    // On Redis, the changes other replicas made first (and the shared clock): every step reads
    // the data as the whole deployment has it. Not answered: reads are served from this
    // replica's data as it is, writes refused below, before any effect. In memory, nothing.
    let current = !app.store.is_shared() || app.store.catch_up().await.is_ok();
    if app.store.is_shared() {
        // The faults and deadlines set through any replica's control API.
        app.sync_control();
    }
    // 3. Rate limit: every call that names a real tool counts, failed ones too (LIM-2).
    rate_limit(app, principal, tool, &args).await?;
    if app.variants.access_before_schema() && tools::target_readable(tool, &args) {
        // The `access-before-schema` variant: 5–7 first, then 4. Arguments too malformed to
        // name their target take the reference order: the schema error comes first.
        authorize(app, principal, tool, &args)?;
        validate(app, tool, &args)?;
    } else {
        // 4. Input schema, the very one tools/list publishes, then the limits a schema cannot say.
        validate(app, tool, &args)?;
        // 5–7. Scope, membership, role.
        let authorized = authorize(app, principal, tool, &args);
        if let Err(e) = &authorized
            && e.code == ErrorCode::ScopeRequired
            && app.defects.applies_scope_refused(tool)
        {
            let _ = effect(Call::new(app.clone(), tool, args.clone(), principal.clone()), None).await;
        }
        authorized?;
    }
    if !current && tool.kind().is_write() {
        return Err(ErrorCode::DependencyUnavailable.into());
    }
    let mut call = Call::new(app.clone(), tool, args, principal.clone());
    // 8. Idempotency: a replay returns here, after authorization (IDEM-7).
    let claim = match claim(&call).await {
        Ok(claim) => claim,
        Err(ClaimEnd::Replay(data)) => return Ok(app.defects.replayed(Output::replayed(tool, data))),
        Err(ClaimEnd::Refused(error)) => return Err(error),
    };
    call.keyed = claim;
    // 9. Preconditions (PRE-1..3), against the state as observed now.
    if let Err(e) = tools::check_preconditions(&call) {
        if let Some(owned) = claim {
            release(app, owned).await;
        }
        return Err(e);
    }
    // 10. Effect, under the tool's deadline (LIM-4).
    effect(call, claim).await
}

/// Steps 5–7: scope, resource ownership and membership, role.
fn authorize(app: &App, principal: &Principal, tool: ToolName, args: &Value) -> Result<(), ToolError> {
    let role = if app.defects.access_before_scope() {
        let role = tools::access(app, principal, tool, args)?;
        scope(app, principal, tool, args)?;
        role
    } else {
        // 5. Scope.
        scope(app, principal, tool, args)?;
        // 6. Resource ownership and membership, read now (AUTH-4, AUTH-7).
        tools::access(app, principal, tool, args)?
    };
    // 7. Role.
    let role = match role {
        // The `role-highest-anywhere` defect: the caller's highest role in any organization.
        Some(_) if app.defects.role_highest_anywhere() => {
            app.store.read().active_memberships(&principal.user_id).map(|m| m.role).max()
        }
        role => role,
    };
    check_role(app, tool, role)
}

fn scope(app: &App, principal: &Principal, tool: ToolName, args: &Value) -> Result<(), ToolError> {
    if principal.has_scope(tool.scope()) || app.defects.ignores_scopes(tool, args) {
        return Ok(());
    }
    Err(ToolError { required_scope: Some(tool.scope().to_owned()), ..ErrorCode::ScopeRequired.into() })
}

async fn rate_limit(app: &App, principal: &Principal, tool: ToolName, args: &Value) -> Result<(), ToolError> {
    if app.defects.rate_disabled() {
        return Ok(());
    }
    let key = RateKey {
        client_id: app.defects.rate_client(&principal.client_id, args),
        user_id: principal.user_id.clone(),
        tool: tool.as_str(),
    };
    match app.rate.hit(&key, tool.kind().rate_per_minute(), app.clock.now_ms()).await {
        Ok(verdict) => verdict
            .map_err(|ms| ToolError::retry_after(ErrorCode::RateLimited, app.defects.retry_after_ms(ms))),
        // Fail open: a shared limiter that is down must not stop calls that need nothing else.
        // Not a warning per call: the store logs when it goes down and when it is back.
        Err(StoreError) => {
            tracing::debug!(tool = tool.as_str(), "rate limiter unavailable; call not counted");
            Ok(())
        }
    }
}

fn validate(app: &App, tool: ToolName, args: &Value) -> Result<(), ToolError> {
    let validator = app.input_validator(tool);
    if !validator.is_valid(args) {
        return Err(ToolError::invalid(validator.failures(args).join("; ")));
    }
    if let Some(refusal) = app.defects.refuses_arguments(tool, args) {
        return Err(refusal);
    }
    if let Some(refusal) = app.variants.refuses_length(tool, args) {
        return Err(refusal);
    }
    if app.defects.skips_limits(tool, args) {
        return Ok(());
    }
    tools::validate_limits(tool, args)
}

fn check_role(app: &App, tool: ToolName, role: Option<Role>) -> Result<(), ToolError> {
    match (tool.min_role(), role) {
        (None, _) => Ok(()),
        (Some(min), Some(role)) if role > min || app.defects.ignores_roles(tool) => Ok(()),
        (Some(min), Some(role)) if role == min && !app.defects.refuses_role_at_minimum() => Ok(()),
        // Tools without a target resource (list_organizations) need no role.
        (Some(_), None) if !tools::has_target(tool) => Ok(()),
        _ => Err(ErrorCode::ResourceForbidden.into()),
    }
}

enum ClaimEnd {
    Replay(Value),
    Refused(ToolError),
}

async fn claim(call: &Call) -> Result<Option<Owned>, ClaimEnd> {
    let Some(key) = call.args.get("idempotency_key").and_then(Value::as_str) else {
        return Ok(None);
    };
    let app = &call.app;
    let slot = app.defects.idempotency_slot(&app.keys, &call.principal, call.tool.as_str(), key);
    let fingerprint = app.defects.fingerprint(crate::canonical::digest_without(
        &app.defects.compared_args(&call.args),
        &["idempotency_key"],
    ));
    let now = app.defects.idempotency_now(app.clock.now_ms());
    let owner: Owner = rand::random();
    let claimed = match app.idempotency.claim(slot, fingerprint, owner, now).await {
        Ok(claimed) => claimed,
        Err(StoreError) => {
            // The store may still make the claim after we stopped waiting (a stalled Redis runs
            // what it was sent when it resumes): release it, ours only, once it answers.
            release_later(app.clone(), Owned { slot, fingerprint, owner });
            return Err(ClaimEnd::Refused(ErrorCode::DependencyUnavailable.into()));
        }
    };
    match app.defects.adjust_claim(claimed) {
        Claim::Fresh => Ok(Some(Owned { slot, fingerprint, owner })),
        Claim::Replay(data) => Err(ClaimEnd::Replay(data)),
        Claim::Mismatch => Err(ClaimEnd::Refused(ErrorCode::IdempotencyMismatch.into())),
        Claim::InProgress { retry_after_ms } => {
            Err(ClaimEnd::Refused(ToolError::retry_after(ErrorCode::OperationInProgress, retry_after_ms)))
        }
    }
}

/// Runs the effect. A write runs in its own task, so that once started it completes (or fails)
/// as a whole even when the caller's deadline fires first: the client gets MCP_OUTCOME_UNKNOWN
/// and a later read, or a retry with the same key, sees the effect or its absence (LIM-4).
async fn effect(call: Call, claim: Option<Owned>) -> Outcome {
    let app = call.app.clone();
    let kind = call.tool.kind();
    let deadline = Duration::from_millis(app.deadlines().for_kind(app.defects.deadline_kind(kind)));
    let fault = app.faults.get(call.tool.as_str()).unwrap_or_default();
    let tool = call.tool;
    let work = async move {
        // Releases the claim if this future ends before the match below (a panic; a read's
        // deadline). Past it the claim is completed or released explicitly, never both.
        let mut guard = ReleaseOnDrop { app: call.app.clone(), owned: claim };
        pause(fault.latency_ms).await;
        let outcome = match fault.error {
            Some(error) => Err(call.app.defects.fault_error(tool, &call.args, error.raise())),
            // A read is answered without a further await (the in-memory path stays as it was).
            None if !kind.is_write() => tools::read(&call),
            None => tools::run(&call).await,
        };
        match (&outcome, guard.owned.take()) {
            // Stored with its effect, in one step (Redis): nothing left to store.
            (Ok(output), Some(_)) if output.stored => {}
            (Ok(output), Some(owned)) => store_success(&call.app, owned, &output.data).await,
            (Err(_), Some(owned)) => release(&call.app, owned).await,
            (_, None) => {}
        }
        let output = outcome?;
        pause(fault.delay_after_effect_ms).await;
        Ok(output)
    };
    if kind.is_write() {
        match tokio::time::timeout(deadline, tokio::spawn(work)).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_panicked)) => Err(ErrorCode::InternalError.into()),
            Err(_elapsed) => Err(ErrorCode::OutcomeUnknown.into()),
        }
    } else {
        let timeout_code = app.defects.read_timeout_code();
        tokio::time::timeout(deadline, work)
            .await
            .unwrap_or_else(|_| app.defects.past_deadline(tool).ok_or_else(|| timeout_code.into()))
    }
}

/// An injected delay. None is the common case: even a zero `sleep` goes through the timer
/// wheel and costs the call a wake-up.
async fn pause(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// Frees a claimed key if its call ends without storing a success (IDEM-7).
struct ReleaseOnDrop {
    app: Arc<App>,
    owned: Option<Owned>,
}

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        if let Some(owned) = self.owned.take() {
            release_later(self.app.clone(), owned);
        }
    }
}

/// Frees a claim whose call failed: now if the store answers, else in the background.
async fn release(app: &Arc<App>, owned: Owned) {
    if app.defects.keeps_failed_keys() {
        return;
    }
    if app.idempotency.release(owned.slot, owned.owner).await.is_err() {
        release_later(app.clone(), owned);
    }
}

/// Releases in the background until the store answers, or until a running claim in Redis has
/// expired on its own; the key answers MCP_OPERATION_IN_PROGRESS meanwhile, never runs twice.
fn release_later(app: Arc<App>, owned: Owned) {
    // No runtime (a future dropped at shutdown): nothing left to answer either.
    if app.defects.keeps_failed_keys() || tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    tokio::spawn(async move {
        let released = || {
            let app = app.clone();
            async move { app.idempotency.release(owned.slot, owned.owner).await.is_ok() }
        };
        if !retry_until_expiry(released).await {
            tracing::warn!("idempotency store unavailable; claim left to expire");
        }
    });
}

/// Stores a success. The effect already happened, so if the store is down the answer still goes
/// out and storing is retried in the background: a retry must replay, never run twice.
async fn store_success(app: &Arc<App>, owned: Owned, data: &Value) {
    let now = app.defects.idempotency_now(app.clock.now_ms());
    if app.idempotency.complete(owned.slot, owned.fingerprint, data, now).await.is_ok() {
        return;
    }
    tracing::warn!("idempotency store unavailable; retrying to store a success");
    let (app, data) = (app.clone(), Arc::new(data.clone()));
    tokio::spawn(async move {
        let stored = || {
            let (app, data) = (app.clone(), data.clone());
            async move { app.idempotency.complete(owned.slot, owned.fingerprint, &data, now).await.is_ok() }
        };
        if !retry_until_expiry(stored).await {
            tracing::warn!(
                "idempotency store unavailable; a success was not stored before its claim expired"
            );
        }
    });
}

/// The background retries of a store that did not answer: `attempt` now, then after 100 ms,
/// doubling up to 5 s, until it succeeds (true) or a running claim has expired in the store on
/// its own (`RUNNING_TTL`, false): past that the key is free again, and retrying longer would
/// only keep a task alive for a store that may never come back.
async fn retry_until_expiry<F: Future<Output = bool>>(mut attempt: impl FnMut() -> F) -> bool {
    let give_up = Instant::now() + RUNNING_TTL;
    let mut wait = Duration::from_millis(100);
    while !attempt().await {
        if Instant::now() >= give_up {
            return false;
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(5));
    }
    true
}
