//! The HTTP/1.1 accept loop, with what `axum::serve` does not configure: a header read timeout,
//! a deadline for each request body, a cap on open connections, and a bounded graceful
//! shutdown. Without them a few hundred stalled connections held every file descriptor and a
//! stalled client kept the server from exiting (docs/RELIABILITY.md, "Caps and timeouts").

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::{Request, Response, StatusCode, header};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Caps and timeouts of the HTTP listener (`--max-connections`, `--header-timeout-ms`,
/// `--body-timeout-ms`, `--shutdown-timeout-ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// Open connections at most (lowered to fit the process's file descriptor limit). Past it
    /// the oldest idle connection is closed for a new one, or the new one waits.
    pub max_connections: usize,
    /// A request's headers must arrive within this; it also closes idle keep-alive connections.
    pub header_timeout: Duration,
    /// A request's whole body must arrive within this after its headers.
    pub body_timeout: Duration,
    /// After the shutdown signal, connections get this long to finish; then they are closed.
    pub shutdown_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            max_connections: 512,
            // Also the keep-alive idle timeout: hyper's default, longer than most client pools
            // keep an idle connection (a request on a connection the server is closing fails).
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            shutdown_timeout: Duration::from_secs(10),
        }
    }
}

/// Why a request body could not be read: each has its own answer (only one is 413, LIM-7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    TooLarge,
    TimedOut,
    /// The client closed or broke the connection before the announced length.
    CutShort,
}

impl BodyError {
    /// What `axum::body::to_bytes` (or an extractor) failed on, from the error's source chain.
    pub fn of(error: &axum::Error) -> BodyError {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = cause {
            if e.is::<http_body_util::LengthLimitError>() {
                return BodyError::TooLarge;
            }
            if e.is::<BodyTimeout>() {
                return BodyError::TimedOut;
            }
            cause = e.source();
        }
        BodyError::CutShort
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub struct BodyTimeout;

/// A request body that fails once its deadline has passed. The deadline is for the whole body,
/// not between chunks: a byte every few seconds would otherwise hold a connection for ever.
struct TimedBody {
    inner: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimeout)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A connection's state: how many requests it has in progress, or `EVICTED` once chosen to be
/// closed (then no request may start on it).
type Busy = Arc<AtomicUsize>;
const EVICTED: usize = 1 << (usize::BITS - 1);

/// One request in progress on a connection, for as long as its answer is being produced.
struct InProgress(Busy);

impl InProgress {
    fn start(busy: &Busy) -> Option<InProgress> {
        let started =
            busy.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n & EVICTED == 0).then_some(n + 1));
        started.ok().map(|_| InProgress(busy.clone()))
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The open connections, oldest first, so the oldest idle one can be closed for a new one.
#[derive(Default)]
struct Open {
    next: u64,
    live: BTreeMap<u64, (Busy, CancellationToken)>,
}

impl Open {
    /// Closes the oldest connection with no request in progress (headers still coming in, or
    /// kept alive between requests). True if one was closed or is already on its way out.
    fn evict_oldest_idle(&self) -> bool {
        if self.live.values().any(|(busy, _)| busy.load(Ordering::Acquire) == EVICTED) {
            return true;
        }
        for (busy, close) in self.live.values() {
            if busy.compare_exchange(0, EVICTED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                close.cancel();
                return true;
            }
        }
        false
    }
}

fn lock(open: &Mutex<Open>) -> std::sync::MutexGuard<'_, Open> {
    open.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes a connection from [`Open`] when its task ends, however it ends.
struct Registered(Arc<Mutex<Open>>, u64);

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.0).live.remove(&self.1);
    }
}

/// The cap actually applied: `wanted`, lowered to leave room under the process's descriptor
/// limit for the listener, the log, Redis and the runtime.
fn effective_cap(wanted: usize) -> usize {
    #[cfg(unix)]
    if let Ok((soft, _)) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE) {
        let soft = usize::try_from(soft).unwrap_or(usize::MAX);
        let room = soft.saturating_sub((soft / 4).min(64)).max(1);
        if room < wanted {
            tracing::warn!(
                max_connections = room,
                "the connection cap is lowered to fit the file descriptor limit"
            );
            return room;
        }
    }
    wanted.max(1)
}

