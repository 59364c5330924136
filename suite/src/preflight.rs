//! Checks before any scenario runs, so a wrong URL, a stdio command that does not start, or a
//! dead server ends the run with exit code 2 and one line saying why, instead of a wall of
//! failed clauses.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use chataigne_contract::dataset::{Dataset, RECEIVED_PER_RUN};
use chataigne_contract::envelope::{self, Parsed};

use crate::client::{Exchange, McpClient};
use crate::context::{
    Capabilities, ProtocolFault, Published, RunContext, RunOptions, http_client, load_dataset,
};
use crate::control::Control;
use crate::oracle::Oracle;
use crate::profile::Profile;
use crate::stdio::StdioPool;

/// A current-thread runtime (cucumber's run future is !Send, the fuzzer's properties are
/// synchronous) and the run's context prepared on it: what a run, `fuzz` and `replay` start
/// from. An `Err` is a configuration or connection error (exit code 2).
pub fn prepare_on_own_runtime(profile: Profile) -> anyhow::Result<(tokio::runtime::Runtime, RunContext)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let ctx = runtime.block_on(prepare(profile))?;
    Ok((runtime, ctx))
}

/// Build the run's context: load the dataset, reach the endpoint, list the tools, probe the
/// control API. An `Err` is a configuration or connection error (exit code 2).
pub async fn prepare(mut profile: Profile) -> anyhow::Result<RunContext> {
    profile.validate()?;
    // Before the server is reached: a stdio server is started with the DSN in its environment.
    // An embedded run started it already, and gave its server the DSN.
    let started_here = profile.capture.is_none();
    let error_reports = profile.start_error_reports()?;
    if let Some(capture) = error_reports.as_ref().filter(|_| started_here) {
        eprintln!(
            "error reports: receiving on {}; the server must report to SENTRY_DSN={}",
            capture.addr(),
            capture.dsn()
        );
    }
    let dataset = load_dataset(profile.dataset.as_deref())?;
    let timeout = Duration::from_millis(profile.timeout_ms);
    let http = http_client(timeout)?;
    let stdio = profile.stdio().map(StdioPool::new);
    let endpoint = match &stdio {
        Some(pool) => pool.command.label(),
        None => profile.endpoint().to_owned(),
    };

    let (client, broken_protocol) = match &stdio {
        Some(pool) => (connect_stdio(&profile, pool, timeout).await?, None),
        None => connect(&profile, &http, &endpoint, timeout).await?,
    };
    // The run's calls, from the first: a rate burst counts those on its pair and tool.
    let calls = Arc::new(crate::schedule::CallLog::default());
    let mut client = client.with_log(Arc::clone(&calls), crate::rules::earlier_answer);
    profile.check_server_log()?;
    let (published, runs_left) = match &broken_protocol {
        // Nothing more can be read from this server: the verdict is the fault.
        Some(_) => (Published::default(), None),
        None => (list_tools(&mut client).await, dataset_runs_left(&profile, &dataset, &mut client).await?),
    };
    let oracle = match &broken_protocol {
        Some(_) => Oracle::off("the server's answer to initialize cannot be read"),
        None => {
            let id_map = profile.id_map();
            let (out, back) = (|v: &Value| id_map.outbound(v), |v: &Value| id_map.inbound(v));
            match crate::oracle::applicable(&mut client, &dataset, out, back).await {
                Ok(()) => Oracle::start(&dataset).per_persona(stdio.is_some()),
                Err(why) => Oracle::off(format!("the server's data is not the published dataset: {why}")),
            }
        }
    };
    if let Some(why) = &oracle.not_run {
        eprintln!("differential oracle: not run ({why}); its comparisons are skipped, never passed");
    }
    drop(client);

    let mut capabilities = Capabilities {
        server_log: profile.server_log.is_some(),
        error_reports: error_reports.is_some(),
        stdio: stdio.is_some(),
        ..Default::default()
    };
    let control = match &profile.control {
        None => None,
        Some(cfg) => {
            let control =
                Control::new(http.clone(), &cfg.url, &cfg.secret, timeout).with_log(Arc::clone(&calls));
            match control.probe().await {
                Ok(features) => capabilities.control_features = features,
                Err(e) => bail!("the profile's control API does not answer: {e:#}"),
            }
            capabilities.control_api = true;
            Some(control)
        }
    };

    let id_map = profile.id_map();
    let tenancy = crate::rules::records::Tenancy::new(&dataset, |id| id_map.to_server(id));
    let route: Arc<[String]> = if stdio.is_some() { Arc::from([]) } else { profile.route().into() };
    if route.len() > 1 {
        eprintln!("replicas: each client's requests go in turn to {}", route.join(", "));
    }
    Ok(RunContext {
        options: RunOptions::default(),
        id_map,
        profile,
        endpoint,
        route,
        stdio,
        dataset,
        http,
        timeout,
        control,
        error_reports,
        capabilities,
        published,
        runs_left,
        sessions: Default::default(),
        broken_protocol,
        rate_waits: Default::default(),
        calls,
        oracle,
        tenancy,
    })
}

