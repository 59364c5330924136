//! A burst of clients against a slowloris flood (docs/RELIABILITY.md, "Caps and timeouts"): holds
//! `SLOW` connections open that send one header byte a second (reopened whenever the server
//! closes one), then starts `CLIENTS` one-request clients at once, each on its own connection
//! with `Connection: close`, and counts how each ended: answered (by status), closed or reset
//! with no answer, or out of time. Exits 1 unless every client was answered 200.
//!
//! ```sh
//! bench/burst.sh                                    # builds, starts the server, runs this
//! target/debug/examples/burst 127.0.0.1:8080        # against a server already running
//! ```
//!
//! Environment: `CLIENTS` (2000), `SLOW` (500), `SETTLE_SECONDS` (3: how long the slow
//! connections dribble before the burst), `TIMEOUT_SECONDS` (60: a client's whole exchange),
//! `TOGETHER` (1: every client opens its connection, then all send at once, as workers started
//! together do; 0: each sends as soon as it is connected).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Room for every connection this process holds: the burst and the flood together.
fn raise_descriptor_limit() {
    #[cfg(unix)]
    {
        use nix::sys::resource::{Resource, getrlimit, setrlimit};
        if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

/// One slowloris connection for as long as the run lasts: half a request, then a header byte a
/// second; when the server closes it, another one takes its place. Counts the closes.
async fn slow_peer(addr: SocketAddr, open: Arc<AtomicUsize>, closed: Arc<AtomicUsize>) {
    loop {
        let Ok(mut stream) = TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let head = format!("GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ");
        if stream.write_all(head.as_bytes()).await.is_ok() {
            open.fetch_add(1, Ordering::Relaxed);
            let mut buf = [0u8; 256];
            loop {
                tokio::select! {
                    read = stream.read(&mut buf) => if matches!(read, Ok(0) | Err(_)) { break },
                    () = tokio::time::sleep(Duration::from_secs(1)) => {
                        if stream.write_all(b"a").await.is_err() {
                            break;
                        }
                    }
                }
            }
            open.fetch_sub(1, Ordering::Relaxed);
        }
        closed.fetch_add(1, Ordering::Relaxed);
    }
}

/// How one client's exchange ended.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Status(u16),
    /// Closed or reset by the server before a whole status line: the failure of issue 28.
    NoAnswer,
    ConnectFailed,
    TimedOut,
}

/// One client: connects, waits at `barrier` (when given) until every client has connected, then
/// sends its request and reads the answer to the end.
async fn one_request(addr: SocketAddr, barrier: Option<Arc<Barrier>>) -> Outcome {
    let connected = TcpStream::connect(addr).await;
    if let Some(barrier) = barrier {
        barrier.wait().await;
    }
    let Ok(mut stream) = connected else { return Outcome::ConnectFailed };
    let request = format!(
        "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).await.is_err() {
        return Outcome::NoAnswer;
    }
    let mut answer = Vec::new();
    // A reset after part of the answer still counts what arrived.
    let _ = stream.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer);
    match text.strip_prefix("HTTP/1.1 ").and_then(|rest| rest.get(..3)).and_then(|s| s.parse().ok()) {
        Some(status) => Outcome::Status(status),
        None => Outcome::NoAnswer,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .context("usage: burst HOST:PORT")?
        .parse()
        .context("HOST:PORT, e.g. 127.0.0.1:8080")?;
    let clients = env_or("CLIENTS", 2000) as usize;
    let slow = env_or("SLOW", 500) as usize;
    let settle = Duration::from_secs(env_or("SETTLE_SECONDS", 3));
    let limit = Duration::from_secs(env_or("TIMEOUT_SECONDS", 60));
    let together = env_or("TOGETHER", 1) == 1;
    raise_descriptor_limit();

    let (open, closed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let flood: Vec<_> =
        (0..slow).map(|_| tokio::spawn(slow_peer(addr, open.clone(), closed.clone()))).collect();
    tokio::time::sleep(settle).await;
    let closed_before = closed.load(Ordering::Relaxed);
    println!(
        "slow-header connections: {} open after {settle:?} ({closed_before} closed by the server so far)",
        open.load(Ordering::Relaxed)
    );

    let barrier = together.then(|| Arc::new(Barrier::new(clients)));
    let started = Instant::now();
    let burst: Vec<_> = (0..clients)
        .map(|_| {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                let sent = Instant::now();
                let outcome = tokio::time::timeout(limit, one_request(addr, barrier))
                    .await
                    .unwrap_or(Outcome::TimedOut);
                (outcome, sent.elapsed())
            })
        })
        .collect();
    let mut outcomes = BTreeMap::<Outcome, usize>::new();
    let mut answered = Vec::new();
    for task in burst {
        let (outcome, took) = task.await.context("a client task")?;
        if outcome == Outcome::Status(200) {
            answered.push(took);
        }
        *outcomes.entry(outcome).or_default() += 1;
    }
    let wall = started.elapsed();
    answered.sort();
    let flood_closed = closed.load(Ordering::Relaxed) - closed_before;
    let still_open = open.load(Ordering::Relaxed);
    for task in flood {
        task.abort();
    }

    let how = if together { "all connected before any sends" } else { "each sends as it connects" };
    println!("{clients} one-request clients at once ({how}), {slow} slow-header connections held open:");
    for (outcome, n) in &outcomes {
        println!("  {outcome:?}: {n}");
    }
    println!(
        "  answered 200: {} of {clients}; time to answer p50 {:?}, p90 {:?}, p99 {:?}, max {:?}; all done in {wall:?}",
        answered.len(),
        percentile(&answered, 0.50),
        percentile(&answered, 0.90),
        percentile(&answered, 0.99),
        percentile(&answered, 1.0),
    );
    println!(
        "  slow-header connections closed by the server during the burst: {flood_closed} (each reopened); open at the end: {still_open}"
    );
    if answered.len() != clients {
        anyhow::bail!("{} of {clients} clients were not answered 200", clients - answered.len());
    }
    Ok(())
}
