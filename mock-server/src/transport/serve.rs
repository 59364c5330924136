//! The HTTP/1.1 accept loop, with what `axum::serve` does not configure: a header read timeout,
//! a deadline for each request body, a cap on open connections with backpressure (at the cap,
//! clients wait in a sized listen backlog; only idle or slow connections are closed for them),
//! and a bounded graceful shutdown. Without them a few hundred stalled connections held every
//! file descriptor, a burst of clients beyond the cap was closed unanswered, and a stalled client
//! kept the server from exiting (docs/RELIABILITY.md, "Caps and timeouts").

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU64, Ordering};
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
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Caps and timeouts of the HTTP listener (`--max-connections`, `--header-timeout-ms`,
/// `--body-timeout-ms`, `--shutdown-timeout-ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// Open connections at most (lowered to fit the process's file descriptor limit). At it no
    /// more are accepted: clients wait in the listen backlog until a connection ends, or one kept
    /// alive between requests, or slower than `header_grace`, is closed for them.
    pub max_connections: usize,
    /// A request's headers must arrive within this; it also closes idle keep-alive connections.
    pub header_timeout: Duration,
    /// A request's whole body must arrive within this after its headers.
    pub body_timeout: Duration,
    /// After the shutdown signal, connections get this long to finish; then they are closed.
    pub shutdown_timeout: Duration,
    /// At the cap, a connection whose request headers are still incomplete this long after its
    /// accept (or after a request's first byte, when kept alive) is slow: it may be closed for a
    /// waiting client. One within it never is: that is a client whose request is arriving.
    pub header_grace: Duration,
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
            // Far above a header's round trip, and short next to a client's connect timeout.
            header_grace: Duration::from_secs(1),
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

/// A connection as the accept loop sees it. Its state is one atomic word, so that choosing it to
/// make room and a request starting on it cannot both succeed: bit 63 is set once it was chosen
/// to be closed, bits 40–62 count its requests in progress, bits 0–39 say since when it has been
/// waiting for a request's headers (ms after `origin`: its accept, or the first byte after an
/// answer), or hold [`IDLE`]: kept alive, nothing received since its last answer.
struct Conn {
    state: AtomicU64,
    origin: Instant,
    close: CancellationToken,
}

const EVICTED: u64 = 1 << 63;
const ONE_REQUEST: u64 = 1 << 40;
const REQUESTS: u64 = EVICTED - ONE_REQUEST;
const SINCE: u64 = ONE_REQUEST - 1;
const IDLE: u64 = SINCE;

/// What a connection is doing, read from its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Evicted,
    Busy,
    Idle,
    /// Waiting for a request's headers since this many ms after the origin.
    Waiting(u64),
}

fn phase(state: u64) -> Phase {
    if state & EVICTED != 0 {
        Phase::Evicted
    } else if state & REQUESTS != 0 {
        Phase::Busy
    } else if state & SINCE == IDLE {
        Phase::Idle
    } else {
        Phase::Waiting(state & SINCE)
    }
}

fn millis_since(origin: Instant) -> u64 {
    u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX).min(IDLE - 1)
}

impl Conn {
    /// Just accepted: waiting for its first request's headers from now.
    fn accepted(origin: Instant) -> Conn {
        Conn { state: AtomicU64::new(millis_since(origin)), origin, close: CancellationToken::new() }
    }

    /// Bytes arrived: on a connection idle since its last answer, a request's headers begin.
    fn received(&self) {
        if self.state.load(Ordering::Acquire) != IDLE {
            return;
        }
        let now = millis_since(self.origin);
        let _ = self.state.compare_exchange(IDLE, now, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Closes the connection if it is still in the state `seen` (a request did not start, no
    /// byte arrived meanwhile).
    fn evict(&self, seen: u64) -> bool {
        let evicted =
            self.state.compare_exchange(seen, seen | EVICTED, Ordering::AcqRel, Ordering::Acquire).is_ok();
        if evicted {
            self.close.cancel();
        }
        evicted
    }
}

/// One request in progress on a connection, until its answer has been written (it travels with
/// the answer's body): the connection is never closed to make room meanwhile.
struct InProgress(Arc<Conn>);

impl InProgress {
    fn start(conn: &Arc<Conn>) -> Option<InProgress> {
        let started = conn.state.fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
            (s & EVICTED == 0).then_some(s + ONE_REQUEST)
        });
        started.ok().map(|_| InProgress(conn.clone()))
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        // The last answer written: idle until the next request's first byte.
        let _ = self.0.state.fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
            let s = s - ONE_REQUEST;
            Some(if s & REQUESTS == 0 { (s & EVICTED) | IDLE } else { s })
        });
    }
}

/// An answer's body, holding its request's [`InProgress`] until hyper has written it all (a
/// streamed answer counts as in progress to its end).
struct Answering {
    body: Body,
    _in_progress: InProgress,
}

