//! Micro-benchmarks without a framework (`harness = false`, no criterion to build): each case runs
//! a batch of iterations per sample and reports the median ns/op over the samples, so a stray
//! slow sample does not move it. Public APIs only.
//!
//! `cargo bench -p mock-server --bench micro` (docs/BENCHMARKS.md); `MICRO_LARGE=N` changes the
//! large store's synthetic order count (default 1,000,000).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use chataigne_contract::ToolName;
use chataigne_contract::schema::Validator;
use futures::FutureExt;
use mock_server::state::idempotency::{Claim, IdempotencyStore, KeyHasher, MemoryStore};
use mock_server::state::ratelimit::{MemoryLimiter, RateKey, RateLimiter};
use mock_server::tools::cursor::{Binding, CursorCodec};
use mock_server::tools::{self, Call};
use mock_server::{App, Config};
use serde_json::{Value, json};

const SAMPLES: usize = 15;

/// Median and minimum ns/op of `SAMPLES` batches of `iters` calls of `f`.
fn bench(name: &str, iters: u64, mut f: impl FnMut(u64)) -> f64 {
    let mut per_op: Vec<f64> = (0..SAMPLES)
        .map(|s| {
            let start = Instant::now();
            for i in 0..iters {
                f(s as u64 * iters + i);
            }
            start.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    per_op.sort_by(f64::total_cmp);
    let median = per_op[SAMPLES / 2];
    println!("| {name} | {median:.0} | {:.0} | {} × {iters} |", per_op[0], SAMPLES);
    median
}

fn binding(filters: [u8; 32]) -> Binding<'static> {
    Binding { tool: "list_orders", filters, client_id: "cli_console", user_id: "usr_owner" }
}

fn list_call(app: &Arc<App>, restaurant: &str, cursor: Option<&str>) -> Call {
    let mut args = json!({ "restaurant_id": restaurant, "limit": 20 });
    if let Some(c) = cursor {
        args["cursor"] = json!(c);
    }
    let principal = app.tokens.check("dev-token-owner").expect("the owner's development token");
    Call::new(app.clone(), ToolName::ListOrders, args, principal)
}

/// Page 1 and page 2 (through the first page's cursor) of `list_orders` on `rst_large`: the
/// tool's own work (store range, JSON, cursor), without HTTP and the pipeline's fixed checks.
fn list_pages(label: &str, synthetic: usize) -> (f64, f64) {
    let start = Instant::now();
    let app = Arc::new(
        App::new(Config { secret: Some("bench".into()), synthetic_orders: synthetic, ..Config::embedded() })
            .expect("the app starts"),
    );
    println!("| (load {label}: {:.2} s) | | | |", start.elapsed().as_secs_f64());
    let first = list_call(&app, "rst_large", None);
    let cursor = tools::read(&first).expect("page 1").next_cursor.expect("more pages");
    let second = list_call(&app, "rst_large", Some(&cursor));
    let p1 = bench(&format!("list_orders page 1, rst_large {label}"), 2_000, |_| {
        black_box(tools::read(black_box(&first)).expect("page 1"));
    });
    let p2 = bench(&format!("list_orders page 2 (cursor), rst_large {label}"), 2_000, |_| {
        black_box(tools::read(black_box(&second)).expect("page 2"));
    });
    (p1, p2)
}

fn main() {
    println!("| case | median ns/op | min ns/op | samples × iterations |");
    println!("|---|---:|---:|---|");

    let codec = CursorCodec::new(b"bench-secret-of-32-bytes-exactly");
    let position = ("2026-11-30T20:47:13Z".to_owned(), "ord_c0021".to_owned());
    let cursor = codec.encode(&binding([7; 32]), &position);
    bench("cursor encode", 100_000, |_| {
        black_box(codec.encode(&binding(black_box([7; 32])), black_box(&position)));
    });
    bench("cursor decode", 100_000, |_| {
        assert!(codec.decode(&binding(black_box([7; 32])), black_box(&cursor)).is_some());
    });

    let validator = Validator::new(&ToolName::ListOrders.input_schema()).expect("the schema compiles");
    let args: Value = json!({
        "restaurant_id": "rst_central", "limit": 20, "status": ["received", "accepted"],
        "channel": "phone", "created_from": "2026-11-01T00:00:00Z", "created_to": "2026-11-30T23:59:59Z"
    });
    bench("input schema: list_orders, all filters (valid)", 100_000, |_| {
        assert!(validator.is_valid(black_box(&args)));
    });
    let minimal = json!({ "restaurant_id": "rst_central", "limit": 20 });
    bench("input schema: list_orders, restaurant + limit (valid)", 100_000, |_| {
        assert!(validator.is_valid(black_box(&minimal)));
    });

    let hasher = KeyHasher::new(b"bench-secret-of-32-bytes-exactly");
    bench("idempotency key slot (HMAC)", 100_000, |i| {
        black_box(hasher.slot("cli_console", "usr_owner", "create_instruction", &format!("bench-key-{i}")));
    });
    // Room for every fresh key of the samples (1.5 million): past the default cap (100,000 live
    // records) a claim is refused, as it should be, and the bench measured that instead.
    let store = MemoryStore::with_capacity(2_000_000);
    let data = json!({ "instruction": { "id": "ins_01234567890123456789", "text": "Bench instruction" } });
    bench("idempotency claim + complete (fresh key)", 100_000, |i| {
        let mut slot = [0u8; 32];
        slot[..8].copy_from_slice(&i.to_le_bytes());
        assert_eq!(store.claim(slot, [1; 32], 1, 0).now_or_never(), Some(Ok(Claim::Fresh)));
        store.complete(slot, [1; 32], &data, 0).now_or_never().expect("ready").expect("memory store");
    });
    bench("idempotency claim (replay of a stored key)", 100_000, |i| {
        let mut slot = [0u8; 32];
        slot[..8].copy_from_slice(&(i % 1000).to_le_bytes());
        assert!(matches!(store.claim(slot, [1; 32], 1, 1).now_or_never(), Some(Ok(Claim::Replay(_)))));
    });

    let limiter = MemoryLimiter::default();
    let key = RateKey { client_id: "cli_console".into(), user_id: "usr_owner".into(), tool: "get_order" };
    bench("rate limiter hit (what --defect no-rate-limit skips)", 100_000, |_| {
        black_box(
            limiter.hit(black_box(&key), u32::MAX, 0).now_or_never().expect("ready").expect("memory limiter"),
        )
        .ok();
    });

    let large: usize = std::env::var("MICRO_LARGE").ok().and_then(|n| n.parse().ok()).unwrap_or(1_000_000);
    let (small1, small2) = list_pages("+1,000", 1_000);
    let (large1, large2) = list_pages(&format!("+{large}"), large);
    println!();
    println!("list_orders page 1 ratio (large / 1,000): {:.2}", large1 / small1);
    println!("list_orders page 2 ratio (large / 1,000): {:.2}", large2 / small2);
}
