//! The MCP stdio transport: the server under test as a child process, one JSON-RPC message per
//! line on its stdin and stdout, the persona's token in an environment variable.
//!
//! One [`StdioConnection`] is one child process. A run keeps one per persona ([`StdioPool`]), so
//! every session of a persona reaches the same server state (idempotency races, rate limits);
//! answers are matched to requests by id. The child is killed when its last handle drops.
//!
//! The child's stderr is read all along (appended to `stdio_stderr` when the profile names one)
//! and its last lines kept in a small ring buffer, so a server that exits or fails `initialize`
//! is reported with what it said last, however much it writes.

use std::collections::{HashMap, VecDeque};
use std::fmt::{self, Write as _};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, Command};
use tokio::sync::oneshot;

/// How to start the server under test (from the profile).
#[derive(Debug, Clone)]
pub struct StdioCommand {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// The environment variable through which the token is passed.
    pub token_env: String,
    /// Where the children's stderr goes (appended); discarded when `None`.
    pub stderr: Option<PathBuf>,
    /// Given to the children as `SENTRY_DSN`: the suite's error-report endpoint, when on.
    pub sentry_dsn: Option<String>,
}

impl StdioCommand {
    /// `stdio: chataigne-mock --stdio`, for messages and reports.
    pub fn label(&self) -> String {
        format!("stdio: {}", self.argv.join(" "))
    }

    /// Where a child's stderr goes: appended to `stderr`, or discarded.
    pub fn stderr_sink(&self) -> Result<Stdio, String> {
        match &self.stderr {
            None => Ok(Stdio::null()),
            Some(path) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map(Stdio::from)
                .map_err(|e| format!("cannot open {} for the server's stderr: {e}", path.display())),
        }
    }

    /// Start the server with `token` in `token_env` (or with that variable unset).
    pub fn spawn(&self, token: Option<&str>) -> Result<Arc<StdioConnection>, String> {
        let (program, args) = self.argv.split_first().ok_or_else(|| "stdio_command is empty".to_owned())?;
        let log = match &self.stderr {
            None => None,
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map(tokio::fs::File::from_std)
                    .map_err(|e| format!("cannot open {} for the server's stderr: {e}", path.display()))?,
            ),
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_remove(&self.token_env)
            .kill_on_drop(true);
        // Its own process group, so the whole tree it starts (a shell, a wrapper, workers that
        // inherit the token) ends with it.
        #[cfg(unix)]
        command.process_group(0);
        if let Some(token) = token {
            command.env(&self.token_env, token);
        }
        if let Some(dsn) = &self.sentry_dsn {
            command.env("SENTRY_DSN", dsn);
        }
        let mut child =
            command.spawn().map_err(|e| format!("cannot start `{}`: {e}", self.argv.join(" ")))?;
        let stdin = child.stdin.take().ok_or_else(|| "the child has no stdin".to_owned())?;
        let stdout = child.stdout.take().ok_or_else(|| "the child has no stdout".to_owned())?;
        let stderr = child.stderr.take().ok_or_else(|| "the child has no stderr".to_owned())?;
        let pending = Arc::new(Mutex::new(Pending::default()));
        let reader = tokio::spawn(read_answers(BufReader::new(stdout), Arc::clone(&pending)));
        let tail = Arc::new(Mutex::new(Tail::default()));
        let stderr_reader = tokio::spawn(read_stderr(stderr, log, Arc::clone(&tail)));
        Ok(Arc::new(StdioConnection {
            label: self.label(),
            stdin: tokio::sync::Mutex::new(stdin),
            pending,
            next_id: AtomicU64::new(0),
            child: Mutex::new(child),
            reader,
            tail,
            stderr_reader,
            token: token.map(str::to_owned),
        }))
    }
}

/// Requests waiting for their answer.
#[derive(Default)]
struct Pending {
    by_id: HashMap<u64, oneshot::Sender<Value>>,
    /// Raw bodies without an id: they take the next answer whose id is null (parse errors).
    any: VecDeque<oneshot::Sender<Value>>,
    /// Why no answer will come any more.
    closed: Option<String>,
    /// The start of a line on stdout that is not JSON, which MCP's stdio transport forbids: the
    /// requests waiting when it came fail at once, saying so, instead of timing out.
    noise: Option<String>,
}

