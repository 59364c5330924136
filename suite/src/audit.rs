//! Nothing else changed: the records no write of the run named keep their state to the end.
//!
//! A write changes the one record it names (`ToolName::changes`) or creates one; a server that
//! also moves another order, deletes a restaurant, or adds a message to other conversations
//! answers every envelope right, and no scenario reading its own records sees it. So the run
//! reads what each organization's owner can see before its first scenario and after its last
//! (organizations, restaurants, and each of the dataset's restaurants' orders, conversations and
//! instructions, every page), and every record that no write of the run named
//! (`schedule::CallLog::touched`, refused writes included) must be there still, in the same state.
//! When the control API reset the data during the run, the expected state is the published
//! dataset's instead (only when the server's data is that dataset: the oracle's check).
//!
//! A difference is filed under the clause it breaks: a record gone, an order cancelled or
//! rejected, or a conversation with other messages is an effect ABS-2 says no combination of
//! tools reaches (deletion, cancellation, campaign); any other change of a state no call named
//! is a change made without its previously observed value (PRE-1). Each record seen unchanged is
//! evidence for its clause. A read that fails (a refusal, no answer, a page the audit cannot
//! read) makes the audit say why it did not run: never a pass.

use std::collections::{BTreeMap, BTreeSet};

use chataigne_contract::dataset::Dataset;
use serde_json::{Value, json};

use std::time::Instant;

use crate::client::{Exchange, McpClient};
use crate::context::RunContext;
use crate::schedule::{WriteOutcome, WriteSeen};

/// The records the audit reads, by dataset ID.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Snapshot {
    pub records: BTreeMap<String, Record>,
    /// The walks under one filter (`take` with filters: after the run, with nothing else
    /// running): what each listed.
    pub filtered: Vec<Filtered>,
}

/// One record as far as a write could change it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    pub kind: Kind,
    /// The status, and for a conversation its message count: empty for records with no state.
    pub state: String,
    /// The restaurant (or organization) whose list it was read in.
    pub within: String,
    /// Its values of the members a list filters on (`status`, `channel`).
    pub facets: Vec<(String, String)>,
}

/// A walk of a list under one filter: `tool` of `within` with `member` = `value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Filtered {
    pub tool: &'static str,
    pub kind: Kind,
    pub within: String,
    pub member: &'static str,
    pub value: String,
    /// The arguments of its first page (dataset IDs).
    pub args: Value,
    pub ids: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    Organization,
    Restaurant,
    Order,
    Conversation,
    Instruction,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Organization => "organization",
            Kind::Restaurant => "restaurant",
            Kind::Order => "order",
            Kind::Conversation => "conversation",
            Kind::Instruction => "instruction",
        }
    }
}

/// How a finding of the audit starts (the report's detail, and `fuzz`'s).
pub const FINDING: &str = "audit of untouched records";

/// A comparison of one record: its clause, the difference if any, and the read that shows it
/// (a tool and its arguments, dataset IDs).
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub clause: &'static str,
    pub difference: Option<String>,
    pub read: Option<(&'static str, Value)>,
}

/// The read that shows record `id` of `kind` read in `within`.
fn read_of(kind: Kind, id: &str, within: &str) -> Option<(&'static str, Value)> {
    match kind {
        Kind::Order => Some(("get_order", json!({ "restaurant_id": within, "order_id": id }))),
        Kind::Restaurant => Some(("get_restaurant", json!({ "restaurant_id": id }))),
        Kind::Conversation => Some(("list_conversations", json!({ "restaurant_id": within }))),
        Kind::Instruction => Some(("list_instructions", json!({ "restaurant_id": within }))),
        Kind::Organization => Some(("list_organizations", json!({}))),
    }
}

/// The order states no tool may reach (ABS-2).
const ABSENT_STATES: [&str; 2] = ["cancelled", "rejected"];

/// Pages of one list read at most: far more than the dataset's lists hold; a list that never
/// ends makes the audit stop and say so.
const MAX_PAGES: usize = 200;

/// Who reads an organization for the audit: a persona, its user, the organization.
#[derive(Debug, Clone, PartialEq)]
pub struct Reader {
    pub persona: String,
    pub user: String,
    pub organization: String,
}

