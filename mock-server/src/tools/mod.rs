//! The tools of §10, one module per contract area, dispatched by [`ToolName`] the way a command
//! enum is routed. Shared here: access to the target resource, keyset pages, cursors, outputs.

mod analytics;
mod conversations;
pub mod cursor;
mod instructions;
mod orders;
mod organizations;
mod restaurants;
mod transcripts;

use std::ops::Bound;
use std::sync::Arc;

use chataigne_contract::envelope::json_len;
use chataigne_contract::{DEFAULT_LIMIT, ErrorCode, MAX_STRUCTURED_BYTES, Role, ToolName};
use serde_json::Value;

use crate::app::App;
use crate::auth::Principal;
use crate::error::ToolError;
pub use crate::output::Output;
use crate::state::idempotency::{Completion, Owned};
use crate::state::store::{Data, Failed, Key, Planned};
use crate::tools::cursor::Binding;

/// A call that passed authentication, rate limit, schema, scope, membership and role.
#[derive(Debug, Clone)]
pub struct Call {
    pub app: Arc<App>,
    pub tool: ToolName,
    pub args: Value,
    pub principal: Principal,
    /// The idempotency key this call owns, when keyed (set by the pipeline once claimed).
    pub keyed: Option<Owned>,
}

impl Call {
    pub fn new(app: Arc<App>, tool: ToolName, args: Value, principal: Principal) -> Call {
        Call { app, tool, args, principal, keyed: None }
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        self.args.get(name).and_then(Value::as_str)
    }

    /// A required argument; the schema guarantees it, so absence is an internal error.
    pub fn req(&self, name: &str) -> Result<&str, ToolError> {
        self.str(name).ok_or_else(|| ErrorCode::InternalError.into())
    }

    pub fn restaurant_id(&self) -> Result<&str, ToolError> {
        self.req("restaurant_id")
    }
}

/// Must the tool address a restaurant or an organization? `list_restaurants` may omit its
/// `organization_id`: it then lists what the caller's memberships reach, filtered per restaurant.
pub fn has_target(tool: ToolName) -> bool {
    !matches!(tool, ToolName::ListOrganizations | ToolName::CreateOrganization | ToolName::ListRestaurants)
}

/// Can the target's membership be looked up from these (unvalidated) arguments? The
/// `access-before-schema` variant checks access first only then; otherwise the schema decides.
pub fn target_readable(tool: ToolName, args: &Value) -> bool {
    let named = |name| args.get(name).is_some_and(Value::is_string);
    match tool {
        ToolName::ListOrganizations | ToolName::CreateOrganization => true,
        ToolName::ListRestaurants => args.get("organization_id").is_none_or(Value::is_string),
        ToolName::CreateRestaurant => named("organization_id"),
        _ => named("restaurant_id"),
    }
}

/// Steps 6 and 7's input: the caller's current role on the tool's target. A target outside the
/// caller's memberships and one that does not exist get the same error (AUTH-4).
pub fn access(
    app: &App,
    principal: &Principal,
    tool: ToolName,
    args: &Value,
) -> Result<Option<Role>, ToolError> {
    let data = app.store.read();
    let user = principal.user_id.as_str();
    let forbidden = || ToolError::from(ErrorCode::ResourceForbidden);
    if app.defects.skips_membership(tool) {
        return Ok(Some(Role::Owner));
    }
    if app.defects.cursor_skips_access(tool) && args.get("cursor").is_some() {
        return Ok(Some(Role::Owner));
    }
    if let Some(rid) = args.get("restaurant_id").and_then(Value::as_str) {
        return match app.defects.role_for_restaurant(&data, user, rid) {
            Some(role) => Ok(Some(role)),
            None => Err(app.defects.absent_target(&data, rid).unwrap_or_else(forbidden)),
        };
    }
    if let Some(oid) = args.get("organization_id").and_then(Value::as_str) {
        return match data.role_for_organization(user, oid) {
            Some(role) => Ok(Some(role)),
            None => Err(forbidden()),
        };
    }
    // The `no-membership-forbidden` variant: no current membership at all is refused.
    if app.variants.forbids_without_membership(tool) && data.active_memberships(user).next().is_none() {
        return Err(forbidden());
    }
    Ok(None)
}