/// One child process speaking MCP over stdin/stdout.
pub struct StdioConnection {
    label: String,
    stdin: tokio::sync::Mutex<ChildStdin>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
    child: Mutex<Child>,
    reader: tokio::task::JoinHandle<()>,
    tail: Arc<Mutex<Tail>>,
    stderr_reader: tokio::task::JoinHandle<()>,
    /// Redacted from the stderr tail: a server that prints its configuration would show it.
    token: Option<String>,
}

impl fmt::Debug for StdioConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioConnection").field("label", &self.label).finish_non_exhaustive()
    }
}

impl Drop for StdioConnection {
    fn drop(&mut self) {
        self.reader.abort();
        self.stderr_reader.abort();
        if let Ok(child) = self.child.get_mut() {
            #[cfg(unix)]
            if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = child.start_kill();
        }
    }
}

/// Reads one message per line; hands each answer to the request waiting for it.
async fn read_answers<R: tokio::io::AsyncBufRead + Unpin>(reader: R, pending: Arc<Mutex<Pending>>) {
    let mut lines = reader.lines();
    let end = loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    if line.trim().is_empty() {
                        continue;
                    }
                    let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
                    p.noise = Some(crate::text::cut(&line, 120));
                    // Dropping the senders wakes the waiters: they report the noise.
                    p.by_id.clear();
                    p.any.clear();
                    continue;
                };
                let is_answer = message.get("result").is_some() || message.get("error").is_some();
                if !is_answer {
                    // Notifications and server-to-client requests: nothing waits for them.
                    continue;
                }
                let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
                let waiter = match message.get("id").and_then(Value::as_u64) {
                    Some(id) => p.by_id.remove(&id),
                    None => loop {
                        match p.any.pop_front() {
                            Some(tx) if tx.is_closed() => continue,
                            other => break other,
                        }
                    },
                };
                if let Some(tx) = waiter {
                    let _ = tx.send(message);
                }
            }
            Ok(None) => break "the server process closed its stdout".to_owned(),
            Err(e) => break format!("cannot read the server's stdout: {e}"),
        }
    };
    let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
    p.closed = Some(end);
    // Dropping the senders wakes every waiter.
    p.by_id.clear();
    p.any.clear();
}

impl StdioConnection {
    pub fn label(&self) -> &str {
        &self.label
    }

    /// A JSON-RPC id no other request of this process used.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Whether the process can still answer.
    pub fn is_open(&self) -> bool {
        self.pending.lock().map(|p| p.closed.is_none()).unwrap_or(false)
    }

    /// Why the process no longer answers, with its exit status if it ends within a moment
    /// (stdout closes just before the process is gone) and the last lines of its stderr.
    async fn ended(&self) -> String {
        let why = self
            .pending
            .lock()
            .ok()
            .and_then(|p| p.closed.clone())
            .unwrap_or_else(|| "the server process stopped answering".to_owned());
        let mut status = None;
        for _ in 0..20 {
            status = status.or_else(|| self.child.lock().ok().and_then(|mut c| c.try_wait().ok().flatten()));
            // Its last words may still be in the pipe when it exits.
            let drained = self.tail.lock().map(|t| t.eof).unwrap_or(true);
            if status.is_some() && drained {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let mut text = match status {
            Some(status) => format!("{why} ({status})"),
            None => why,
        };
        if let Some(tail) = self.stderr_tail() {
            let _ = write!(text, "; {STDERR_TAIL}: {tail}");
        }
        text
    }

    /// The last lines the process wrote to its stderr, on one line, the token redacted; `None`
    /// if it wrote nothing.
    pub fn stderr_tail(&self) -> Option<String> {
        self.tail.lock().ok()?.render(self.token.as_deref())
    }

    /// Send one message (one line). `rpc_id`: the id of its answer; `answer` without an id:
    /// wait for an answer with a null id. `Ok(None)` when no answer is awaited.
    pub async fn send(
        &self,
        bytes: &[u8],
        rpc_id: Option<u64>,
        answer: bool,
        timeout: Duration,
    ) -> Result<Option<Value>, String> {
        if bytes.contains(&b'\n') {
            return Err("the message holds a newline: the stdio transport cannot carry it".to_owned());
        }
        let rx = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if p.closed.is_some() {
                None
            } else {
                Some(match (rpc_id, answer) {
                    (Some(id), _) => {
                        let (tx, rx) = oneshot::channel();
                        p.by_id.insert(id, tx);
                        Some(rx)
                    }
                    (None, true) => {
                        let (tx, rx) = oneshot::channel();
                        p.any.push_back(tx);
                        Some(rx)
                    }
                    (None, false) => None,
                })
            }
        };
        let Some(rx) = rx else { return Err(self.ended().await) };
        let forget = || {
            if let Some(id) = rpc_id
                && let Ok(mut p) = self.pending.lock()
            {
                p.by_id.remove(&id);
            }
        };
        let written = tokio::time::timeout(timeout, async {
            let mut stdin = self.stdin.lock().await;
            stdin.write_all(bytes).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        })
        .await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                forget();
                return Err(format!("cannot write to the server process: {e}; {}", self.ended().await));
            }
            Err(_) => {
                forget();
                return Err(format!("the server did not read the request within {} ms", timeout.as_millis()));
            }
        }
        let Some(rx) = rx else { return Ok(None) };
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(message)) => Ok(Some(message)),
            Ok(Err(_)) => {
                let noise = self
                    .pending
                    .lock()
                    .ok()
                    .and_then(|mut p| if p.closed.is_none() { p.noise.take() } else { None });
                match noise {
                    Some(noise) => Err(format!(
                        "the server printed non-JSON on stdout (MCP's stdio transport allows only JSON-RPC messages there): {noise}"
                    )),
                    None => Err(self.ended().await),
                }
            }
            Err(_) => {
                forget();
                Err(format!("no answer within {} ms", timeout.as_millis()))
            }
        }
    }
}