impl HttpBody for Answering {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The socket, telling its [`Conn`] when bytes arrive: a kept-alive connection that begins a
/// request is no longer idle.
struct Watched {
    stream: tokio::net::TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.conn.received();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The open connections, oldest first.
#[derive(Default)]
struct Open {
    next: u64,
    live: BTreeMap<u64, Arc<Conn>>,
}

impl Open {
    /// Closes one connection that may make room for a client waiting to be accepted: the oldest
    /// kept alive with nothing received since its answer, else the one whose headers have been
    /// arriving longest, if that is at least `grace`. Never one with a request in progress, nor
    /// one within its grace (a fresh client whose request is arriving). True if one was closed
    /// or is already on its way out.
    fn make_room(&self, origin: Instant, grace: Duration) -> bool {
        let now = millis_since(origin);
        let grace = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
        let mut slow = Vec::new();
        for conn in self.live.values() {
            let state = conn.state.load(Ordering::Acquire);
            match phase(state) {
                Phase::Evicted => return true,
                Phase::Busy => {}
                Phase::Idle => {
                    if conn.evict(state) {
                        return true;
                    }
                }
                Phase::Waiting(since) => {
                    if now.saturating_sub(since) >= grace {
                        slow.push((since, state, conn));
                    }
                }
            }
        }
        slow.sort_by_key(|(since, _, _)| *since);
        slow.into_iter().any(|(_, state, conn)| conn.evict(state))
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

/// Accept errors that mean "out of file descriptors": the connection stays in the backlog, and
/// closing a connection that may make room frees a descriptor for it.
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

/// How many connections the kernel queues, handshake done, while the server does not accept
/// (at the cap): the `backlog` of `listen(2)`, which Linux further caps at `net.core.somaxconn`
/// (4096 by default since 5.4). Past it new connections are not refused: their SYNs go
/// unanswered and are sent again (1 s, then 3 s…). tokio's own `bind` asks for 1024.
pub const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `addr` with [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, as tokio's `bind`).
pub fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket =
        if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets open connections finish
/// for at most `limits.shutdown_timeout` and closes the rest.
///
/// At the cap it accepts no more: one client is held while a slot is found (a connection ends,
/// or [`Open::make_room`] closes one that is idle or slow), the rest wait in the listen backlog.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let permits = Arc::new(Semaphore::new(effective_cap(limits.max_connections)));
    let open = Arc::new(Mutex::new(Open::default()));
    let origin = Instant::now();
    let draining = CancellationToken::new();
    let mut tasks = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    let mut starved: Option<Instant> = None;
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if out_of_descriptors(&e) => {
                    // Once a minute at most: under a flood this comes back every few accepts.
                    if starved.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                        tracing::warn!("out of file descriptors: clients wait in the backlog while connections are closed or end");
                        starved = Some(Instant::now());
                    }
                    lock(&open).make_room(origin, limits.header_grace);
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
                permit = wait_for_room(&permits, &open, origin, limits.header_grace) => permit,
            },
        };
        let conn = Arc::new(Conn::accepted(origin));
        let id = {
            let mut open_now = lock(&open);
            let id = open_now.next;
            open_now.next += 1;
            open_now.live.insert(id, conn.clone());
            id
        };
        let registered = Registered(open.clone(), id);
        let close = conn.close.clone();
        let io = Watched { stream, conn: conn.clone() };
        let handler = Handler { router: router.clone(), peer, conn, body_timeout: limits.body_timeout };
        let connection = connection(io, handler, limits.header_timeout);
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

/// Waits for a free connection slot for the client just accepted, closing an idle or slow
/// connection to make one when there is one; otherwise until a connection ends or one becomes
/// slow (checked every 50 ms).
async fn wait_for_room(
    permits: &Arc<Semaphore>,
    open: &Arc<Mutex<Open>>,
    origin: Instant,
    grace: Duration,
) -> OwnedSemaphorePermit {
    loop {
        lock(open).make_room(origin, grace);
        tokio::select! {
            permit = permits.clone().acquire_owned() => return permit.expect("the semaphore is never closed"),
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}

type Connection = hyper::server::conn::http1::Connection<TokioIo<Watched>, Handler>;
type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// The router as one connection's hyper service: each body behind its deadline, the peer
/// address for the registration limit, each request in progress until its answer is written.
struct Handler {
    router: Router,
    peer: SocketAddr,
    conn: Arc<Conn>,
    body_timeout: Duration,
}

impl hyper::service::Service<Request<Incoming>> for Handler {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, request: Request<Incoming>) -> Answer {
        let Some(in_progress) = InProgress::start(&self.conn) else {
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
            let answer = router.oneshot(request).await?;
            Ok(answer.map(|body| Body::new(Answering { body, _in_progress: in_progress })))
        })
    }
}

/// One HTTP/1.1 connection behind the header timeout.
fn connection(stream: Watched, handler: Handler, header_timeout: Duration) -> Connection {
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