/// The busy restaurant's orders a run needs, by status: how many it moves out of that status at
/// most on a server nothing resets, and how many must be there when it starts (PRE-3 moves
/// orders back from `preparing`, `ready` and `completed`: refused, so never consumed; the
/// forward matrix walks one `accepted` order to `completed`, PRE-3's forward skip may move one
/// more to `ready` on a server that serves skips, and PRE-2 and PRE-4 each leave one more
/// accepted, so a run never uses those up).
pub const ORDERS_A_RUN_NEEDS: [(&str, usize, usize); 5] = [
    ("received", RECEIVED_PER_RUN, RECEIVED_PER_RUN),
    ("accepted", 0, 1),
    ("preparing", 0, 1),
    ("ready", 0, 1),
    ("completed", 0, 1),
];

/// Pages of 50 counted per status: runs are counted up to 500 orders.
const COUNT_PAGES: usize = 10;

/// Without the control API nothing resets what runs change: count the orders runs move forward,
/// print how many runs are left, and end here (exit code 2) when none is. `None` when not
/// counted (the control API restores the state; no owner token; the orders could not be listed:
/// the scenarios will say why).
async fn dataset_runs_left(
    profile: &Profile,
    dataset: &Dataset,
    client: &mut McpClient,
) -> anyhow::Result<Option<usize>> {
    if profile.control.is_some() || client.persona.as_deref() != Some("owner") {
        return Ok(None);
    }
    let restaurant = &dataset.landmarks.busy_restaurant;
    let server_id = profile.id_map().to_server(restaurant);
    let mut counts = Vec::new();
    for (status, per_run, _) in ORDERS_A_RUN_NEEDS {
        let pages = if per_run == 0 { 1 } else { COUNT_PAGES };
        match count_orders(client, &server_id, status, pages).await {
            Ok(n) => counts.push((status, n)),
            Err(why) => {
                eprintln!("dataset: runs left not counted ({why})");
                return Ok(None);
            }
        }
    }
    let (runs, limiting) = runs_left(&counts);
    if runs == 0 {
        bail!("the dataset is used up: re-seed fixtures/dataset.json ({restaurant} has {limiting})");
    }
    eprintln!("dataset: {runs} runs left before re-seeding ({restaurant} has {limiting})");
    Ok(Some(runs))
}

/// How many runs `counts` (orders of the busy restaurant per status) allow, and what limits them
/// ("86 orders in status received; a run moves up to 3").
pub fn runs_left(counts: &[(&str, usize)]) -> (usize, String) {
    let mut best: Option<(usize, String)> = None;
    for (status, per_run, need) in ORDERS_A_RUN_NEEDS {
        let n = counts.iter().find(|(s, _)| *s == status).map_or(0, |(_, n)| *n);
        let (runs, why) = if n < need {
            (0, format!("{n} orders in status {status}; a run needs {need}"))
        } else if let Some(more) = (n - need).checked_div(per_run) {
            (more + 1, format!("{n} orders in status {status}; a run moves up to {per_run}"))
        } else {
            // A run moves none of these: having them is enough.
            continue;
        };
        if best.as_ref().is_none_or(|(b, _)| runs < *b) {
            best = Some((runs, why));
        }
    }
    best.unwrap_or((usize::MAX, "every status a run needs".to_owned()))
}