/// How a failure message introduces the stderr tail.
pub const STDERR_TAIL: &str = "the server's stderr ended with";

/// At most this much of a child's stderr is kept, and of that at most `TAIL_LINES` lines shown.
const TAIL_BYTES: usize = 2048;
const TAIL_LINES: usize = 20;

/// The end of a child's stderr: a ring of the last `TAIL_BYTES` bytes.
#[derive(Debug)]
struct Tail {
    bytes: VecDeque<u8>,
    /// Bytes read in all; more than `bytes` holds means its first line may be cut.
    total: u64,
    /// The child closed its stderr.
    eof: bool,
}

impl Default for Tail {
    fn default() -> Tail {
        Tail { bytes: VecDeque::with_capacity(TAIL_BYTES), total: 0, eof: false }
    }
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let chunk = &chunk[chunk.len().saturating_sub(TAIL_BYTES)..];
        let overflow = (self.bytes.len() + chunk.len()).saturating_sub(TAIL_BYTES);
        self.bytes.drain(..overflow);
        self.bytes.extend(chunk);
    }

    fn render(&self, token: Option<&str>) -> Option<String> {
        let (front, back) = self.bytes.as_slices();
        let mut text = String::from_utf8_lossy(&[front, back].concat()).into_owned();
        let token = token.filter(|t| !t.is_empty());
        if let Some(token) = token {
            text = text.replace(token, "[redacted]");
        }
        let cut = self.total > self.bytes.len() as u64;
        let mut start = false;
        if cut {
            // The ring starts inside a line (and maybe inside the token): drop that line, unless
            // it is the only one.
            match text.split_once('\n') {
                Some((_, rest)) if !rest.trim().is_empty() => text = rest.to_owned(),
                _ => start = true,
            }
        }
        if let Some(token) = token {
            text = redact_token_edges(&text, token, start);
        }
        if start {
            text.insert(0, '…');
        }
        let lines: Vec<String> = text.lines().map(printable).filter(|l| !l.is_empty()).collect();
        let shown = &lines[lines.len().saturating_sub(TAIL_LINES)..];
        (!shown.is_empty()).then(|| shown.join(" | "))
    }
}

