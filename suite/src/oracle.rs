//! The differential oracle: the reference server in-process (the mock-server library on the
//! run's dataset, its own clock, no rate limit), to which every state-changing call the suite
//! makes is replayed as the same persona, so that where the contract fixes the answer — a read
//! of a state the scenario itself set up, a replay, a write's answer — the target's `data` can
//! be compared with the reference's, up to the contract's freedoms ([`FREEDOMS`], the one table;
//! docs/CONTRACT.md "Differential oracle" quotes the seed for each).
//!
//! What a scenario compares is only what it set up ([`Shadow`], one per scenario): the orders it
//! moved (the scheduler's claims give each to one scenario of the run) and the records it
//! created (their IDs paired with the reference's in the order of creation). Before its first
//! write to an order, the reference's copy of that order is seeded from the target's state as
//! the scenario observed it, so a rerun against a server that still holds earlier runs' writes,
//! and scenarios running side by side, give the same verdicts (docs/DECISIONS.md).
//!
//! The oracle runs only against a server whose data is the published dataset (checked once at
//! start, [`applicable`]); otherwise the run says why once and compares nothing (never a pass).

// Without the reference server (feature `embedded` off) there is nothing to replay to: the
// comparison's machinery is built and tested, but nothing in the binary calls it.
#![cfg_attr(not(feature = "embedded"), allow(dead_code))]

use std::collections::HashMap;
#[cfg(feature = "embedded")]
use std::sync::Arc;

use serde_json::{Value, json};

use crate::client::{Exchange, McpClient};

/// What the contract leaves to the server in an answer's `data`: the oracle never compares it.
/// Each row: the member names it covers, how it is treated, and the seed's words that leave it
/// free (docs/CONTRACT.md repeats the table with the French text).
pub struct Freedom {
    pub name: &'static str,
    pub members: fn(&str) -> bool,
    pub treatment: Treatment,
    /// The seed's own words (contract-fr.txt) that leave it to the server.
    pub seed: &'static str,
}

/// How a freedom is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Treatment {
    /// Not compared at all (a value: a member of that name holding an object is compared).
    Ignored,
    /// An ID the server generated: paired with the reference's, in the order of creation, and
    /// then held to that pairing (a replay must give the same one).
    Paired,
    /// Items are matched by ID, never by position.
    MatchedById,
}

/// The contract's freedoms, in one place.
pub const FREEDOMS: &[Freedom] = &[
    Freedom {
        name: "order among ties",
        members: |_| false,
        treatment: Treatment::MatchedById,
        seed: "Les curseurs sont opaques. (the seed's lists, `\"orders\": []`, name no order)",
    },
    Freedom {
        name: "generated ids",
        members: is_id_member,
        treatment: Treatment::Paired,
        seed: "\"order_id\": \"ord_...\" / \"request_id\": \"req_...\" (an ID is a prefix and the server's own rest)",
    },
    Freedom {
        name: "timestamps",
        members: |m| m.ends_with("_at"),
        treatment: Treatment::Ignored,
        seed: "(silent: the seed states durations — « pendant 24 heures », « 15 secondes » — never an instant)",
    },
    Freedom {
        name: "request_ids",
        members: |m| m == "request_id",
        treatment: Treatment::Ignored,
        seed: "Conservez request_id pour signaler un problème.",
    },
    Freedom {
        name: "a new restaurant's status",
        // Applied to created records only (`without_initial_status`): a restaurant's status is
        // compared everywhere else.
        members: |_| false,
        treatment: Treatment::Ignored,
        seed: "(silent: « création de restaurant » takes no status, and the seed names none for a new restaurant)",
    },
    Freedom {
        name: "texts",
        members: |m| matches!(m, "text" | "message" | "summary"),
        treatment: Treatment::Ignored,
        seed: "Les outils renvoient un court texte lisible et des données structurées ; textes de messages client […] ne sont jamais envoyés aux logs",
    },
];

