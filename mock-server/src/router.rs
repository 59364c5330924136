//! The composition of routes: the transport's (`/mcp`, metadata) and, when configured, the
//! development-only ones (`/oauth`, `/control`). Kept apart so the transport never depends on
//! `dev`.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::dev::{control, oauth};
use crate::transport::{self, http};

pub fn router(app: Arc<App>, ct: CancellationToken) -> Router {
    let mut router = http::routes(app.clone(), ct);
    if app.config.auth_server {
        router = router.merge(oauth::router(oauth::AuthServer {
            oauth: app.oauth.clone(),
            clock: app.clock.clone(),
            public_url: app.public_url.clone(),
            personas: app.config.dataset.personas.clone(),
        }));
    }
    if app.config.control_secret.is_some() {
        router = router.nest("/control", control::router(app.clone()));
    }
    // Every route is behind the DNS-rebinding check, not only /mcp (PROTO-5).
    router.layer(from_fn_with_state(app, http::rebinding_guard))
}

pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    let limits = app.config.serve;
    let router = router(app, ct.child_token());
    // rmcp's token is cancelled only once the calls in flight are drained (or their grace
    // period is over): cancelling it at the signal would answer them with 500.
    transport::serve::serve(listener, router, limits, shutdown).await;
    ct.cancel();
    Ok(())
}