/// For each organization, the member persona with the lowest role that reads all of it (not
/// revoked, no restaurant list, the server's own audience, every read scope the audit needs, a
/// token in the profile): the audit's reads then count against the pair the scenarios use least,
/// and a rerun at once finds its windows as free as the first run did.
pub fn readers(ctx: &RunContext) -> Vec<Reader> {
    const SCOPES: [&str; 5] =
        ["organizations:read", "restaurants:read", "orders:read", "conversations:read", "instructions:read"];
    let data = &ctx.dataset;
    let mut out = Vec::new();
    for org in &data.organizations {
        let mut members: Vec<_> = data
            .memberships
            .iter()
            .filter(|m| m.organization_id == org.id && !m.revoked && m.restaurant_ids.is_none())
            .collect();
        members.sort_by_key(|m| m.role);
        let found = members.iter().find_map(|m| {
            data.personas.iter().find(|p| {
                p.user_id == m.user_id
                    && p.audience.is_none()
                    && SCOPES.iter().all(|s| p.scopes.iter().any(|h| h == s))
                    && ctx.profile.tokens.contains_key(&p.persona)
            })
        });
        if let Some(p) = found {
            out.push(Reader {
                persona: p.persona.clone(),
                user: p.user_id.clone(),
                organization: org.id.clone(),
            });
        }
    }
    out
}

