//! A server on a thread and runtime of its own (the embedded reference server, the error-report
//! endpoint), so it serves whatever runtime the run uses, and before it starts; it stops when
//! dropped.

use std::future::Future;
use std::pin::Pin;

use anyhow::Context;

/// Resolves when the server should stop.
pub type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Stops the server, and waits for its thread, when dropped.
pub struct Background {
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs `serve` on `listener` in a thread named `name`, on the runtime `runtime` builds; returns
/// once it listens (or with why it could not).
pub fn spawn<F, Fut>(
    name: &str,
    mut runtime: tokio::runtime::Builder,
    listener: std::net::TcpListener,
    serve: F,
) -> anyhow::Result<Background>
where
    F: FnOnce(tokio::net::TcpListener, Shutdown) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<anyhow::Result<()>>();
    let thread = std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        let started = runtime.enable_all().build().map_err(anyhow::Error::from).and_then(|rt| {
            // A tokio listener registers with the runtime it is made in.
            let listener = {
                let _in_runtime = rt.enter();
                tokio::net::TcpListener::from_std(listener)?
            };
            Ok((rt, listener))
        });
        let (rt, listener) = match started {
            Ok(started) => started,
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        };
        let _ = ready_tx.send(Ok(()));
        rt.block_on(serve(
            listener,
            Box::pin(async move {
                let _ = rx.await;
            }),
        ));
    })?;
    ready_rx.recv().with_context(|| format!("the {name} thread died"))??;
    Ok(Background { shutdown: Some(tx), thread: Some(thread) })
}