/// `text` without a piece of `token` at its start (cut by the ring's start, when `start`) or at
/// its end (a write the child did not finish); pieces of at least 4 bytes, so an ordinary letter
/// is not taken for one.
fn redact_token_edges(text: &str, token: &str, start: bool) -> String {
    let mut text = text.to_owned();
    let cuts: Vec<usize> = (1..token.len()).filter(|&i| token.is_char_boundary(i)).collect();
    // Longest first.
    let suffix = cuts.iter().map(|&i| &token[i..]).filter(|s| s.len() >= 4).find(|s| text.starts_with(s));
    if let Some(suffix) = suffix.filter(|_| start) {
        text = format!("[redacted]{}", &text[suffix.len()..]);
    }
    let prefix = cuts.iter().rev().map(|&i| &token[..i]).filter(|p| p.len() >= 4).find(|p| text.ends_with(p));
    if let Some(prefix) = prefix {
        text = format!("{}[redacted]", &text[..text.len() - prefix.len()]);
    }
    text
}

/// One line of a child's stderr as a message may show it: no terminal escapes or control
/// characters (a hostile server could rewrite the reader's terminal), trimmed.
fn printable(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI sequences (colours): ESC [ parameters final-letter.
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() || c == '~' {
                        break;
                    }
                }
            }
            continue;
        }
        // Bidirectional overrides would show the text in another order than it was written.
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        out.push(if c.is_control() || bidi { ' ' } else { c });
    }
    out.trim().to_owned()
}

/// Reads the child's stderr until it closes: appended to the profile's file if any, its end kept
/// in `tail`. Reading all along also keeps a chatty child from blocking on a full pipe.
async fn read_stderr(mut stderr: ChildStderr, mut log: Option<tokio::fs::File>, tail: Arc<Mutex<Tail>>) {
    let mut buf = vec![0u8; 8192];
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(file) = &mut log {
            // Flushed at once: SEC-1 reads this file while the server runs.
            let written = async {
                file.write_all(&buf[..n]).await?;
                file.flush().await
            };
            if written.await.is_err() {
                log = None;
            }
        }
        tail.lock().unwrap_or_else(|e| e.into_inner()).push(&buf[..n]);
    }
    tail.lock().unwrap_or_else(|e| e.into_inner()).eof = true;
}

/// One process per persona for the whole run, started on first use (and again if it died).
#[derive(Debug)]
pub struct StdioPool {
    pub command: StdioCommand,
    connections: Mutex<HashMap<String, Arc<StdioConnection>>>,
}

impl StdioPool {
    pub fn new(command: StdioCommand) -> StdioPool {
        StdioPool { command, connections: Mutex::new(HashMap::new()) }
    }

    /// The persona's process.
    pub fn connection(&self, persona: &str, token: &str) -> Result<Arc<StdioConnection>, String> {
        let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(conn) = connections.get(persona).filter(|c| c.is_open()) {
            return Ok(Arc::clone(conn));
        }
        let conn = self.command.spawn(Some(token))?;
        connections.insert(persona.to_owned(), Arc::clone(&conn));
        Ok(conn)
    }
}

#[cfg(test)]
mod tail_tests {
    use super::*;

    /// What the tail shows after the child wrote `chunks` (token `secret-token-value`).
    fn check(chunks: &[&str], expected: Option<&str>) {
        let mut tail = Tail::default();
        for chunk in chunks {
            tail.push(chunk.as_bytes());
        }
        assert_eq!(tail.render(Some("secret-token-value")).as_deref(), expected, "{chunks:?}");
        assert!(tail.bytes.len() <= TAIL_BYTES);
    }