/// `value` without the status of any restaurant in it (an object with `organization_id` and
/// `timezone`, the contract's restaurant): the freedom "a new restaurant's status" for the records
/// a scenario created, whose later status follows from that first one.
fn without_initial_status(value: &Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                if map.contains_key("organization_id") && map.contains_key("timezone") {
                    map.remove("status");
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value = value.clone();
    strip(&mut value);
    value
}

/// A record's ID or a reference to one (`request_id` is a call's, its own freedom).
fn is_id_member(member: &str) -> bool {
    member == "id" || (member.ends_with("_id") && member != "request_id")
}

fn freedom_of(member: &str) -> Option<Treatment> {
    FREEDOMS.iter().find(|f| (f.members)(member)).map(|f| f.treatment)
}

/// The target's generated IDs paired with the reference's, in the order of creation.
#[derive(Debug, Default, Clone)]
pub struct IdPairs {
    to_reference: HashMap<String, String>,
    to_target: HashMap<String, String>,
}

impl IdPairs {
    /// Whether target ID `t` may stand for reference ID `r`; `fresh`: the reference created `r`
    /// in this very answer, so an unpaired `t` is paired with it.
    fn check(&mut self, t: &str, r: &str, fresh: bool) -> Result<(), String> {
        match (self.to_reference.get(t), self.to_target.get(r)) {
            (Some(pr), _) if pr == r => Ok(()),
            _ if t == r && !self.to_target.contains_key(r) => Ok(()),
            (Some(pr), _) => Err(format!("{t} stands for the reference's {pr}, here for {r}")),
            (None, Some(pt)) => Err(format!(
                "the reference answered {r}, the record the target first answered as {pt}; the target answered {t}"
            )),
            (None, None) if fresh => {
                self.to_reference.insert(t.to_owned(), r.to_owned());
                self.to_target.insert(r.to_owned(), t.to_owned());
                Ok(())
            }
            (None, None) => Err(format!("{t} where the reference answered {r}")),
        }
    }

    /// `value` with every target ID the scenario created replaced by the reference's.
    pub fn to_reference(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.to_reference.get(s).cloned().unwrap_or_else(|| s.clone())),
            Value::Array(a) => Value::Array(a.iter().map(|v| self.to_reference(v)).collect()),
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, v)| (k.clone(), self.to_reference(v))).collect())
            }
            other => other.clone(),
        }
    }

    pub fn created(&self, target_id: &str) -> bool {
        self.to_reference.contains_key(target_id)
    }

    /// Whether the scenario created any record.
    pub fn any_created(&self) -> bool {
        !self.to_reference.is_empty()
    }
}

/// Every difference between the target's `data` and the reference's, up to [`FREEDOMS`]. Only
/// members both have are compared: a member the target lacks is ENV-7's (its data shape), an
/// extra one is the server's (open objects). `fresh`: the reference created records in this
/// answer, so new IDs pair up; otherwise every generated ID must keep its pairing.
pub fn compare(target: &Value, reference: &Value, ids: &mut IdPairs, fresh: bool) -> Vec<String> {
    let mut out = Vec::new();
    diff(target, reference, "data", ids, fresh, &mut out);
    out
}

fn diff(t: &Value, r: &Value, path: &str, ids: &mut IdPairs, fresh: bool, out: &mut Vec<String>) {
    match (t, r) {
        (Value::Object(to), Value::Object(ro)) => {
            for (member, rv) in ro {
                let Some(tv) = to.get(member) else { continue };
                let here = format!("{path}.{member}");
                match freedom_of(member) {
                    // A free member is a value: `message` holding an object is a record.
                    Some(Treatment::Ignored) if !rv.is_object() && !rv.is_array() => {}
                    Some(Treatment::Paired) => match (tv, rv) {
                        (Value::String(ts), Value::String(rs)) => {
                            if let Err(e) = ids.check(ts, rs, fresh) {
                                out.push(format!("{here}: {e}"));
                            }
                        }
                        _ => diff(tv, rv, &here, ids, fresh, out),
                    },
                    _ => diff(tv, rv, &here, ids, fresh, out),
                }
            }
        }
        (Value::Array(ta), Value::Array(ra)) => {
            let keyed = ra.iter().all(|v| v.get("id").and_then(Value::as_str).is_some());
            if keyed && !ra.is_empty() {
                // Order among ties is free: items are matched by ID; one the other page lacks
                // is not compared (pages of different orders hold different items).
                for ri in ra {
                    let rid = ri.get("id").and_then(Value::as_str).unwrap_or_default();
                    let twin = ta.iter().find(|ti| {
                        ti.get("id").and_then(Value::as_str).is_some_and(|tid| {
                            tid == rid || ids.to_reference.get(tid).is_some_and(|p| p == rid)
                        })
                    });
                    if let Some(ti) = twin {
                        diff(ti, ri, &format!("{path}[{rid}]"), ids, fresh, out);
                    }
                }
            } else if ta.len() != ra.len() {
                out.push(format!("{path}: {} items, the reference {}", ta.len(), ra.len()));
            } else {
                for (i, (ti, ri)) in ta.iter().zip(ra).enumerate() {
                    diff(ti, ri, &format!("{path}[{i}]"), ids, fresh, out);
                }
            }
        }
        _ if t == r => {}
        _ => out.push(format!("{path}: {} where the reference has {}", short(t), short(r))),
    }
}

