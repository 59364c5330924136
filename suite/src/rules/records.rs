//! Rules on the records an answer serves, whatever surface served them, run by the judge on every
//! exchange (scenarios, matrices and `fuzz` alike), so a wrong record is seen wherever it shows up
//! and not only where a scenario looks for it:
//!
//! - no record of a tenant the caller is not a member of, on any surface that answers with
//!   records (a tool's data and text, a resource read or listed, a prompt, a completion): AUTH-4,
//!   AUTH-7 where the caller's only tie to that tenant is a revoked membership, AUTH-5 where the
//!   call addressed a restaurant of the caller's own ([`Tenancy`], from the dataset);
//! - a record addressed by its ID is that record, and a restaurant's records are that restaurant's
//!   (AUTH-5);
//! - every item of a filtered list meets the filters (PAG-4: the walk under those filters yields
//!   their items, and no other).
//!
//! Each is sound for every reading the seed allows: the dataset's memberships are an upper bound
//! (a revocation made during the run only narrows them; records created during the run are not
//! the dataset's, so never judged), and a bound of a range is not judged on its edge (inclusive or
//! exclusive is the server's).

use std::collections::{HashMap, HashSet};

use chataigne_contract::dataset::Dataset;
use chataigne_contract::tools::Role;
use chataigne_contract::{DEFAULT_LIMIT, MAX_LIMIT, MAX_MESSAGE_LIMIT, ToolName};
use serde_json::Value;

use crate::client::Exchange;

/// AUTH-4: data of a tenant outside the caller's memberships.
pub const FOREIGN: &str = "AUTH-4";
/// AUTH-7: data the caller could see only through a revoked membership.
pub const REVOKED: &str = "AUTH-7";
/// AUTH-5: a record served through a restaurant that does not own it.
pub const NOT_OWNED: &str = "AUTH-5";
/// AUTH-6: a tool served to a role below the tool's.
pub const ROLE: &str = "AUTH-6";
/// AUTH-3: a tool served to a token without the tool's scope.
pub const SCOPE: &str = "AUTH-3";

/// For each persona of the dataset, the IDs (as the server names them) of every record of the
/// tenants it is not a member of, each with the clause a leak of it breaks.
#[derive(Debug, Default)]
pub struct Tenancy {
    foreign: HashMap<String, HashMap<String, &'static str>>,
    /// Every dataset restaurant, as the server names it: the call addressed one of these.
    restaurants: HashSet<String>,
    /// Each dataset restaurant's organization, as the server names both.
    organization_of: HashMap<String, String>,
    /// Each persona's role per organization (live memberships only), as the server names it.
    roles: HashMap<String, HashMap<String, Role>>,
    /// Each persona's scopes.
    scopes: HashMap<String, Vec<String>>,
}

impl Tenancy {
    /// `to_server`: a dataset ID as the server names it (the profile's `id_map`).
    pub fn new(dataset: &Dataset, to_server: impl Fn(&str) -> String) -> Tenancy {
        let mut tenancy = Tenancy::default();
        for r in &dataset.restaurants {
            tenancy.restaurants.insert(to_server(&r.id));
            tenancy.organization_of.insert(to_server(&r.id), to_server(&r.organization_id));
        }
        for persona in &dataset.personas {
            let roles = dataset
                .memberships
                .iter()
                .filter(|m| m.user_id == persona.user_id && !m.revoked)
                .map(|m| (to_server(&m.organization_id), m.role))
                .collect();
            tenancy.roles.insert(persona.persona.clone(), roles);
            tenancy.scopes.insert(persona.persona.clone(), persona.scopes.clone());
            let of_user = dataset.memberships.iter().filter(|m| m.user_id == persona.user_id);
            let (revoked, live): (Vec<_>, Vec<_>) = of_user.partition(|m| m.revoked);
            let member = |org: &str| live.iter().any(|m| m.organization_id == org);
            let clause_of = |org: &str| {
                if member(org) {
                    None
                } else if revoked.iter().any(|m| m.organization_id == org) {
                    Some(REVOKED)
                } else {
                    Some(FOREIGN)
                }
            };
            let mut ids = HashMap::new();
            let mut add = |id: &str, clause| {
                ids.insert(to_server(id), clause);
            };
            let mut restaurant_clause = HashMap::new();
            for o in &dataset.organizations {
                if let Some(c) = clause_of(&o.id) {
                    add(&o.id, c);
                }
            }
            for r in &dataset.restaurants {
                if let Some(c) = clause_of(&r.organization_id) {
                    add(&r.id, c);
                    restaurant_clause.insert(r.id.as_str(), c);
                }
            }
            let of = |rid: &str| restaurant_clause.get(rid).copied();
            for (id, rid) in dataset
                .orders
                .iter()
                .map(|o| (&o.id, &o.restaurant_id))
                .chain(dataset.conversations.iter().map(|c| (&c.id, &c.restaurant_id)))
                .chain(dataset.transcripts.iter().map(|t| (&t.id, &t.restaurant_id)))
                .chain(dataset.instructions.iter().map(|i| (&i.id, &i.restaurant_id)))
            {
                if let Some(c) = of(rid) {
                    add(id, c);
                }
            }
            let conversation_of: HashMap<&str, &str> =
                dataset.conversations.iter().map(|c| (c.id.as_str(), c.restaurant_id.as_str())).collect();
            for m in &dataset.messages {
                if let Some(c) = conversation_of.get(m.conversation_id.as_str()).and_then(|rid| of(rid)) {
                    add(&m.id, c);
                }
            }
            tenancy.foreign.insert(persona.persona.clone(), ids);
        }
        tenancy
    }
}