/// Limits a JSON Schema cannot state (LIM-1 and filter ranges), checked with the schema step.
pub fn validate_limits(tool: ToolName, args: &Value) -> Result<(), ToolError> {
    match tool {
        ToolName::GetAnalytics => analytics::validate(args),
        ToolName::ListOrders => orders::validate(args),
        _ => Ok(()),
    }
}

/// Step 9: the observed state must be the expected one (PRE-2, PRE-3).
pub fn check_preconditions(call: &Call) -> Result<(), ToolError> {
    match call.tool {
        ToolName::UpdateOrderStatus => orders::check_transition(call),
        ToolName::SetRestaurantStatus => restaurants::check_status(call),
        _ => Ok(()),
    }
}

/// Step 10: the effect or the read itself.
pub async fn run(call: &Call) -> Result<Output, ToolError> {
    use ToolName::*;
    match call.tool {
        CreateOrganization => organizations::create(call).await,
        SetRestaurantStatus => restaurants::set_status(call).await,
        CreateRestaurant => restaurants::create(call).await,
        UpdateOrderStatus => orders::update_status(call).await,
        SendMessage => conversations::send_message(call).await,
        CreateInstruction => instructions::create(call).await,
        _ => read(call),
    }
}

/// A read tool's answer, on the data as it is: no await, nothing shared asked.
pub fn read(call: &Call) -> Result<Output, ToolError> {
    use ToolName::*;
    match call.tool {
        ListOrganizations => organizations::list(call),
        ListRestaurants => restaurants::list(call),
        GetRestaurant => restaurants::get(call),
        ListOrders => orders::list(call),
        GetOrder => orders::get(call),
        ListConversations => conversations::list(call),
        GetConversation => conversations::get(call),
        SearchTranscripts => transcripts::search(call),
        GetTranscript => transcripts::get(call),
        ListInstructions => instructions::list(call),
        GetAnalytics => analytics::get(call),
        // A write is no read: `run` takes it.
        CreateOrganization | SetRestaurantStatus | CreateRestaurant | UpdateOrderStatus | SendMessage
        | CreateInstruction => Err(ErrorCode::InternalError.into()),
    }
}

/// A write: its change planned on the data as it is and made, with its claim's result stored
/// alongside when the store can (Redis).
pub async fn commit(
    call: &Call,
    plan: impl Fn(&Data) -> Result<Planned, ToolError>,
) -> Result<Output, ToolError> {
    let app = &call.app;
    let keyed =
        call.keyed.map(|owned| Completion { owned, now_ms: app.defects.idempotency_now(app.clock.now_ms()) });
    // The pipeline caught up before the checks (and refuses a write when it could not).
    app.store.commit_current(keyed, plan).await.map_err(|failed| match failed {
        Failed::Refused(error) => error,
        Failed::Unavailable => ErrorCode::DependencyUnavailable.into(),
        Failed::Unknown => ErrorCode::OutcomeUnknown.into(),
    })
}

/// Room kept for the envelope around the items (meta, cursor, keys).
const ENVELOPE_RESERVE: usize = 2048;

/// One page of a keyset walk.
pub struct Page {
    pub items: Vec<Value>,
    /// Where the next page starts (after this key), if more items follow.
    pub next: Option<Key>,
    pub truncated: bool,
}

/// Takes up to `limit` items from an iterator in the list's order, stopping early when the next item
/// would push the output over 128 KiB (LIM-5); a first item that alone does not fit cannot be
/// cut (LIM-6).
pub fn take_page(
    call: &Call,
    items: impl Iterator<Item = (Key, Value)>,
    limit: usize,
) -> Result<Page, ToolError> {
    let budget = MAX_STRUCTURED_BYTES - ENVELOPE_RESERVE;
    let (mut out, mut used, mut last) = (Vec::new(), 0usize, None);
    let uncut = call.app.defects.page_uncut(call.args.get("status").is_some());
    for (key, value) in items {
        if out.len() == limit {
            return Ok(Page { items: out, next: last, truncated: false });
        }
        let size = json_len(&value) + 1;
        if used + size > budget && !uncut {
            if out.is_empty() {
                return Err(ErrorCode::OutputTooLarge.into());
            }
            return Ok(Page { items: out, next: last, truncated: true });
        }
        used += size;
        last = Some(key);
        out.push(value);
    }
    Ok(Page { items: out, next: None, truncated: false })
}