fn short(v: &Value) -> String {
    let s = redacted(v).to_string();
    if s.len() > 120 { format!("{}…", s.chars().take(120).collect::<String>()) } else { s }
}

/// `v` with every free text replaced by its length: a finding never shows a message text.
pub fn redacted(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| match (freedom_of(k), v) {
                    (Some(Treatment::Ignored), Value::String(s))
                        if k != "request_id" && !k.ends_with("_at") =>
                    {
                        (k.clone(), json!(format!("({} bytes of text, not compared)", s.len())))
                    }
                    _ => (k.clone(), redacted(v)),
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(redacted).collect()),
        other => other.clone(),
    }
}

/// What a tools/call came back with, as far as state is concerned.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A success: its `data` (in dataset IDs), whether it said it was a replay, and whether it
    /// is the whole of what it lists (no `meta.next_cursor`, not `meta.truncated`).
    Success { data: Value, replayed: bool, complete: bool },
    /// A tool error that by the contract changed nothing (validation, authorization,
    /// not_found, conflict, rate_limit).
    Refused,
    /// No answer, or one after which the effect may or may not have happened (timeout,
    /// internal, dependency, a transport failure).
    Unknown,
}

impl Answer {
    /// `inbound` maps the server's IDs back to the dataset's.
    pub fn of(ex: &Exchange, inbound: impl Fn(&Value) -> Value) -> Answer {
        let Some(s) = ex.structured() else { return Answer::Unknown };
        if ex.is_error() {
            let category = s.pointer("/data/error/category").and_then(Value::as_str).unwrap_or_default();
            return match category {
                "validation" | "authentication" | "authorization" | "not_found" | "conflict"
                | "rate_limit" => Answer::Refused,
                _ => Answer::Unknown,
            };
        }
        match s.get("data") {
            Some(data) => Answer::Success {
                data: inbound(data),
                replayed: s.pointer("/meta/replayed").and_then(Value::as_bool).unwrap_or(false),
                complete: s.pointer("/meta/next_cursor").and_then(Value::as_str).is_none_or(str::is_empty)
                    && s.pointer("/meta/truncated").and_then(Value::as_bool) != Some(true),
            },
            None => Answer::Unknown,
        }
    }
}

/// A comparison made: the clause it is evidence for, and the difference if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub clause: &'static str,
    pub difference: Option<String>,
}

/// The clause a stale or wrong order status breaks (docs/DECISIONS.md: the state a precondition
/// is compared with must be the state reads show).
pub const STATE_CLAUSE: &str = "PRE-2";
/// The clause a created record or a replay that differs breaks (same data, same created IDs).
pub const CREATED_CLAUSE: &str = "IDEM-2";

/// The keyed writes that create a record (IDEM-1's four).
const CREATING: &[&str] = &["send_message", "create_instruction", "create_organization", "create_restaurant"];
/// For each keyed write that creates a record, the read that lists it in the scope the write
/// names (the scope's ID members are the write's own).
pub const READ_BACK: &[(&str, &str)] = &[
    ("send_message", "get_conversation"),
    ("create_instruction", "list_instructions"),
    ("create_organization", "list_organizations"),
    ("create_restaurant", "list_restaurants"),
];
/// Reads whose answers may hold records a scenario created.
const READS_OF_CREATED: &[&str] =
    &["get_conversation", "list_instructions", "list_organizations", "list_restaurants", "get_restaurant"];

/// Whether the oracle has anything to do with a call of `tool`: a write it replays or a read it
/// may compare. Every other call costs nothing (its answer is not even read).
pub fn concerns(tool: &str) -> bool {
    matches!(tool, "update_order_status" | "get_order" | "list_orders")
        || CREATING.contains(&tool)
        || READS_OF_CREATED.contains(&tool)
}