    #[test]
    fn the_tail_shows_the_last_lines_without_the_token() {
        check(&[], None);
        check(&["\n\n"], None);
        check(&["starting\n", "error: port in use\n"], Some("starting | error: port in use"));
        check(&["token is secret-token-value\n"], Some("token is [redacted]"));
        check(&["\u{1b}[31mred\u{1b}[0m alert\u{202e}\r\n"], Some("red alert"));
        // Only the last 20 lines.
        let many: Vec<String> = (1..=30).map(|i| format!("line {i}\n")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let last: Vec<String> = (11..=30).map(|i| format!("line {i}")).collect();
        check(&many, Some(&last.join(" | ")));
        // The ring starts inside a line, here inside the token: that line goes.
        let long = format!("{}secret-token-value\n{}\n", "x".repeat(100), "z".repeat(TAIL_BYTES - 18));
        check(&[&long], Some(&"z".repeat(TAIL_BYTES - 18)));
        // One endless line: its end, marked as cut, the piece of token at the cut redacted.
        let line = format!("{}secret-token-value{}", "y".repeat(100), "z".repeat(TAIL_BYTES - 7));
        check(&[&line], Some(&format!("…[redacted]{}", "z".repeat(TAIL_BYTES - 7))));
        // A write cut short inside the token.
        check(&["config: token=secret-tok"], Some("config: token=[redacted]"));
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A child that writes 10 MB to stderr is read as it writes (it could not exit otherwise) and
    /// only the ring's 2 KiB are kept: memory stays bounded, the last line is there.
    #[tokio::test]
    async fn ten_megabytes_of_stderr_keep_only_the_tail() {
        let script =
            "head -c 10000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo 'fake: the last words' >&2; exit 3";
        let command = StdioCommand {
            argv: vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()],
            token_env: "CHATAIGNE_TEST_TOKEN".to_owned(),
            stderr: None,
            sentry_dsn: None,
        };
        let conn = command.spawn(Some("secret")).unwrap();
        let started = std::time::Instant::now();
        loop {
            let exited = conn.child.lock().unwrap().try_wait().unwrap().is_some();
            if exited && conn.tail.lock().unwrap().eof {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the child is stuck writing its stderr");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        {
            let tail = conn.tail.lock().unwrap();
            assert_eq!(tail.total, 10_000_000 + 1 + "fake: the last words\n".len() as u64);
            assert!(tail.bytes.len() <= TAIL_BYTES, "{}", tail.bytes.len());
            assert!(tail.bytes.capacity() <= 2 * TAIL_BYTES, "{}", tail.bytes.capacity());
        }
        let shown = conn.stderr_tail().unwrap();
        assert!(shown.ends_with("fake: the last words"), "{shown}");
        assert!(shown.len() <= TAIL_BYTES + 64, "{}", shown.len());
        let ended = conn.ended().await;
        assert!(ended.contains("exit status: 3") && ended.contains("fake: the last words"), "{ended}");
    }

    /// A server command that starts children (here a shell with a background `sleep`): none of
    /// them outlives the connection.
    #[tokio::test]
    async fn the_whole_process_tree_ends_with_the_connection() {
        let dir = std::env::temp_dir().join(format!("chataigne-stdio-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pid_file = dir.join("child.pid");
        let script = format!("sleep 300 & echo $! > {}; exec cat", pid_file.display());
        let command = StdioCommand {
            argv: vec!["sh".to_owned(), "-c".to_owned(), script],
            token_env: "CHATAIGNE_TEST_TOKEN".to_owned(),
            stderr: None,
            sentry_dsn: None,
        };
        let conn = command.spawn(Some("secret")).unwrap();
        let mut child_pid = None;
        for _ in 0..100 {
            if let Ok(text) = std::fs::read_to_string(&pid_file)
                && let Ok(pid) = text.trim().parse::<i32>()
            {
                child_pid = Some(pid);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let pid = nix::unistd::Pid::from_raw(child_pid.expect("the shell wrote its child's pid"));
        assert!(nix::sys::signal::kill(pid, None).is_ok(), "the sleep runs while the connection lives");
        drop(conn);
        let mut gone = false;
        for _ in 0..100 {
            // Reaped by init once killed; until then kill(0) may still see a zombie.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if nix::sys::signal::kill(pid, None).is_err() || stat.contains(") Z ") {
                gone = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(gone, "the server's child outlived the connection");
    }

    /// With `error_reports`, the server is started with the suite's DSN as `SENTRY_DSN`.
    #[tokio::test]
    async fn the_server_gets_the_error_report_dsn() {
        let dir = std::env::temp_dir().join(format!("chataigne-stdio-dsn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let seen = dir.join("dsn");
        let command = StdioCommand {
            argv: vec![
                "sh".to_owned(),
                "-c".to_owned(),
                format!("echo \"$SENTRY_DSN\" > {}; exec cat", seen.display()),
            ],
            token_env: "CHATAIGNE_TEST_TOKEN".to_owned(),
            stderr: None,
            sentry_dsn: Some("http://chataigne@127.0.0.1:9412/1".to_owned()),
        };
        let conn = command.spawn(None).unwrap();
        let mut text = String::new();
        for _ in 0..100 {
            text = std::fs::read_to_string(&seen).unwrap_or_default();
            if !text.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(text.trim(), "http://chataigne@127.0.0.1:9412/1");
    }
}