/// Accept errors that mean "out of file descriptors": closing an idle connection frees one.
fn out_of_descriptors(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        use nix::errno::Errno;
        matches!(e.raw_os_error(), Some(code) if code == Errno::EMFILE as i32 || code == Errno::ENFILE as i32)
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets open connections finish
/// for at most `limits.shutdown_timeout` and closes the rest.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let permits = Arc::new(Semaphore::new(effective_cap(limits.max_connections)));
    let open = Arc::new(Mutex::new(Open::default()));
    let draining = CancellationToken::new();
    let mut tasks = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    let mut starved = false;
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => {
                    starved = false;
                    accepted
                }
                Err(e) if out_of_descriptors(&e) => {
                    if !starved {
                        tracing::warn!("out of file descriptors: closing idle connections to accept new ones");
                        starved = true;
                    }
                    lock(&open).evict_oldest_idle();
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                // A peer gone before its accept: the next one may be fine.
                Err(e) if matches!(e.kind(), ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset) => continue,
                // Anything else: do not spin on it.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => tokio::select! {
                biased;
                () = &mut shutdown => break,
                permit = make_room(&permits, &open) => permit,
            },
        };
        let (busy, close) = (Busy::default(), CancellationToken::new());
        let id = {
            let mut open_now = lock(&open);
            let id = open_now.next;
            open_now.next += 1;
            open_now.live.insert(id, (busy.clone(), close.clone()));
            id
        };
        let registered = Registered(open.clone(), id);
        let handler = Handler { router: router.clone(), peer, busy, body_timeout: limits.body_timeout };
        let connection = connection(stream, handler, limits.header_timeout);
        tasks.spawn(run_connection(connection, permit, registered, close, draining.clone()));
    }
    drop(listener);
    draining.cancel();
    let drained =
        tokio::time::timeout(limits.shutdown_timeout, async { while tasks.join_next().await.is_some() {} })
            .await;
    if drained.is_err() {
        tracing::warn!(
            connections = tasks.len(),
            "shutdown: connections still open after the grace period are closed"
        );
        tasks.shutdown().await;
    }
}

/// Waits for a free connection slot, closing the oldest idle connection to make one. When
/// every connection has a request in progress, the new one waits until one ends.
async fn make_room(permits: &Arc<Semaphore>, open: &Arc<Mutex<Open>>) -> OwnedSemaphorePermit {
    loop {
        lock(open).evict_oldest_idle();
        tokio::select! {
            permit = permits.clone().acquire_owned() => return permit.expect("the semaphore is never closed"),
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}

type Connection = hyper::server::conn::http1::Connection<TokioIo<tokio::net::TcpStream>, Handler>;
type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// The router as one connection's hyper service: each body behind its deadline, the peer
/// address for the registration limit, its requests counted in `busy`.
struct Handler {
    router: Router,
    peer: SocketAddr,
    busy: Busy,
    body_timeout: Duration,
}

impl hyper::service::Service<Request<Incoming>> for Handler {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, request: Request<Incoming>) -> Answer {
        let Some(in_progress) = InProgress::start(&self.busy) else {
            // Chosen to make room just as this request arrived: it is closing anyway.
            let closing = Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .header(header::CONNECTION, "close")
                .body(Body::empty())
                .expect("a valid response");
            return Box::pin(std::future::ready(Ok(closing)));
        };
        let (mut parts, body) = request.into_parts();
        parts.extensions.insert(ConnectInfo(self.peer));
        let deadline = Box::pin(tokio::time::sleep(self.body_timeout));
        let request = Request::from_parts(parts, Body::new(TimedBody { inner: body, deadline }));
        let router = self.router.clone();
        Box::pin(async move {
            let _in_progress = in_progress;
            router.oneshot(request).await
        })
    }
}

/// One HTTP/1.1 connection behind the header timeout.
fn connection(stream: tokio::net::TcpStream, handler: Handler, header_timeout: Duration) -> Connection {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
    builder.serve_connection(TokioIo::new(stream), handler)
}

async fn run_connection(
    connection: Connection,
    _permit: OwnedSemaphorePermit,
    _registered: Registered,
    close: CancellationToken,
    draining: CancellationToken,
) {
    let mut connection = pin!(connection);
    let mut finishing = false;
    loop {
        tokio::select! {
            _ = connection.as_mut() => break,
            () = close.cancelled() => break,
            () = draining.cancelled(), if !finishing => {
                // Answer what is in progress, take nothing new.
                finishing = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}