/// How far the reference's copy of an order is known to equal the target's, in one scenario.
#[derive(Debug, Clone, PartialEq)]
enum Known {
    /// Seeded from what the scenario observed, then moved by its replayed writes.
    Yes,
    /// A write whose effect is unknown: not compared again in this scenario.
    No,
}

/// One scenario's side of the oracle: what it observed, what it wrote and created, and the
/// calls that led there (shown with each difference).
#[derive(Debug, Default)]
pub struct Shadow {
    /// Order ID → the status the scenario last saw before it first wrote the order.
    observed: HashMap<String, String>,
    written: HashMap<String, Known>,
    /// Order ID → the persona that first wrote it: over stdio each persona has a server process
    /// of its own, so only that persona's reads show the write.
    writers: HashMap<String, String>,
    pub ids: IdPairs,
    calls: Vec<String>,
}

/// Arguments a finding may show: IDs and statuses, never a text or a key.
fn shown_args(args: &Value) -> String {
    let Some(o) = args.as_object() else { return String::new() };
    o.iter()
        .filter(|(k, _)| is_id_member(k) || k.contains("status") || *k == "limit")
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Shadow {
    /// Whether a call of `tool` needs the whole answer (a write to replay, a read to compare);
    /// otherwise [`Shadow::observe`] reads what it needs in place, and big pages are not copied.
    pub fn needs_answer(&self, tool: &str) -> bool {
        match tool {
            "get_order" | "list_orders" => !self.written.is_empty(),
            t if READS_OF_CREATED.contains(&t) => !self.ids.to_reference.is_empty(),
            _ => true,
        }
    }

    /// A read's orders, as observed before the scenario writes any: each one's status, in
    /// dataset IDs (`to_dataset`), is what the reference's copy is seeded with.
    pub fn observe(
        &mut self,
        persona: &str,
        tool: &str,
        args: &Value,
        ex: &Exchange,
        to_dataset: impl Fn(&str) -> String,
    ) {
        if ex.is_error() {
            return;
        }
        let seen = Answer::Success { data: Value::Null, replayed: false, complete: false };
        self.log(persona, tool, args, &seen, ex.request_id());
        let Some(data) = ex.structured().and_then(|s| s.get("data")) else { return };
        let one = data.get("order").into_iter();
        let many = data.get("orders").and_then(Value::as_array).into_iter().flatten();
        for item in one.chain(many) {
            let (Some(id), Some(status)) =
                (item.get("id").and_then(Value::as_str), item.get("status").and_then(Value::as_str))
            else {
                continue;
            };
            self.observed.insert(to_dataset(id), status.to_owned());
        }
    }

    fn log(&mut self, persona: &str, tool: &str, args: &Value, answer: &Answer, rid: Option<&str>) {
        let outcome = match answer {
            Answer::Success { replayed: true, .. } => "success (replay)",
            Answer::Success { .. } => "success",
            Answer::Refused => "refused",
            Answer::Unknown => "no known outcome",
        };
        self.calls.push(format!(
            "{persona} {tool}({}) → {outcome} ({})",
            shown_args(args),
            rid.unwrap_or("no request_id")
        ));
    }

    fn difference(&self, clause: &'static str, what: &str, diffs: &[String], t: &Value, r: &Value) -> Note {
        let calls: Vec<String> =
            self.calls.iter().enumerate().map(|(i, c)| format!("  {}. {c}", i + 1)).collect();
        Note {
            clause,
            difference: Some(format!(
                "differential oracle: {what} differs from the reference's: {}\n calls that led here:\n{}\n target:    {}\n reference: {}",
                diffs.join("; "),
                calls.join("\n"),
                clip(&redacted(t)),
                clip(&redacted(r)),
            )),
        }
    }
}

fn clip(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 1500 {
        format!("{}… ({} bytes)", s.chars().take(1500).collect::<String>(), s.len())
    } else {
        s
    }
}

/// Whether the server's data is the published dataset, as far as a few reads tell (the
/// restaurants and orders the scenarios write, as the owner): `Err` says what differs.
pub async fn applicable(
    client: &mut McpClient,
    dataset: &chataigne_contract::dataset::Dataset,
    outbound: impl Fn(&Value) -> Value,
    inbound: impl Fn(&Value) -> Value,
) -> Result<(), String> {
    if client.persona.as_deref() != Some("owner") {
        return Err("no owner token to read the server's data with".to_owned());
    }
    let l = &dataset.landmarks;
    // Every record read side by side, on copies of the client: one round trip, not five.
    let mut reads = Vec::new();
    for rid in [&l.busy_restaurant, &l.small_restaurant] {
        let Some(r) = dataset.restaurants.iter().find(|r| &r.id == rid) else { continue };
        let want = json!({ "id": r.id, "organization_id": r.organization_id, "name": r.name, "timezone": r.timezone });
        reads.push((
            "get_restaurant",
            json!({ "restaurant_id": rid }),
            "restaurant",
            want,
            format!("restaurant {rid}"),
        ));
    }
    let orders: Vec<_> = dataset.orders.iter().filter(|o| o.restaurant_id == l.busy_restaurant).collect();
    for o in [orders.first(), orders.get(orders.len() / 2), orders.last()].into_iter().flatten() {
        let want = json!({ "id": o.id, "restaurant_id": o.restaurant_id, "channel": o.channel,
                           "customer_name": o.customer_name, "total_cents": o.total_cents, "currency": o.currency });
        let args = json!({ "restaurant_id": o.restaurant_id, "order_id": o.id });
        reads.push(("get_order", args, "order", want, format!("order {}", o.id)));
    }
    let copies = client.fork(reads.len());
    let (outbound, inbound) = (&outbound, &inbound);
    let answers = futures::future::join_all(reads.iter().zip(copies).map(
        |((tool, args, key, _, _), mut c)| async move {
            read(&mut c, tool, args.clone(), key, outbound, inbound).await
        },
    ))
    .await;
    for ((_, _, _, want, what), got) in reads.iter().zip(answers) {
        same(&got?, want, what)?;
    }
    Ok(())
}

async fn read(
    client: &mut McpClient,
    tool: &str,
    args: Value,
    key: &str,
    outbound: &impl Fn(&Value) -> Value,
    inbound: &impl Fn(&Value) -> Value,
) -> Result<Value, String> {
    let ex = client.call_tool(tool, outbound(&args)).await;
    match Answer::of(&ex, inbound) {
        Answer::Success { data, .. } => {
            data.get(key).cloned().ok_or_else(|| format!("{tool} answers no data.{key} (ENV-7)"))
        }
        _ => Err(format!("{tool} of a published record did not succeed: {}", ex.summary())),
    }
}

fn same(got: &Value, want: &Value, what: &str) -> Result<(), String> {
    let differs: Vec<&str> = want
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| got.get(k.as_str()) != Some(v))
        .map(|(k, _)| k.as_str())
        .collect();
    if differs.is_empty() {
        Ok(())
    } else {
        Err(format!("{what} is not the published dataset's ({} differ)", differs.join(", ")))
    }
}

