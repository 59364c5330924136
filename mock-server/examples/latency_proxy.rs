//! A TCP proxy on loopback that delays every byte by a fixed time in each direction, to measure
//! the suite as it runs against a server far away (bench/remote.sh, docs/BENCHMARKS.md).
//!
//! `cargo run --release -p mock-server --example latency_proxy -- LISTEN UPSTREAM ONE_WAY_MS`
//! e.g. `127.0.0.1:18181 127.0.0.1:18080 50` gives a 100 ms round trip. Each chunk read is
//! written on after `ONE_WAY_MS`, in order, so a connection behaves like a long fat pipe:
//! latency without a bandwidth cap.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [listen, upstream, delay] = args.as_slice() else {
        eprintln!("usage: latency_proxy LISTEN UPSTREAM ONE_WAY_MS");
        std::process::exit(2);
    };
    let delay = Duration::from_millis(delay.parse().unwrap_or_else(|_| {
        eprintln!("ONE_WAY_MS must be a number of milliseconds");
        std::process::exit(2)
    }));
    let listener = TcpListener::bind(listen).await?;
    eprintln!("latency_proxy: {listen} → {upstream}, {} ms each way", delay.as_millis());
    loop {
        let (client, _) = listener.accept().await?;
        let upstream = upstream.clone();
        tokio::spawn(async move {
            let Ok(server) = TcpStream::connect(&upstream).await else { return };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            tokio::join!(pipe(cr, sw, delay), pipe(sr, cw, delay));
        });
    }
}

/// Copies `from` to `to`, each chunk held back until `delay` after it was read.
async fn pipe(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin + Send + 'static,
    delay: Duration,
) {
    // Bounded: a peer that sends faster than the other reads is slowed, not buffered forever.
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(256);
    let writer = tokio::spawn(async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send((Instant::now() + delay, buf[..n].to_vec())).await.is_err() {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.await;
}