/// The methods whose answers serve records (not the catalogues of tools, prompts and templates,
/// whose descriptions may name the dataset's IDs as examples).
const SERVING: &[&str] =
    &["tools/call", "resources/read", "resources/list", "prompts/get", "completion/complete"];

/// A success of a method that serves records, to a persona with records it must not see under
/// `clause`: [`NOT_OWNED`] when the request addressed a restaurant of the caller's own,
/// otherwise [`FOREIGN`] or [`REVOKED`] (so one exchange is judged under one of the three for
/// each record it could leak).
pub fn applies_tenancy(ex: &Exchange, tenancy: &Tenancy, clause: &'static str) -> bool {
    let Some(ids) = ex.persona.as_deref().and_then(|p| tenancy.foreign.get(p)) else { return false };
    if !SERVING.contains(&ex.method.as_str()) || served(ex).is_none() {
        return false;
    }
    match (clause, addressed_own(ex, tenancy, ids)) {
        (NOT_OWNED, own) => own && !ids.is_empty(),
        (_, true) => false,
        (c, false) => ids.values().any(|v| *v == c),
    }
}

/// What the answer served: a tool's result that is not an error, or a JSON-RPC result.
fn served(ex: &Exchange) -> Option<&Value> {
    let result = ex.result()?;
    if ex.method == "tools/call" && ex.is_error() {
        return None;
    }
    Some(result)
}

/// Whether the request named a restaurant of the dataset that the caller is a member of.
fn addressed_own(ex: &Exchange, tenancy: &Tenancy, foreign: &HashMap<String, &'static str>) -> bool {
    addressed_restaurants(ex).iter().any(|r| tenancy.restaurants.contains(r) && !foreign.contains_key(r))
}

/// The first record the answer holds that the caller must not see under `clause` (for
/// [`NOT_OWNED`], of any tenant not its own).
pub fn foreign_record(ex: &Exchange, tenancy: &Tenancy, clause: &'static str) -> Option<String> {
    let ids = tenancy.foreign.get(ex.persona.as_deref()?)?;
    // A prompt or a completion may say back what it was given (a template filled with the
    // caller's own argument tells nothing of the record); a tool or a resource that serves a
    // record it was asked for has served it.
    let mut echoed = HashSet::new();
    if matches!(ex.method.as_str(), "prompts/get" | "completion/complete")
        && let Some(params) = request_params(ex)
    {
        each_string(&params, &mut |s| echoed.extend(words(s).map(str::to_owned)));
    }
    let mut found = None;
    each_string(served(ex)?, &mut |s| {
        if found.is_none() {
            found = words(s)
                .find(|w| {
                    ids.get(*w).is_some_and(|c| clause == NOT_OWNED || *c == clause) && !echoed.contains(*w)
                })
                .map(str::to_owned);
        }
    });
    let id = found?;
    let whose = match clause {
        NOT_OWNED => "of another tenant, through a restaurant of the caller's own",
        REVOKED => "of a tenant the caller lost access to (a revoked membership)",
        _ => "of a tenant the caller is not a member of",
    };
    Some(format!(
        "{} served {id}, a record {whose} ({})",
        ex.tool.as_deref().unwrap_or(&ex.method),
        ex.request_id().unwrap_or("no request_id")
    ))
}