/// The run's oracle: the reference, or why there is none.
#[derive(Debug)]
pub struct Oracle {
    #[cfg(feature = "embedded")]
    reference: Option<Arc<Reference>>,
    /// Why nothing is compared in this run, said once in the report.
    pub not_run: Option<String>,
    /// Each persona reaches a server state of its own (stdio: one process per persona).
    per_persona: bool,
}

impl Oracle {
    pub fn off(why: impl Into<String>) -> Oracle {
        Oracle {
            #[cfg(feature = "embedded")]
            reference: None,
            not_run: Some(why.into()),
            per_persona: false,
        }
    }

    /// The reference on `dataset`, or why it cannot run.
    pub fn start(dataset: &chataigne_contract::dataset::Dataset) -> Oracle {
        #[cfg(feature = "embedded")]
        {
            match Reference::new(dataset) {
                Ok(r) => Oracle { reference: Some(Arc::new(r)), not_run: None, per_persona: false },
                Err(e) => Oracle::off(format!("the reference server did not start: {e:#}")),
            }
        }
        #[cfg(not(feature = "embedded"))]
        {
            let _ = dataset;
            Oracle::off("this build has no reference server (feature `embedded`)")
        }
    }

    pub fn is_on(&self) -> bool {
        self.not_run.is_none()
    }

    /// Each persona reaches a server state of its own (stdio: one process per persona): a read
    /// is compared only when its persona made the write.
    pub fn per_persona(mut self, yes: bool) -> Oracle {
        self.per_persona = yes;
        self
    }

