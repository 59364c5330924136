//! Memory under hostile load (docs/RELIABILITY.md, "Hostile peers"): starts the release binary,
//! then, over real HTTP, registers OAuth clients of the largest size accepted from many loopback
//! addresses, runs authorization flows far past the per-client token cap, and makes keyed writes
//! with fresh keys far past the idempotency cap, reading VmRSS from /proc after each step.
//!
//! ```sh
//! cargo build --release -p mock-server --bin chataigne-mock --example memory_bound
//! target/release/examples/memory_bound              # the caps as shipped
//! UNCAPPED=1 target/release/examples/memory_bound   # every cap raised out of reach: the before
//! ```
//!
//! Environment: `MOCK_BIN` (default `target/release/chataigne-mock`), `CLIENTS` (5000),
//! `FLOW_CLIENTS` (200) × `FLOWS` (20), `WRITES` (300000), `UNCAPPED`. Linux only (/proc, and
//! the whole 127.0.0.0/8 on the loopback interface for the source addresses).

use std::net::{IpAddr, Ipv4Addr};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::StreamExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const PER_ADDRESS: usize = 20;
const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// (VmRSS, VmHWM) in KiB.
fn rss(pid: u32) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

/// A client; one sending from `from` keeps no idle connection, so the hundreds of addresses do
/// not leave thousands of open connections (each with its buffers) in the server's figures.
fn client(from: Option<IpAddr>) -> reqwest::Client {
    let builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).local_address(from);
    let builder = if from.is_some() { builder.pool_max_idle_per_host(0) } else { builder };
    builder.build().expect("a client")
}

/// Open file descriptors of `pid` (its connections, mostly).
fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

fn form(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    pairs.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect::<Vec<_>>().join("&")
}

/// A registration of the largest size the caps accept: 8 redirect URIs of ~1.9 KiB, a name of
/// 200 characters, just under 16 KiB.
fn largest_registration(i: usize) -> Value {
    let uris: Vec<String> =
        (0..8).map(|u| format!("http://127.0.0.1:9/cb/{i}/{u}/{}", "p".repeat(1_930))).collect();
    json!({ "redirect_uris": uris, "client_name": "n".repeat(200) })
}