/// The restaurants the request named: a `restaurant_id` argument, or an ID inside a URI or a
/// prompt's arguments.
fn addressed_restaurants(ex: &Exchange) -> Vec<String> {
    let Some(params) = request_params(ex) else { return Vec::new() };
    let mut out = Vec::new();
    each_string(&params, &mut |s| out.extend(words(s).filter(|w| w.starts_with("rst_")).map(str::to_owned)));
    out
}

/// The request's `params`, when the body the exchange kept is whole JSON.
fn request_params(ex: &Exchange) -> Option<Value> {
    let body: Value = serde_json::from_str(&ex.request_body).ok()?;
    body.get("params").cloned()
}

/// A tool call's arguments, when the body the exchange kept is whole JSON.
fn arguments(ex: &Exchange) -> Option<Value> {
    request_params(ex)?.get("arguments").cloned()
}

fn each_string(v: &Value, f: &mut impl FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|v| each_string(v, f)),
        Value::Object(o) => o.iter().for_each(|(k, v)| {
            f(k);
            each_string(v, f);
        }),
        _ => {}
    }
}

/// The ID-like words of a text: runs of letters, digits and `_` (an ID is a prefix and its own
/// rest, never split by punctuation).
fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| w.len() > 4)
}

/// The data of a tool's success, with its arguments.
fn success(ex: &Exchange) -> Option<(&str, &serde_json::Map<String, Value>, Value)> {
    if ex.method != "tools/call" || !super::is_success(ex) {
        return None;
    }
    let data = ex.structured()?.get("data")?.as_object()?;
    Some((ex.tool.as_deref()?, data, arguments(ex)?))
}

/// The ID arguments a record of the answer must match: `order_id` → the `order`, and so on.
const ADDRESSED: &[(&str, &str)] = &[
    ("order_id", "order"),
    ("conversation_id", "conversation"),
    ("transcript_id", "transcript"),
    ("restaurant_id", "restaurant"),
];

/// A read that names a record or a restaurant, served.
pub fn applies_addressed(ex: &Exchange) -> bool {
    success(ex).is_some_and(|(tool, _, args)| {
        !tool.starts_with("create_") && ADDRESSED.iter().any(|(arg, _)| args.get(arg).is_some())
    })
}

/// AUTH-5: the record served is not the one addressed, or a record of the restaurant addressed
/// belongs to another.
pub fn addressed_record(ex: &Exchange) -> Option<String> {
    let (tool, data, args) = success(ex)?;
    let rid = ex.request_id().unwrap_or("no request_id");
    for (arg, member) in ADDRESSED {
        let (Some(want), Some(record)) = (args.get(arg).and_then(Value::as_str), data.get(*member)) else {
            continue;
        };
        if let Some(got) = record.get("id").and_then(Value::as_str)
            && got != want
        {
            return Some(format!("{tool} asked for {arg} {want} and served the {member} {got} ({rid})"));
        }
    }
    let restaurant = args.get("restaurant_id").and_then(Value::as_str)?;
    let records = data.values().flat_map(|v| match v {
        Value::Array(items) => items.iter().collect::<Vec<_>>(),
        other => vec![other],
    });
    for record in records {
        if let Some(other) = record.get("restaurant_id").and_then(Value::as_str)
            && other != restaurant
        {
            let id = record.get("id").and_then(Value::as_str).unwrap_or("a record");
            return Some(format!(
                "{tool} of restaurant {restaurant} served {id} of restaurant {other} ({rid})"
            ));
        }
    }
    None
}

/// The filters of each list, as (argument, the item's member it selects on).
const FILTERS: &[(&str, &str)] =
    &[("status", "status"), ("channel", "channel"), ("organization_id", "organization_id")];

/// A list served under a filter.
pub fn applies_filters(ex: &Exchange) -> bool {
    success(ex).is_some_and(|(tool, _, args)| {
        tool.starts_with("list_")
            && (FILTERS.iter().any(|(arg, _)| args.get(arg).is_some())
                || args.get("created_from").is_some()
                || args.get("created_to").is_some())
    })
}