    /// Whether a call of `tool` is the oracle's business in this run.
    pub fn wants(&self, tool: &str) -> bool {
        self.is_on() && concerns(tool)
    }

    /// The reference's clock follows the target's when the control API moves it (IDEM-6).
    pub fn advance_clock(&self, seconds: u64) {
        #[cfg(feature = "embedded")]
        if let Some(r) = &self.reference {
            let _ = r.app.clock.advance_ms(i64::try_from(seconds.saturating_mul(1000)).unwrap_or(i64::MAX));
        }
        #[cfg(not(feature = "embedded"))]
        let _ = seconds;
    }

    /// After the target answered `tool(args)` (`args` and the answer in dataset IDs) as
    /// `persona`: replay what changed state, compare what the contract fixes.
    pub async fn after(
        &self,
        shadow: &mut Shadow,
        persona: &str,
        tool: &str,
        args: &Value,
        answer: &Answer,
        rid: Option<&str>,
    ) -> Vec<Note> {
        #[cfg(feature = "embedded")]
        if let Some(r) = &self.reference {
            return r.after(shadow, self.per_persona, persona, tool, args, answer, rid).await;
        }
        let _ = (shadow, persona, tool, args, answer, rid);
        Vec::new()
    }
}

/// The reference server itself, shared by the run's scenarios (each compares only the keys it
/// set up).
#[cfg(feature = "embedded")]
#[derive(Debug)]
pub struct Reference {
    app: Arc<mock_server::App>,
    principals: HashMap<String, mock_server::auth::Principal>,
}

/// The reference counts no call: the target's rate windows are judged by LIM-2, and the replays
/// must never be refused for a window the target's clock has left.
#[cfg(feature = "embedded")]
#[derive(Debug)]
struct Unlimited;

#[cfg(feature = "embedded")]
impl mock_server::state::ratelimit::RateLimiter for Unlimited {
    fn hit<'a>(
        &'a self,
        _: &'a mock_server::state::ratelimit::RateKey,
        _: u32,
        _: i64,
    ) -> mock_server::state::idempotency::StoreFuture<'a, mock_server::state::ratelimit::Verdict> {
        mock_server::state::idempotency::ready(Ok(Ok(())))
    }
    fn clear(&self) -> mock_server::state::idempotency::StoreFuture<'_, ()> {
        mock_server::state::idempotency::ready(Ok(()))
    }
}

#[cfg(feature = "embedded")]
impl Reference {
    pub fn new(dataset: &chataigne_contract::dataset::Dataset) -> anyhow::Result<Reference> {
        let mut app = mock_server::App::new(mock_server::Config::new(dataset.clone()))?;
        app.rate = Arc::new(Unlimited);
        let principals = dataset
            .personas
            .iter()
            .filter_map(|p| {
                let token = format!("{}{}", mock_server::DEV_TOKEN_PREFIX, p.persona);
                Some((p.persona.clone(), app.tokens.check(&token)?))
            })
            .collect();
        Ok(Reference { app: Arc::new(app), principals })
    }

    async fn call(&self, persona: &str, tool: &str, args: &Value) -> Answer {
        let Some(principal) = self.principals.get(persona) else { return Answer::Unknown };
        let args = args.as_object().cloned();
        match mock_server::pipeline::call(&self.app, Some(principal), tool, args).await {
            Ok(Ok(out)) => Answer::Success { data: out.data, replayed: out.replayed, complete: false },
            Ok(Err(_)) => Answer::Refused,
            Err(_) => Answer::Unknown,
        }
    }

    /// The reference's order `oid` of `rid` now in `status`: the target's state as observed.
    fn seed_order(&self, rid: &str, oid: &str, status: &str) -> bool {
        let Some(updated_at) = self.app.store.read().order(rid, oid).map(|o| o.row.updated_at.to_string())
        else {
            return false;
        };
        self.app.store.apply_here(&mock_server::state::store::Change::OrderStatus {
            restaurant_id: rid.to_owned(),
            order_id: oid.to_owned(),
            status: status.to_owned(),
            updated_at,
        });
        true
    }