struct Row {
    step: String,
    detail: String,
    rss: (u64, u64),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bin = std::env::var("MOCK_BIN").unwrap_or_else(|_| "target/release/chataigne-mock".into());
    let uncapped = std::env::var("UNCAPPED").is_ok_and(|v| !v.is_empty() && v != "0");
    let (clients, flow_clients, flows, writes) = (
        env_or("CLIENTS", 5000),
        env_or("FLOW_CLIENTS", 200),
        env_or("FLOWS", 20),
        env_or("WRITES", 300_000),
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let base = format!("http://127.0.0.1:{port}");
    let mut args: Vec<String> = ["--listen", &format!("127.0.0.1:{port}"), "--secret", "memory"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // The tool rate limits would stop one persona's writes at 500 a minute long before any cap.
    args.extend(["--defect", "no-rate-limit", "--log-file", "/dev/null"].map(String::from));
    if uncapped {
        for (flag, value) in [
            ("--max-idempotency-records", "1000000000"),
            ("--max-registered-clients", "1000000000"),
            ("--registrations-per-minute", "4294967295"),
        ] {
            args.extend([flag.to_owned(), value.to_owned()]);
        }
    }
    let mut child = tokio::process::Command::new(&bin)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {bin} (cargo build --release -p mock-server first)"))?;
    let pid = child.id().context("a pid")?;
    let http = client(None);
    let started = Instant::now();
    while http.get(format!("{base}/.well-known/oauth-protected-resource")).send().await.is_err() {
        if started.elapsed() > Duration::from_secs(20) {
            bail!("the server did not answer within 20 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut rows = vec![Row { step: "idle".into(), detail: String::new(), rss: rss(pid)? }];

    // 1. Registrations, 20 per loopback address (the per-address limit), largest size.
    let addresses = clients.div_ceil(PER_ADDRESS);
    let senders: Vec<reqwest::Client> = (0..addresses)
        .map(|k| client(Some(IpAddr::V4(Ipv4Addr::new(127, 1, (k / 250) as u8, (k % 250 + 1) as u8)))))
        .collect();
    let t = Instant::now();
    let mut answers: Vec<(usize, u16, Option<String>)> = Vec::new();
    for chunk in 0..5 {
        let range = clients * chunk / 5..clients * (chunk + 1) / 5;
        let done: Vec<(usize, u16, Option<String>)> = futures::stream::iter(range.clone())
            .map(|i| {
                let (sender, base) = (senders[i / PER_ADDRESS].clone(), base.clone());
                async move {
                    let answer = sender
                        .post(format!("{base}/oauth/register"))
                        .json(&largest_registration(i))
                        .send()
                        .await;
                    match answer {
                        Ok(a) => {
                            let status = a.status().as_u16();
                            let body: Value = a.json().await.unwrap_or(Value::Null);
                            (i, status, body["client_id"].as_str().map(str::to_owned))
                        }
                        Err(_) => (i, 0, None),
                    }
                }
            })
            .buffer_unordered(32)
            .collect()
            .await;
        answers.extend(done);
        if chunk < 4 {
            rows.push(Row {
                step: format!("registrations: {}", range.end),
                detail: format!("{} open descriptors", fds(pid)),
                rss: rss(pid)?,
            });
        }
    }
    let created = answers.iter().filter(|a| a.1 == 201).count();
    let mut registered: Vec<(usize, String)> =
        answers.into_iter().filter_map(|(i, _, id)| id.map(|id| (i, id))).collect();
    registered.sort();
    let over: Vec<u16> = futures::stream::iter(0..PER_ADDRESS)
        .then(|i| {
            let (sender, base) = (senders[0].clone(), base.clone());
            async move {
                let a =
                    sender.post(format!("{base}/oauth/register")).json(&largest_registration(i)).send().await;
                a.map_or(0, |a| a.status().as_u16())
            }
        })
        .collect()
        .await;
    rows.push(Row {
        step: format!("{clients} registrations of ~16 KiB from {addresses} addresses"),
        detail: format!(
            "{created} × 201 in {:.1} s; {} more from one address: {} × 429",
            t.elapsed().as_secs_f64(),
            PER_ADDRESS,
            over.iter().filter(|s| **s == 429).count()
        ),
        rss: rss(pid)?,
    });

    // 2. Authorization flows on the newest clients, far past the per-client token cap.
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()));
    let newest: Vec<(usize, String)> = registered.iter().rev().take(flow_clients).cloned().collect();
    let t = Instant::now();
    // Round robin over the clients, as many users signing in would.
    let jobs: Vec<(usize, String)> = (0..flows).flat_map(|_| newest.iter().cloned()).collect();
    let tokens: Vec<bool> = futures::stream::iter(jobs)
        .map(|(i, client_id)| {
            let (http, base, challenge) = (http.clone(), base.clone(), challenge.clone());
            async move {
                let redirect = largest_registration(i)["redirect_uris"][0].as_str().unwrap().to_owned();
                let consent = form(&[
                    ("response_type", "code"),
                    ("client_id", &client_id),
                    ("redirect_uri", &redirect),
                    ("code_challenge", &challenge),
                    ("code_challenge_method", "S256"),
                    ("persona", "owner"),
                ]);
                let approved = http
                    .post(format!("{base}/oauth/authorize"))
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(consent)
                    .send()
                    .await
                    .ok()?;
                let location = approved.headers().get("location")?.to_str().ok()?.to_owned();
                let code = location.split("code=").nth(1)?.split('&').next()?.to_owned();
                let exchange = form(&[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", &redirect),
                    ("client_id", &client_id),
                    ("code_verifier", VERIFIER),
                ]);
                let token = http
                    .post(format!("{base}/oauth/token"))
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(exchange)
                    .send()
                    .await
                    .ok()?;
                Some(token.status().as_u16() == 200)
            }
        })
        .buffer_unordered(32)
        .map(|ok| ok.unwrap_or(false))
        .collect()
        .await;
    rows.push(Row {
        step: format!("{} authorization flows ({flow_clients} clients × {flows})", tokens.len()),
        detail: format!(
            "{} tokens issued in {:.1} s",
            tokens.iter().filter(|ok| **ok).count(),
            t.elapsed().as_secs_f64()
        ),
        rss: rss(pid)?,
    });

    // 3. Keyed writes with a fresh key each, sampled every tenth of the run.
    let nonce = std::process::id();
    let step = (writes / 10).max(1);
    let (mut done, mut ok, mut refused, mut other) = (0usize, 0usize, 0usize, 0usize);
    let t = Instant::now();
    while done < writes {
        let batch = step.min(writes - done);
        let outcomes: Vec<String> = futures::stream::iter(done..done + batch)
            .map(|n| {
                let (http, base) = (http.clone(), base.clone());
                async move {
                    let body = json!({ "jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
                        "name": "create_instruction",
                        "arguments": { "restaurant_id": "rst_central", "text": "Bench instruction, fresh key",
                            "idempotency_key": format!("mem-{nonce}-{n:09}") } } });
                    let answer = http
                        .post(format!("{base}/mcp"))
                        .header("accept", "application/json, text/event-stream")
                        .header("authorization", "Bearer dev-token-owner")
                        .json(&body)
                        .send()
                        .await;
                    let Ok(answer) = answer else { return "transport".to_owned() };
                    let reply: Value = answer.json().await.unwrap_or(Value::Null);
                    let data = &reply["result"]["structuredContent"]["data"];
                    data["error"]["code"]
                        .as_str()
                        .unwrap_or(if data.is_object() { "ok" } else { "?" })
                        .to_owned()
                }
            })
            .buffer_unordered(32)
            .collect()
            .await;
        done += batch;
        for o in &outcomes {
            match o.as_str() {
                "ok" => ok += 1,
                "MCP_DEPENDENCY_UNAVAILABLE" => refused += 1,
                _ => other += 1,
            }
        }
        rows.push(Row {
            step: format!("keyed writes: {done}"),
            detail: format!("{ok} ok, {refused} MCP_DEPENDENCY_UNAVAILABLE, {other} other"),
            rss: rss(pid)?,
        });
    }
    let elapsed = t.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(1)).await;
    rows.push(Row {
        step: "idle, 1 s later".into(),
        detail: format!("writes took {elapsed:.1} s"),
        rss: rss(pid)?,
    });

    println!(
        "# chataigne-mock memory under hostile load ({})\n",
        if uncapped { "caps raised" } else { "caps as shipped" }
    );
    println!("| step | outcome | VmRSS KiB | VmHWM KiB |\n|---|---|---:|---:|");
    for row in rows {
        println!("| {} | {} | {} | {} |", row.step, row.detail, row.rss.0, row.rss.1);
    }
    let _ = child.kill().await;
    Ok(())
}