/// PAG-4: an item of a filtered list that the filters exclude (a range's own edges are not
/// judged: inclusive or exclusive is the server's reading).
pub fn filtered_items(ex: &Exchange) -> Option<String> {
    use chataigne_contract::time::parse_timestamp;
    let (tool, data, args) = success(ex)?;
    let items = data.values().find_map(Value::as_array)?;
    let instant = |v: Option<&Value>| v.and_then(Value::as_str).and_then(parse_timestamp);
    let (from, to) = (instant(args.get("created_from")), instant(args.get("created_to")));
    let rid = ex.request_id().unwrap_or("no request_id");
    for item in items {
        let id = item.get("id").and_then(Value::as_str).unwrap_or("an item");
        for (arg, member) in FILTERS {
            let Some(want) = args.get(*arg) else { continue };
            let Some(got) = item.get(*member).and_then(Value::as_str) else { continue };
            let allowed = match want {
                Value::String(w) => w == got,
                Value::Array(ws) => ws.iter().any(|w| w.as_str() == Some(got)),
                _ => true,
            };
            if !allowed {
                return Some(format!(
                    "{tool} filtered on {arg} {want} listed {id} with {member} \"{got}\" ({rid})"
                ));
            }
        }
        if let Some(at) = instant(item.get("created_at")) {
            let outside = from.is_some_and(|f| at < f) || to.is_some_and(|t| at > t);
            if outside {
                return Some(format!(
                    "{tool} filtered on a creation range listed {id}, created outside it ({rid})"
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;

/// A tool's success to a persona of the dataset: the tool, and the persona.
fn served_tool<'a>(ex: &'a Exchange, tenancy: &'a Tenancy) -> Option<(ToolName, &'a str)> {
    if ex.method != "tools/call" || !super::is_success(ex) {
        return None;
    }
    let persona = ex.persona.as_deref().filter(|p| tenancy.scopes.contains_key(*p))?;
    Some((ToolName::parse(ex.tool.as_deref()?)?, persona))
}

/// What a served answer needed a scope for, the scope, and the persona it was served to: a
/// tool's own; a resource read naming a restaurant of the dataset stands for `get_restaurant`.
fn needed_scope<'a>(ex: &'a Exchange, tenancy: &'a Tenancy) -> Option<(&'static str, &'static str, &'a str)> {
    if let Some((tool, persona)) = served_tool(ex, tenancy) {
        return Some((tool.as_str(), tool.scope(), persona));
    }
    if ex.method != "resources/read" || served(ex).is_none() {
        return None;
    }
    let persona = ex.persona.as_deref().filter(|p| tenancy.scopes.contains_key(*p))?;
    let uri = request_params(ex)?.get("uri")?.as_str()?.to_owned();
    words(&uri).any(|w| tenancy.restaurants.contains(w)).then_some(())?;
    let tool = ToolName::GetRestaurant;
    Some(("resources/read of a restaurant", tool.scope(), persona))
}

/// A tool served to a persona of the dataset (its scopes are the dataset's), or a restaurant read
/// as a resource.
pub fn applies_scope(ex: &Exchange, tenancy: &Tenancy) -> bool {
    needed_scope(ex, tenancy).is_some()
}

/// AUTH-3: the scope is not among the persona's, and the answer was served (a replay, a page
/// reached through a cursor, a resource alike).
pub fn served_without_scope(ex: &Exchange, tenancy: &Tenancy) -> Option<String> {
    let (what, scope, persona) = needed_scope(ex, tenancy)?;
    let scopes = tenancy.scopes.get(persona)?;
    (!scopes.iter().any(|s| s == scope)).then(|| {
        format!(
            "{what} served to {persona}, whose token lacks {scope} ({})",
            ex.request_id().unwrap_or("no request_id")
        )
    })
}

/// The organization a write acts in, as the server names it, and the role the persona holds
/// there (`None`: no live membership, the tenancy rules' concern).
fn role_at(ex: &Exchange, tenancy: &Tenancy, persona: &str) -> Option<(String, Role)> {
    let args = arguments(ex)?;
    let org = match args.get("restaurant_id").and_then(Value::as_str) {
        Some(r) => tenancy.organization_of.get(r)?.clone(),
        None => args.get("organization_id").and_then(Value::as_str)?.to_owned(),
    };
    let role = *tenancy.roles.get(persona)?.get(&org)?;
    Some((org, role))
}

/// A tool with a minimum role served to a persona with a live membership in the organization it
/// acts in (a record created during the run is not the dataset's: not judged).
pub fn applies_role(ex: &Exchange, tenancy: &Tenancy) -> bool {
    served_tool(ex, tenancy)
        .is_some_and(|(tool, persona)| tool.min_role().is_some() && role_at(ex, tenancy, persona).is_some())
}

/// AUTH-6: the persona's role in that organization is below the tool's.
pub fn served_below_role(ex: &Exchange, tenancy: &Tenancy) -> Option<String> {
    let (tool, persona) = served_tool(ex, tenancy)?;
    let needed = tool.min_role()?;
    let (org, role) = role_at(ex, tenancy, persona)?;
    (role < needed).then(|| {
        format!(
            "{} served to {persona}, {} of {org} (it needs {}) ({})",
            tool.as_str(),
            role.as_str(),
            needed.as_str(),
            ex.request_id().unwrap_or("no request_id")
        )
    })
}

/// The items of a list's page: the first array of `data` (`orders`, `restaurants`, …).
fn page_items(data: &serde_json::Map<String, Value>) -> Option<&Vec<Value>> {
    data.values().find_map(Value::as_array)
}

/// A page of a list (`list_*`, whose input has `limit`) or of a conversation's messages, served.
pub fn applies_page(ex: &Exchange) -> bool {
    success(ex).is_some_and(|(tool, _, _)| {
        tool == "get_conversation"
            || ToolName::parse(tool).is_some_and(|t| t.input_schema().pointer("/properties/limit").is_some())
    })
}

/// PAG-1 ("20 items by default, 50 maximum"): without `limit` a page holds at most 20 items, and
/// a first page of fewer with more following was not cut for its size (LIM-5) or it is a smaller
/// default; with `limit` it holds at most that many. PAG-3: an empty `next_cursor` is a cursor,
/// not its absence.
pub fn page_size(ex: &Exchange) -> Option<String> {
    let (tool, data, args) = success(ex)?;
    if tool == "get_conversation" {
        return None;
    }
    let s = ex.structured()?;
    let n = page_items(data)?.len();
    let more = s.pointer("/meta/next_cursor").and_then(Value::as_str).is_some_and(|c| !c.is_empty());
    let truncated = s.pointer("/meta/truncated").and_then(Value::as_bool) == Some(true);
    let rid = ex.request_id().unwrap_or("no request_id");
    match args.get("limit").map(Value::as_u64) {
        None if n > DEFAULT_LIMIT => Some(format!("{tool} without `limit`: a page of {n} items ({rid})")),
        None if n < DEFAULT_LIMIT && more && !truncated && args.get("cursor").is_none() => Some(format!(
            "{tool} without `limit`: a first page of {n} items with more following, not cut for its size \
             (the default is {DEFAULT_LIMIT}) ({rid})"
        )),
        Some(Some(limit)) if (1..=MAX_LIMIT as u64).contains(&limit) && n as u64 > limit => {
            Some(format!("{tool} with `limit` {limit}: a page of {n} items ({rid})"))
        }
        _ => None,
    }
}

/// A page of a list that says it was cut for its size (`meta.truncated: true`).
pub fn applies_truncated(ex: &Exchange) -> bool {
    applies_page(ex)
        && ex.tool.as_deref() != Some("get_conversation")
        && ex
            .structured()
            .is_some_and(|s| s.pointer("/meta/truncated").and_then(Value::as_bool) == Some(true))
}

/// LIM-5 ("fewer items + `truncated: true`"): a page cut for its size holds fewer items than
/// were asked for (`limit`, or the default of 20); a full page was not cut.
pub fn truncated_in_full(ex: &Exchange) -> Option<String> {
    let (tool, data, args) = success(ex)?;
    let n = page_items(data)?.len() as u64;
    let asked = args.get("limit").and_then(Value::as_u64).unwrap_or(DEFAULT_LIMIT as u64);
    (n >= asked).then(|| {
        format!(
            "{tool}: a page of {n} items (all {asked} asked for) says truncated: true ({})",
            ex.request_id().unwrap_or("no request_id")
        )
    })
}

/// A page that says more follows.
pub fn applies_next_cursor(ex: &Exchange) -> bool {
    applies_page(ex)
        && ex.structured().is_some_and(|s| s.pointer("/meta/next_cursor").is_some_and(|c| !c.is_null()))
}

/// PAG-3: `meta.next_cursor` is an empty string (a last page has none).
pub fn empty_next_cursor(ex: &Exchange) -> Option<String> {
    let s = ex.structured()?;
    (s.pointer("/meta/next_cursor").and_then(Value::as_str) == Some("")).then(|| {
        format!(
            "{}: meta.next_cursor is an empty string (a last page has none) ({})",
            ex.tool.as_deref().unwrap_or("a list"),
            ex.request_id().unwrap_or("no request_id")
        )
    })
}

/// PAG-8 ("100 messages maximum"): at most `message_limit` messages, never over 100 (a larger
/// `message_limit` may be clamped; 50 by default is the contract's, checked by its scenarios).
pub fn message_count(ex: &Exchange) -> Option<String> {
    let (tool, data, args) = success(ex)?;
    if tool != "get_conversation" {
        return None;
    }
    let n = data.get("messages").and_then(Value::as_array)?.len() as u64;
    let asked = args.get("message_limit").and_then(Value::as_u64).filter(|l| *l >= 1);
    let most = asked.map_or(MAX_MESSAGE_LIMIT as u64, |l| l.min(MAX_MESSAGE_LIMIT as u64));
    (n > most).then(|| {
        format!(
            "get_conversation{}: {n} messages in one answer (at most {most}) ({})",
            asked.map(|l| format!(" with message_limit {l}")).unwrap_or_default(),
            ex.request_id().unwrap_or("no request_id")
        )
    })
}

/// PAG-4 ("monotone in the list's timestamp (orders: `created_at`)"), on one page of orders: the
/// items are ordered by `created_at`, ascending or descending, ties in any order. Only the
/// orders' timestamp is the contract's: other lists may go by another key (an SDK server lists
/// restaurants by ID), held to one order across their walks by the scenarios.
pub fn page_order(ex: &Exchange) -> Option<String> {
    use chataigne_contract::time::parse_timestamp;
    let (tool, data, _) = success(ex)?;
    if tool != "list_orders" {
        return None;
    }
    let items = page_items(data)?;
    if items.len() < 3 {
        return None;
    }
    let times: Vec<i64> = items
        .iter()
        .map(|i| i.get("created_at").and_then(Value::as_str).and_then(parse_timestamp))
        .collect::<Option<_>>()?;
    let monotone = times.windows(2).all(|w| w[0] >= w[1]) || times.windows(2).all(|w| w[0] <= w[1]);
    (!monotone).then(|| {
        format!(
            "list_orders: a page of {} orders not ordered by created_at ({})",
            items.len(),
            ex.request_id().unwrap_or("no request_id")
        )
    })
}

/// A page reached through a cursor: the cursor came from a page that said more items follow.
/// Not under a `status` filter (an order or a restaurant may leave that status during a walk);
/// nothing else removes an item from a list or a message from a conversation.
pub fn applies_continuation(ex: &Exchange) -> bool {
    applies_page(ex)
        && success(ex)
            .is_some_and(|(_, _, args)| args.get("cursor").is_some() && args.get("status").is_none())
}

/// PAG-3 ("`next_cursor` is present iff more items follow"): the page a cursor led to is empty,
/// so the page that gave the cursor had no more items to follow.
pub fn empty_continuation(ex: &Exchange) -> Option<String> {
    let (tool, data, _) = success(ex)?;
    let items =
        if tool == "get_conversation" { data.get("messages")?.as_array()? } else { page_items(data)? };
    items.is_empty().then(|| {
        format!(
            "{tool}: the page a next_cursor led to is empty (the page before it said more items followed) ({})",
            ex.request_id().unwrap_or("no request_id")
        )
    })
}

/// A tool's success.
pub fn applies_tool_success(ex: &Exchange) -> bool {
    ex.method == "tools/call" && super::is_success(ex)
}

/// ENV-1 ("les outils renvoient un court texte lisible et des données structurées"): a success
/// carries one text a person can read, on every page and every replay alike. A text block that
/// is a JSON object or array is a serialization of the data (MCP lets an SDK add it for clients
/// without structured output) and is not counted; of the others exactly one, not empty: a second
/// prose block (the data again as a table, a second summary) is not the short text the seed gives.
pub fn no_text(ex: &Exchange) -> Option<String> {
    let json = |t: &str| serde_json::from_str::<Value>(t).is_ok_and(|v| v.is_object() || v.is_array());
    let prose: Vec<&str> = ex.texts().into_iter().filter(|t| !json(t)).collect();
    let tool = ex.tool.as_deref().unwrap_or("a tool");
    let rid = ex.request_id().unwrap_or("no request_id");
    match prose.as_slice() {
        [one] if !one.trim().is_empty() => None,
        [] | [_] => Some(format!("{tool}: a success without a text block a person can read ({rid})")),
        more => Some(format!(
            "{tool}: a success with {} text blocks besides any JSON, where the contract gives one short text ({rid})",
            more.len()
        )),
    }
}

/// Analytics metrics that add up over periods: a period's count or sum is its days' (distinct
/// customers, averages and medians do not).
const ADDITIVE: &[&str] = &[
    "orders_count",
    "revenue_cents",
    "completed_orders",
    "conversations_count",
    "messages_received",
    "messages_sent",
];

/// Analytics served with both totals and a series.
pub fn applies_totals(ex: &Exchange) -> bool {
    success(ex).is_some_and(|(tool, data, _)| {
        tool == "get_analytics"
            && data.get("totals").is_some_and(Value::is_object)
            && data.get("series").is_some_and(Value::is_array)
    })
}

/// LIM-1 (the range is `from..=to`, both days included): an additive metric's total is the sum of
/// the series' periods, so totals and series cover the same days.
pub fn totals_add_up(ex: &Exchange) -> Option<String> {
    let (_, data, _) = success(ex)?;
    let totals = data.get("totals")?.as_object()?;
    let series = data.get("series")?.as_array()?;
    for metric in ADDITIVE {
        let Some(total) = totals.get(*metric).and_then(Value::as_f64) else { continue };
        let values: Option<Vec<f64>> = series
            .iter()
            .map(|p| p.get("values").and_then(|v| v.get(*metric)).and_then(Value::as_f64))
            .collect();
        let Some(values) = values else { continue };
        let sum: f64 = values.iter().sum();
        if (sum - total).abs() > 0.5 {
            return Some(format!(
                "get_analytics: the total of {metric} is {total}, its series adds up to {sum} ({})",
                ex.request_id().unwrap_or("no request_id")
            ));
        }
    }
    None
}

/// The state writes and the record whose status they set.
const STATE_WRITES: &[(&str, &str)] =
    &[("update_order_status", "order"), ("set_restaurant_status", "restaurant")];

/// A state write served (not a replay of something else: these writes take no key).
pub fn applies_state_write(ex: &Exchange) -> bool {
    success(ex).is_some_and(|(tool, data, _)| {
        STATE_WRITES.iter().any(|(t, record)| *t == tool && data.get(*record).is_some_and(Value::is_object))
    })
}

/// PRE-2 ("after a successful write, every read of the order shows what the write set"): the
/// write's own answer is the first such read; the record it shows has the status asked for.
pub fn write_shows_its_state(ex: &Exchange) -> Option<String> {
    let (tool, data, args) = success(ex)?;
    let (_, record) = STATE_WRITES.iter().find(|(t, _)| *t == tool)?;
    let asked = args.get("status")?.as_str()?;
    let shown = data.get(*record)?.get("status")?.as_str()?;
    (shown != asked).then(|| {
        format!(
            "{tool} to {asked} answered success with the {record} in status {shown} ({})",
            ex.request_id().unwrap_or("no request_id")
        )
    })
}

/// PAG-4 ("every item exactly once"), on one page: no item ID twice (a search that lists a
/// record once per match, a join that repeats a row).
pub fn repeated_item(ex: &Exchange) -> Option<String> {
    let (tool, data, _) = success(ex)?;
    let items =
        if tool == "get_conversation" { data.get("messages")?.as_array()? } else { page_items(data)? };
    let mut seen = HashSet::new();
    let twice = items.iter().filter_map(|i| i.get("id")?.as_str()).find(|id| !seen.insert(*id))?;
    Some(format!("{tool}: {twice} twice on one page ({})", ex.request_id().unwrap_or("no request_id")))
}