    #[allow(clippy::too_many_arguments)]
    async fn after(
        &self,
        shadow: &mut Shadow,
        per_persona: bool,
        persona: &str,
        tool: &str,
        args: &Value,
        answer: &Answer,
        rid: Option<&str>,
    ) -> Vec<Note> {
        shadow.log(persona, tool, args, answer, rid);
        let mut notes = Vec::new();
        let str_arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
        match tool {
            "update_order_status" => {
                let (Some(restaurant), Some(order)) = (str_arg("restaurant_id"), str_arg("order_id")) else {
                    return notes;
                };
                if !shadow.written.contains_key(&order) {
                    // Seeded from the state the scenario saw; a success also shows it was expected_status.
                    let seen = shadow.observed.get(&order).cloned().or_else(|| match answer {
                        Answer::Success { .. } => str_arg("expected_status"),
                        _ => None,
                    });
                    let known = seen.is_some_and(|s| self.seed_order(&restaurant, &order, &s));
                    shadow.written.insert(order.clone(), if known { Known::Yes } else { Known::No });
                    shadow.writers.insert(order.clone(), persona.to_owned());
                }
                match answer {
                    Answer::Refused => {}
                    Answer::Unknown => {
                        shadow.written.insert(order, Known::No);
                    }
                    Answer::Success { data, .. } => {
                        if shadow.written.get(&order) != Some(&Known::Yes) {
                            return notes;
                        }
                        match self.call(persona, tool, args).await {
                            Answer::Success { data: reference, .. } => {
                                let diffs = compare(data, &reference, &mut shadow.ids, false);
                                notes.push(note(
                                    shadow,
                                    STATE_CLAUSE,
                                    "the answer of update_order_status",
                                    diffs,
                                    data,
                                    &reference,
                                ));
                            }
                            // A move the reference refuses and the seed allows (a skip forward):
                            // the state the seed fixes after a success is the new status.
                            _ => {
                                let status = str_arg("status").unwrap_or_default();
                                if !self.seed_order(&restaurant, &order, &status) {
                                    shadow.written.insert(order, Known::No);
                                }
                            }
                        }
                    }
                }
            }
            "get_order" | "list_orders" => {
                let Answer::Success { data, .. } = answer else { return notes };
                let Some(restaurant) = str_arg("restaurant_id") else { return notes };
                let items: Vec<Value> = match tool {
                    "get_order" => data.get("order").cloned().into_iter().collect(),
                    _ => data.get("orders").and_then(Value::as_array).cloned().unwrap_or_default(),
                };
                let filter: Option<Vec<String>> = args
                    .get("status")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect());
                for item in items {
                    let Some(oid) = item.get("id").and_then(Value::as_str).map(str::to_owned) else {
                        continue;
                    };
                    let elsewhere = per_persona && shadow.writers.get(&oid).is_some_and(|w| w != persona);
                    match shadow.written.get(&oid).filter(|_| !elsewhere) {
                        None => {
                            if let Some(s) = item.get("status").and_then(Value::as_str) {
                                shadow.observed.insert(oid, s.to_owned());
                            }
                        }
                        Some(Known::No) => {}
                        Some(Known::Yes) => {
                            let read = json!({ "restaurant_id": restaurant, "order_id": oid });
                            let Answer::Success { data: r, .. } =
                                self.call(persona, "get_order", &read).await
                            else {
                                continue;
                            };
                            let Some(reference) = r.get("order") else { continue };
                            let mut diffs = compare(&item, reference, &mut shadow.ids, false);
                            let status = reference.get("status").and_then(Value::as_str).unwrap_or_default();
                            if let Some(f) = filter.as_ref().filter(|f| !f.iter().any(|s| s == status)) {
                                diffs.push(format!(
                                    "listed under status {f:?}, while the reference's is {status}"
                                ));
                            }
                            let what = format!("order {oid} as {tool} answers it");
                            notes.push(note(shadow, STATE_CLAUSE, &what, diffs, &item, reference));
                        }
                    }
                }
            }
            t if CREATING.contains(&t) => {
                let Answer::Success { data, replayed: target_replayed, .. } = answer else { return notes };
                let sent = shadow.ids.to_reference(args);
                if let Answer::Success { data: reference, replayed, .. } =
                    self.call(persona, tool, &sent).await
                {
                    // Both replaying a record made before this scenario's shadow (a rerun, a
                    // shrink's second try): the two stand for each other from here on.
                    let diffs = compare(
                        &without_initial_status(data),
                        &without_initial_status(&reference),
                        &mut shadow.ids,
                        !replayed || *target_replayed,
                    );
                    let what = format!("the answer of {tool}");
                    notes.push(note(shadow, CREATED_CLAUSE, &what, diffs, data, &reference));
                }
            }
            t if READS_OF_CREATED.contains(&t) => {
                let Answer::Success { data, complete, .. } = answer else { return notes };
                // A complete answer is read for what it lacks too (over stdio a persona's own
                // process sees only its own writes: not there).
                let omissions = *complete && !per_persona && shadow.ids.any_created();
                if args.get("cursor").is_some() || !(omissions || holds_created(data, &shadow.ids)) {
                    return notes;
                }
                let sent = shadow.ids.to_reference(args);
                let Answer::Success { data: reference, .. } = self.call(persona, tool, &sent).await else {
                    return notes;
                };
                // Only the records the scenario created: counts and lists around them move with
                // every other scenario's writes.
                let mut found = Vec::new();
                created_records(data, &shadow.ids, &mut found);
                for (id, record) in found {
                    let Some(paired) = shadow.ids.to_reference.get(&id).cloned() else { continue };
                    let Some(theirs) = find_by_id(&reference, &paired) else { continue };
                    let diffs = compare(
                        &without_initial_status(&record),
                        &without_initial_status(theirs),
                        &mut shadow.ids,
                        false,
                    );
                    let what = format!("record {id} as {tool} answers it");
                    notes.push(note(shadow, CREATED_CLAUSE, &what, diffs, &record, theirs));
                }
                // A record the scenario created that the reference lists here is listed by a
                // target whose answer is the whole list too: a write every read must show.
                if omissions {
                    let listed = listed_ids(data);
                    let missing: Vec<String> = listed_ids(&reference)
                        .into_iter()
                        .filter_map(|r| shadow.ids.to_target.get(&r).cloned())
                        .filter(|t| !listed.contains(t))
                        .map(|t| {
                            format!(
                                "record {t}, which the scenario created and the reference lists, is missing"
                            )
                        })
                        .collect();
                    let what = format!("the whole list {tool} answers");
                    notes.push(note(shadow, CREATED_CLAUSE, &what, missing, data, &reference));
                }
            }
            _ => {}
        }
        notes
    }
}