fn binding<'a>(call: &'a Call, filters: &[u8; 32]) -> Binding<'a> {
    Binding {
        tool: call.app.defects.cursor_tool(call.tool.as_str()),
        filters: *filters,
        client_id: &call.principal.client_id,
        user_id: &call.principal.user_id,
    }
}

fn filters_digest(call: &Call) -> [u8; 32] {
    let defects = &call.app.defects;
    let mut unbound = vec!["limit", "cursor", "message_limit"];
    unbound.extend(defects.unbound_arguments());
    defects.filters_digest(crate::canonical::digest_without(&call.args, &unbound))
}

/// Where the page starts: the cursor's key, or the list's first item (PAG-5, PAG-6).
pub fn start(call: &Call) -> Result<Bound<Key>, ToolError> {
    let Some(cursor) = call.str("cursor") else {
        return Ok(Bound::Unbounded);
    };
    call.app
        .cursors
        .decode(&binding(call, &filters_digest(call)), cursor)
        .or_else(|| call.app.defects.accept_any_cursor(cursor))
        .map(|key| call.app.defects.page_start(key))
        .ok_or_else(|| ErrorCode::CursorInvalid.into())
}

pub fn limit(call: &Call) -> usize {
    count(call, "limit").unwrap_or_else(|| call.app.defects.default_limit(DEFAULT_LIMIT))
}

/// A count argument (`limit`, `message_limit`). The schema admits any JSON integer, `7.0` and
/// `1e1` included, so read it as a number: `as_u64` alone would drop them to the default.
pub fn count(call: &Call, name: &str) -> Option<usize> {
    call.args.get(name).and_then(Value::as_f64).map(|n| n as usize)
}

/// Wraps a page into an output with its cursor and a summary.
pub fn page_output(call: &Call, key: &str, page: Page, what: &str) -> Output {
    let count = page.items.len();
    let next = match (&page.next, page.items.last()) {
        // PAG-3's defect: a cursor on the last page too.
        (None, Some(last)) if call.app.defects.cursor_on_last_page() => Some((
            last["created_at"].as_str().unwrap_or_default().to_owned(),
            last["id"].as_str().unwrap_or_default().to_owned(),
        )),
        (next, _) => next.clone(),
    };
    let next_cursor =
        next.as_ref().map(|k| call.app.cursors.encode(&binding(call, &filters_digest(call)), k));
    let more = if next_cursor.is_some() { "; more follow (pass meta.next_cursor)" } else { "" };
    let cut = if page.truncated { " (page shortened to stay under 128 KiB)" } else { "" };
    Output {
        next_cursor,
        truncated: page.truncated,
        ..Output::new(keyed(key, Value::Array(page.items)), format!("{count} {what}{cut}{more}"))
    }
}

/// Iterates a keyed map in the list's order from a start bound: newest first (the reference's
/// order), or oldest first with the `oldest-first` variant.
pub fn in_order<'a, T>(
    call: &Call,
    map: Option<&'a std::collections::BTreeMap<Key, T>>,
    start: &Bound<Key>,
) -> Box<dyn Iterator<Item = (&'a Key, &'a T)> + 'a> {
    match map {
        None => Box::new(std::iter::empty()),
        Some(map) if call.app.variants.oldest_first() => {
            Box::new(map.range((start.clone(), Bound::Unbounded)))
        }
        Some(map) => Box::new(map.range((Bound::Unbounded, start.clone())).rev()),
    }
}

/// A new resource ID: prefix and 20 random alphanumerics.
pub fn new_id(prefix: &str) -> String {
    use rand::Rng;
    use rand::distr::Alphanumeric;
    let tail: String = rand::rng().sample_iter(&Alphanumeric).take(20).map(char::from).collect();
    format!("{prefix}_{tail}")
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A single item that alone would exceed 128 KiB cannot be cut (LIM-6).
pub fn single(call: &Call, key: &str, item: Value, summary: String) -> Result<Output, ToolError> {
    if json_len(&item) + ENVELOPE_RESERVE > MAX_STRUCTURED_BYTES && !call.app.defects.no_truncation() {
        return Err(ErrorCode::OutputTooLarge.into());
    }
    Ok(Output::new(keyed(key, item), summary))
}

/// `{ key: value }` without `json!`, which would copy `value` through `to_value`.
fn keyed(key: &str, value: Value) -> Value {
    Value::Object(serde_json::Map::from_iter([(key.to_owned(), value)]))
}