/// One list the audit walks: `tool` with `args` (dataset IDs), its items under `member`, of
/// `kind`, read in `within`; `filter`: the member and value it is filtered on, if any.
#[derive(Debug, Clone)]
struct List {
    tool: &'static str,
    args: Value,
    member: &'static str,
    kind: Kind,
    within: String,
    filter: Option<(&'static str, String)>,
}

/// The members each list tool filters on, with every value the contract gives them.
fn filters_of(tool: &str) -> Vec<(&'static str, &'static [&'static str])> {
    use chataigne_contract::tools::{
        CONVERSATION_CHANNELS, CONVERSATION_STATUSES, ORDER_CHANNELS, ORDER_STATUSES,
    };
    let of = |member: &'static str, values: &'static [&'static str]| (member, values);
    match tool {
        "list_orders" => vec![of("status", &ORDER_STATUSES), of("channel", &ORDER_CHANNELS)],
        "list_conversations" => {
            vec![of("status", &CONVERSATION_STATUSES), of("channel", &CONVERSATION_CHANNELS)]
        }
        _ => Vec::new(),
    }
}

/// The lists the audit walks for one organization; with `filters`, each restaurant list under
/// each value of each member the server's published input schema lets it filter on.
fn lists(ctx: &RunContext, org: &str, filters: bool) -> Vec<List> {
    let list = |tool, args, member, kind, within: &str| List {
        tool,
        args,
        member,
        kind,
        within: within.to_owned(),
        filter: None,
    };
    let mut out = vec![
        list("list_organizations", json!({}), "organizations", Kind::Organization, ""),
        list("list_restaurants", json!({ "organization_id": org }), "restaurants", Kind::Restaurant, org),
    ];
    for r in ctx.dataset.restaurants.iter().filter(|r| r.organization_id == org) {
        let args = json!({ "restaurant_id": r.id, "limit": 50 });
        for (tool, member, kind) in [
            ("list_orders", "orders", Kind::Order),
            ("list_conversations", "conversations", Kind::Conversation),
            ("list_instructions", "instructions", Kind::Instruction),
        ] {
            out.push(list(tool, args.clone(), member, kind, &r.id));
            if !filters {
                continue;
            }
            for (name, values) in filters_of(tool) {
                for value in values {
                    let Some(filtered) = with_filter(ctx, tool, &args, name, value) else { continue };
                    out.push(List {
                        filter: Some((name, (*value).to_owned())),
                        ..list(tool, filtered, member, kind, &r.id)
                    });
                }
            }
        }
    }
    out
}

/// `args` with `member` = `value` in the shape the server's published input schema gives it (a
/// string, or a list of one), if it publishes that filter and the arguments are valid against it.
fn with_filter(ctx: &RunContext, tool: &str, args: &Value, member: &str, value: &str) -> Option<Value> {
    let published =
        ctx.published.tools.iter().find(|t| t.get("name").and_then(Value::as_str) == Some(tool))?;
    let schema = published.pointer(&format!("/inputSchema/properties/{member}"))?;
    let mut args = args.clone();
    args[member] = if schema.get("type").and_then(Value::as_str) == Some("array") {
        json!([value])
    } else {
        json!(value)
    };
    let valid = match ctx.published.input_validators.get(tool) {
        Some(Ok(v)) => v.is_valid(&ctx.id_map.outbound(&args)),
        _ => false,
    };
    valid.then_some(args)
}

fn facets_of(item: &Value) -> Vec<(String, String)> {
    ["status", "channel"]
        .iter()
        .filter_map(|m| Some(((*m).to_owned(), item.get(*m)?.as_str()?.to_owned())))
        .collect()
}

fn state_of(kind: Kind, item: &Value) -> String {
    let status = item.get("status").and_then(Value::as_str).unwrap_or_default();
    match kind {
        Kind::Order | Kind::Restaurant => status.to_owned(),
        Kind::Conversation => {
            let count = item.get("message_count").map(Value::to_string).unwrap_or_default();
            format!("{status}, {count} messages")
        }
        Kind::Organization | Kind::Instruction => String::new(),
    }
}

/// Every record the owners can read now, or why they could not be read; with `filters`, each
/// list under each filter too (for [`filter_notes`]).
pub async fn take(ctx: &RunContext, filters: bool) -> Result<Snapshot, String> {
    let readers = readers(ctx);
    if readers.is_empty() {
        return Err("no member persona with a token and every read scope in the profile".to_owned());
    }
    let mut walks = Vec::new();
    for Reader { persona, organization: org, .. } in &readers {
        let Some(mut client) = ctx.client(persona) else { continue };
        let ex = client.initialize().await;
        if !client.is_initialized() {
            return Err(format!("{persona} could not start a session: {}", ex.summary()));
        }
        let lists = lists(ctx, org, filters);
        for (copy, list) in client.fork(lists.len()).into_iter().zip(lists) {
            walks.push(async move {
                let walked = walk(ctx, copy, persona, &list).await;
                (list, walked)
            });
        }
    }
    let mut snapshot = Snapshot::default();
    for (list, walked) in futures::future::join_all(walks).await {
        let walked = walked?;
        match list.filter {
            None => snapshot.records.extend(walked),
            Some((member, value)) => snapshot.filtered.push(Filtered {
                tool: list.tool,
                kind: list.kind,
                within: list.within,
                member,
                value,
                args: list.args,
                ids: walked.into_iter().map(|(id, _)| id).collect(),
            }),
        }
    }
    Ok(snapshot)
}

async fn walk(
    ctx: &RunContext,
    mut client: McpClient,
    persona: &str,
    list: &List,
) -> Result<Vec<(String, Record)>, String> {
    let List { tool, args, member, kind, within, .. } = list;
    let (tool, member, kind) = (*tool, *member, *kind);
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut page = ctx.id_map.outbound(args);
        if let Some(c) = &cursor {
            page["cursor"] = json!(c);
        }
        let ex = client.call_tool(tool, page).await;
        let unreadable = |why: &str| format!("{persona}'s {tool}({}) {why}: {}", shown(args), ex.summary());
        let data = success_data(&ex).ok_or_else(|| unreadable("was not a success"))?;
        let items = data.get(member).and_then(Value::as_array).ok_or_else(|| unreadable("has no list"))?;
        for item in items {
            let id =
                item.get("id").and_then(Value::as_str).ok_or_else(|| unreadable("has an item without id"))?;
            let record = Record {
                kind,
                state: state_of(kind, item),
                within: within.clone(),
                facets: facets_of(&ctx.id_map.inbound(item)),
            };
            out.push((ctx.id_map.to_dataset(id), record));
        }
        cursor = ex
            .structured()
            .and_then(|s| s.pointer("/meta/next_cursor"))
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        if cursor.is_none() {
            return Ok(out);
        }
    }
    Err(format!("{persona}'s {tool}({}) still had a next_cursor after {MAX_PAGES} pages", shown(args)))
}

fn success_data(ex: &Exchange) -> Option<&Value> {
    if ex.is_error() {
        return None;
    }
    ex.structured()?.get("data")
}

fn shown(args: &Value) -> String {
    args.get("restaurant_id")
        .or_else(|| args.get("organization_id"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// What the published dataset says `readers` read: what a reset restores.
pub fn from_dataset(dataset: &Dataset, readers: &[Reader]) -> Snapshot {
    let mut records = BTreeMap::new();
    let mut put = |id: &str, kind, state: String| {
        records.insert(id.to_owned(), Record { kind, state, ..Record::default() });
    };
    let orgs: Vec<&str> = readers.iter().map(|r| r.organization.as_str()).collect();
    let users: Vec<&str> = readers.iter().map(|r| r.user.as_str()).collect();
    for m in dataset.memberships.iter().filter(|m| users.contains(&m.user_id.as_str()) && !m.revoked) {
        put(&m.organization_id, Kind::Organization, String::new());
    }
    let restaurants: Vec<&str> = dataset
        .restaurants
        .iter()
        .filter(|r| orgs.contains(&r.organization_id.as_str()))
        .map(|r| r.id.as_str())
        .collect();
    for r in dataset.restaurants.iter().filter(|r| restaurants.contains(&r.id.as_str())) {
        put(&r.id, Kind::Restaurant, r.status.clone());
    }
    for o in dataset.orders.iter().filter(|o| restaurants.contains(&o.restaurant_id.as_str())) {
        put(&o.id, Kind::Order, o.status.clone());
    }
    for c in dataset.conversations.iter().filter(|c| restaurants.contains(&c.restaurant_id.as_str())) {
        let count = dataset.messages.iter().filter(|m| m.conversation_id == c.id).count();
        put(&c.id, Kind::Conversation, format!("{}, {count} messages", c.status));
    }
    for i in dataset.instructions.iter().filter(|i| restaurants.contains(&i.restaurant_id.as_str())) {
        put(&i.id, Kind::Instruction, String::new());
    }
    Snapshot { records, filtered: Vec::new() }
}

/// [`compare`] against what the run's writes named and what their answers said
/// (`RunContext::calls`), in the IDs they were sent with.
pub fn against(ctx: &RunContext, expected: &Snapshot, now: &Snapshot) -> Vec<Note> {
    let reset = ctx.calls.last_data_reset();
    let mut notes = compare(expected, now, |id, record| {
        let sent = ctx.id_map.outbound(&json!(id)).as_str().unwrap_or(id).to_owned();
        if !named(ctx, id) {
            return Expect::Unchanged;
        }
        // Over stdio each persona has a server of its own: the owner's reads show none of the
        // others' writes.
        if ctx.stdio.is_some() || !matches!(record.kind, Kind::Order | Kind::Restaurant) {
            return Expect::Unknown;
        }
        after_writes(&ctx.calls.writes_of(&sent), &sent, reset, &record.state)
    });
    notes.extend(filter_notes(now, |id| named(ctx, id)));
    notes
}

/// Whether a write of the run named record `id` (dataset ID), in any form it was sent.
fn named(ctx: &RunContext, id: &str) -> bool {
    let sent = ctx.id_map.outbound(&json!(id));
    ctx.calls.touched(id) || sent.as_str().is_some_and(|s| ctx.calls.touched(s))
}

/// Each list walked under a filter against the same list walked whole, both read at the same
/// quiet moment (after the run): every record whose value of the member is the filter's is
/// listed, once, and no other. A record the run wrote that a status filter misplaces is a read
/// that does not show what the write set (PRE-2); any other difference is a filtered walk that
/// does not yield its items (PAG-4). One note per filtered walk.
pub fn filter_notes(now: &Snapshot, named: impl Fn(&str) -> bool) -> Vec<Note> {
    let mut notes = Vec::new();
    for f in &now.filtered {
        let has = |r: &Record| r.facets.iter().any(|(m, v)| m == f.member && *v == f.value);
        let want: BTreeSet<&str> = now
            .records
            .iter()
            .filter(|(_, r)| r.kind == f.kind && r.within == f.within && has(r))
            .map(|(id, _)| id.as_str())
            .collect();
        let got: BTreeSet<&str> = f.ids.iter().map(String::as_str).collect();
        let missing: Vec<&str> = want.difference(&got).copied().collect();
        let extra: Vec<&str> = got.difference(&want).copied().collect();
        let repeated = f.ids.len() - got.len();
        let wrong: Vec<&str> = missing.iter().chain(&extra).copied().collect();
        // Another restaurant's record in this one's list: AUTH-5, whatever the filter.
        let foreign = extra.iter().any(|id| now.records.get(*id).is_some_and(|r| r.within != f.within));
        let clause = if foreign {
            "AUTH-5"
        } else if f.member == "status" && wrong.iter().any(|id| named(id)) {
            "PRE-2"
        } else {
            "PAG-4"
        };
        let difference = (!wrong.is_empty() || repeated > 0).then(|| {
            let shown = |ids: &[&str]| {
                let mut s = ids.iter().take(5).copied().collect::<Vec<_>>().join(", ");
                if ids.len() > 5 {
                    s.push_str(&format!(" and {} more", ids.len() - 5));
                }
                s
            };
            format!(
                "{}({}, {} = {:?}) walked to its end lists {} of the {} {}s the same list unfiltered shows with that {}, read at the same moment (missing: [{}]; not theirs: [{}]; repeated: {repeated})",
                f.tool,
                f.within,
                f.member,
                f.value,
                got.len() - extra.len(),
                want.len(),
                f.kind.name(),
                f.member,
                shown(&missing),
                shown(&extra),
            )
        });
        notes.push(Note { clause, difference, read: Some((f.tool, f.args.clone())) });
    }
    notes
}

/// What a record must be now.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// What it was: no write named it (or every one came before the data was reset).
    Unchanged,
    /// What the run's writes of it leave: `state`, else a difference under `clause` (or, when
    /// the record is found in a state a refused write asked for, that refusal's clause:
    /// `refused_into`), `why`.
    State { state: String, clause: &'static str, why: String, refused_into: Vec<(String, &'static str)> },
    /// Nothing the run can tell (an answer that did not say, writes at once, an ID sent in
    /// another form).
    Unknown,
}

/// What the writes of a record's state (`sent` as the ID it is known by) leave it in, from its
/// state before them (`baseline`), the data reset last at `reset`.
pub fn after_writes(writes: &[WriteSeen], sent: &str, reset: Option<Instant>, baseline: &str) -> Expect {
    if writes.is_empty() || writes.iter().any(|w| w.id != sent) {
        return Expect::Unknown;
    }
    if writes.iter().any(|w| reset.is_some_and(|r| w.sent < r && w.answered >= r)) {
        return Expect::Unknown;
    }
    let after: Vec<&WriteSeen> = writes.iter().filter(|w| reset.is_none_or(|r| w.sent >= r)).collect();
    if after.is_empty() {
        return Expect::Unchanged;
    }
    if after.iter().any(|w| w.outcome == WriteOutcome::Unknown) {
        return Expect::Unknown;
    }
    let done: Vec<&&WriteSeen> = after.iter().filter(|w| w.outcome == WriteOutcome::Done).collect();
    let Some(last) = done.iter().max_by_key(|w| w.answered) else {
        // A precondition's refusal leaves the state unchanged (PRE-2); any other refusal comes
        // before the effect (AUTH-8's order: every check, then the effect). A state no refused
        // write asked for is a change no call named (PRE-1).
        let mut refused_into: Vec<(String, &'static str)> = Vec::new();
        for w in &after {
            let (Some(target), WriteOutcome::Refused { conflict }) = (&w.target, w.outcome) else { continue };
            let clause = if conflict { "PRE-2" } else { "AUTH-8" };
            match refused_into.iter_mut().find(|(t, _)| t == target) {
                Some(seen) if clause == "AUTH-8" => seen.1 = clause,
                Some(_) => {}
                None => refused_into.push((target.clone(), clause)),
            }
        }
        return Expect::State {
            state: baseline.to_owned(),
            clause: "PRE-1",
            why: format!("every write of it ({}) was refused", after.len()),
            refused_into,
        };
    };
    // Two acknowledged writes at once: either may be the last.
    if done.iter().any(|w| !std::ptr::eq(**w, **last) && w.answered >= last.sent) {
        return Expect::Unknown;
    }
    let Some(target) = &last.target else { return Expect::Unknown };
    Expect::State {
        state: target.clone(),
        clause: "PRE-2",
        why: format!("its last write, acknowledged, set \"{target}\""),
        refused_into: Vec::new(),
    }
}

/// Every record of `expected` compared with `now` as `expect` says: one note each.
pub fn compare(expected: &Snapshot, now: &Snapshot, expect: impl Fn(&str, &Record) -> Expect) -> Vec<Note> {
    let mut notes = Vec::new();
    for (id, was) in &expected.records {
        let kind = was.kind.name();
        let (want, clause, why) = match expect(id, was) {
            Expect::Unknown => continue,
            Expect::State { state, clause, why, refused_into } => {
                let found = now.records.get(id).map(|r| r.state.as_str());
                let clause =
                    refused_into.iter().find(|(t, _)| Some(t.as_str()) == found).map_or(clause, |(_, c)| c);
                // No tool may reach a cancellation or a rejection, whatever was asked.
                let clause = if found.is_some_and(|f| ABSENT_STATES.contains(&f)) { "ABS-2" } else { clause };
                (state, clause, why)
            }
            Expect::Unchanged => {
                let clause = match (was.kind, now.records.get(id)) {
                    (Kind::Order, Some(is)) if ABSENT_STATES.contains(&is.state.as_str()) => "ABS-2",
                    (Kind::Order | Kind::Restaurant, _) => "PRE-1",
                    _ => "ABS-2",
                };
                (was.state.clone(), clause, "no write of the run named it".to_owned())
            }
        };
        let within = now.records.get(id).map_or(was.within.as_str(), |r| r.within.as_str());
        let read = read_of(was.kind, id, within);
        let Some(is) = now.records.get(id) else {
            notes.push(Note {
                clause: "ABS-2",
                difference: Some(format!("{kind} {id} is gone ({why}): no tool may delete a record")),
                read,
            });
            continue;
        };
        let difference =
            (is.state != want).then(|| format!("{kind} {id} is \"{}\", not \"{want}\": {why}", is.state));
        notes.push(Note { clause, difference, read });
    }
    notes
}

#[cfg(test)]
mod tests;