#[cfg(feature = "embedded")]
fn note(shadow: &Shadow, clause: &'static str, what: &str, diffs: Vec<String>, t: &Value, r: &Value) -> Note {
    if diffs.is_empty() {
        Note { clause, difference: None }
    } else {
        shadow.difference(clause, what, &diffs, t, r)
    }
}

/// The records of `data` the scenario created, with their IDs.
fn created_records(data: &Value, ids: &IdPairs, out: &mut Vec<(String, Value)>) {
    match data {
        Value::Object(o) => {
            if let Some(id) = o.get("id").and_then(Value::as_str).filter(|id| ids.created(id)) {
                out.push((id.to_owned(), data.clone()));
                return;
            }
            o.values().for_each(|v| created_records(v, ids, out));
        }
        Value::Array(a) => a.iter().for_each(|v| created_records(v, ids, out)),
        _ => {}
    }
}

/// The `id` of every object of `data` that is an item of an array, at any depth: the records an
/// answer lists.
fn listed_ids(data: &Value) -> Vec<String> {
    fn walk(v: &Value, listed: bool, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                if listed && let Some(id) = o.get("id").and_then(Value::as_str) {
                    out.push(id.to_owned());
                }
                o.values().for_each(|v| walk(v, false, out));
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, true, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(data, false, &mut out);
    out
}

/// The object of `data` whose `id` is `id`, at any depth.
fn find_by_id<'a>(data: &'a Value, id: &str) -> Option<&'a Value> {
    match data {
        Value::Object(o) if o.get("id").and_then(Value::as_str) == Some(id) => Some(data),
        Value::Object(o) => o.values().find_map(|v| find_by_id(v, id)),
        Value::Array(a) => a.iter().find_map(|v| find_by_id(v, id)),
        _ => None,
    }
}

/// Whether `data` holds a record the scenario created (its ID paired).
fn holds_created(data: &Value, ids: &IdPairs) -> bool {
    match data {
        Value::Object(o) => o.iter().any(|(k, v)| match v {
            Value::String(s) => k == "id" && ids.created(s),
            other => holds_created(other, ids),
        }),
        Value::Array(a) => a.iter().any(|v| holds_created(v, ids)),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
