//! The MCP stdio transport: the server under test as a child process, one JSON-RPC message per
//! line on its stdin and stdout, the persona's token in an environment variable.
//!
//! One [`StdioConnection`] is one child process. A run keeps one per persona ([`StdioPool`]), so
//! every session of a persona reaches the same server state (idempotency races, rate limits);
//! answers are matched to requests by id. The child is killed when its last handle drops.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, Command};
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
        let stderr = self.stderr_sink()?;
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
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
        let pending = Arc::new(Mutex::new(Pending::default()));
        let reader = tokio::spawn(read_answers(BufReader::new(stdout), Arc::clone(&pending)));
        Ok(Arc::new(StdioConnection {
            label: self.label(),
            stdin: tokio::sync::Mutex::new(stdin),
            pending,
            next_id: AtomicU64::new(0),
            child: Mutex::new(child),
            reader,
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
}

impl fmt::Debug for StdioConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioConnection").field("label", &self.label).finish_non_exhaustive()
    }
}

impl Drop for StdioConnection {
    fn drop(&mut self) {
        self.reader.abort();
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
                    p.noise = Some(crate::client::cut(&line, 120));
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
    /// (stdout closes just before the process is gone).
    async fn ended(&self) -> String {
        let why = self
            .pending
            .lock()
            .ok()
            .and_then(|p| p.closed.clone())
            .unwrap_or_else(|| "the server process stopped answering".to_owned());
        for _ in 0..20 {
            let status = self.child.lock().ok().and_then(|mut c| c.try_wait().ok().flatten());
            if let Some(status) = status {
                return format!("{why} ({status})");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        why
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

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