/// Orders of `restaurant` (server ID) in `status`, over at most `pages` pages of 50.
async fn count_orders(
    client: &mut McpClient,
    restaurant: &str,
    status: &str,
    pages: usize,
) -> Result<usize, String> {
    let mut n = 0;
    let mut cursor: Option<String> = None;
    for _ in 0..pages {
        let mut args = json!({ "restaurant_id": restaurant, "status": [status], "limit": 50 });
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let ex = client.call_tool("list_orders", args).await;
        let page = match ex.structured().map(envelope::parse) {
            Some(Ok(Parsed::Success { data, meta })) if !ex.is_error() => (data, meta),
            _ => return Err(format!("list_orders of {status} orders: {}", ex.summary())),
        };
        let orders = page.0.get("orders").and_then(Value::as_array);
        n += orders.ok_or_else(|| format!("list_orders of {status} orders: no data.orders"))?.len();
        cursor = page.1.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    Ok(n)
}

/// Initialize with the persona tokens, the owner first, until one works. A server that
/// answered with a 2xx what no MCP client can read gives its client back with the fault.
async fn connect(
    profile: &Profile,
    http: &reqwest::Client,
    endpoint: &str,
    timeout: Duration,
) -> anyhow::Result<(McpClient, Option<ProtocolFault>)> {
    let mut personas: Vec<&String> = profile.tokens.keys().collect();
    personas.sort_by_key(|p| *p != "owner");
    let mut refused = Vec::new();
    let mut other = None;
    for persona in personas {
        let token = profile.tokens.get(persona).cloned();
        let mut client = McpClient::new(http.clone(), endpoint, token, Some(persona.clone()), timeout);
        let ex = client.initialize().await;
        match classify(&ex, endpoint) {
            Init::Ready => return Ok((client, None)),
            Init::Unreachable(reason) => bail!("{reason}"),
            Init::Unauthorized => refused.push(persona.as_str()),
            Init::Broken(reason) => {
                other.get_or_insert(reason);
            }
            // What the server answered is what it answers: other tokens would not read better.
            Init::Unreadable(fault) => return Ok((client, Some(fault))),
        }
    }
    match other {
        Some(reason) => bail!("{reason}"),
        None => bail!(
            "every persona token was refused with HTTP 401 on initialize ({}): check the profile's [tokens]",
            refused.join(", ")
        ),
    }
}

/// Start the first persona's process (the owner's if there is one) and initialize it. Over stdio
/// a token is not checked at initialize: a process that starts and answers is enough.
async fn connect_stdio(profile: &Profile, pool: &StdioPool, timeout: Duration) -> anyhow::Result<McpClient> {
    let label = pool.command.label();
    let persona = profile
        .tokens
        .keys()
        .find(|p| *p == "owner")
        .or_else(|| profile.tokens.keys().next())
        .context("no persona token")?;
    let token = profile.tokens.get(persona).context("no persona token")?;
    let conn = pool.connection(persona, token).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut client = McpClient::stdio(Ok(Arc::clone(&conn)), &label, Some(persona.clone()), timeout);
    let ex = client.initialize().await;
    if ex.result().and_then(|r| r.get("protocolVersion")).is_some() {
        return Ok(client);
    }
    let what = format!("`{}`", pool.command.argv.join(" "));
    let why = match &ex.outcome {
        Err(e) => format!("{what} did not answer initialize over stdio: {e}"),
        Ok(_) => match ex.rpc_error() {
            Some(err) => {
                format!("{what} refused initialize with JSON-RPC error {}", crate::client::compact(err, 200))
            }
            None => format!("{what} answered initialize without a protocolVersion: {}", ex.summary()),
        },
    };
    // What the server said on stderr is often the whole story (a missing setting, a port in use).
    match conn.stderr_tail() {
        Some(tail) if !why.contains(crate::stdio::STDERR_TAIL) => {
            bail!("{why}; {}: {tail}", crate::stdio::STDERR_TAIL)
        }
        _ => bail!("{why}"),
    }
}

enum Init {
    Ready,
    Unauthorized,
    /// No HTTP answer at all: nothing else will work either.
    Unreachable(String),
    /// Not an MCP endpoint, or not one this profile may use (HTML, a 4xx refusal): exit code 2.
    Broken(String),
    /// Served (2xx), but not readable as MCP: a verdict.
    Unreadable(ProtocolFault),
}

fn classify(ex: &Exchange, endpoint: &str) -> Init {
    let resp = match &ex.outcome {
        Ok(r) => r,
        Err(e) => return Init::Unreachable(format!("cannot reach {endpoint}: {e}")),
    };
    if ex.result().and_then(|r| r.get("protocolVersion")).is_some() {
        return Init::Ready;
    }
    let status = resp.status.unwrap_or_default();
    if status == 401 {
        return Init::Unauthorized;
    }
    if resp.content_type.starts_with("text/html") {
        return Init::Broken(format!(
            "{endpoint} answered initialize with an HTML page (HTTP {status}), not JSON-RPC: is it the MCP endpoint?"
        ));
    }
    if (200..300).contains(&status) {
        return Init::Unreadable(unreadable(ex, endpoint, status));
    }
    if let Some(err) = ex.rpc_error() {
        return Init::Broken(format!(
            "{endpoint} refused initialize with JSON-RPC error {} (HTTP {status})",
            crate::client::compact(err, 200)
        ));
    }
    let why = resp.problem.clone().unwrap_or_else(|| "no protocolVersion in the result".to_owned());
    Init::Broken(format!("{endpoint} answered initialize with HTTP {status}: {why}"))
}

/// What a served `initialize` broke: the JSON-RPC correlation (PROTO-2) or the transport and
/// lifecycle (PROTO-1), with the exchange as evidence.
fn unreadable(ex: &Exchange, endpoint: &str, status: u16) -> ProtocolFault {
    let seen = crate::judge::Seen { ex, token: None, published: None, tenancy: None };
    let violations: Vec<_> =
        crate::judge::judge(&seen).1.into_iter().filter(|b| b.clause.starts_with("PROTO-")).collect();
    let clause = violations.iter().find(|v| v.clause == "PROTO-2").map_or("PROTO-1", |v| v.clause);
    let why = match (violations.first(), ex.rpc_error(), ex.response().and_then(|r| r.problem.as_deref())) {
        (Some(v), _, _) => v.detail.clone(),
        (None, Some(err), _) => {
            format!("initialize was refused with JSON-RPC error {}", crate::client::compact(err, 200))
        }
        (None, None, Some(problem)) => format!("the answer to initialize cannot be read: {problem}"),
        (None, None, None) => "the answer to initialize has no protocolVersion".to_owned(),
    };
    ProtocolFault {
        clause,
        detail: format!("{endpoint} answered initialize with HTTP {status}: {why}\n{}", ex.describe()),
    }
}

/// Every page of tools/list; a failure is kept for PROTO-3 to report, not fatal.
async fn list_tools(client: &mut McpClient) -> Published {
    match list_all_tools(client).await {
        Ok(tools) => Published::new(tools),
        Err(problem) => Published { problem: Some(problem), ..Default::default() },
    }
}

/// `tools/list`, following `nextCursor`; `Err` says what went wrong, with the exchange.
pub async fn list_all_tools(client: &mut McpClient) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let ex = client.request("tools/list", params).await;
        let Some(result) = ex.result() else {
            return Err(format!("tools/list failed: {}\n{}", ex.summary(), ex.describe()));
        };
        let Some(page) = result.get("tools").and_then(Value::as_array) else {
            return Err(format!("tools/list has no `tools` array\n{}", ex.describe()));
        };
        tools.extend(page.iter().cloned());
        cursor = result.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Err("tools/list did not end after 100 pages".to_owned())
}

#[cfg(test)]
mod tests {
    use super::runs_left;

    #[test]
    fn runs_left_follow_the_scarcest_status() {
        let all = |received| {
            [("received", received), ("accepted", 9), ("preparing", 6), ("ready", 3), ("completed", 25)]
        };
        assert_eq!(runs_left(&all(86)).0, 28);
        assert_eq!(runs_left(&all(3)).0, 1);
        let (runs, why) = runs_left(&all(2));
        assert_eq!(runs, 0);
        assert_eq!(why, "2 orders in status received; a run needs 3");
        let (runs, why) =
            runs_left(&[("received", 86), ("accepted", 9), ("preparing", 6), ("completed", 25)]);
        assert_eq!((runs, why.as_str()), (0, "0 orders in status ready; a run needs 1"));
        let (runs, why) = runs_left(&[("received", 86), ("preparing", 6), ("ready", 3), ("completed", 25)]);
        assert_eq!((runs, why.as_str()), (0, "0 orders in status accepted; a run needs 1"));
    }
}
