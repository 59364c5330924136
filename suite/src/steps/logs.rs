//! The server's own log, when the profile gives it (`server_log`): what must never be in it
//! (SEC-1, IDEM-8). Scenarios using these steps are tagged `@needs-server-log`.

use std::time::Duration;

use anyhow::anyhow;
use cucumber::then;

use crate::world::ConformanceWorld;

/// The log's text, once it holds something: a log that stays empty proves nothing.
async fn read_log(w: &ConformanceWorld) -> anyhow::Result<String> {
    let path = w
        .ctx()
        .profile
        .server_log
        .clone()
        .ok_or_else(|| anyhow!("this step needs the server log: tag the scenario @needs-server-log"))?;
    // Loggers flush on their own schedule: give them a moment.
    for _ in 0..20 {
        if let Ok(text) = std::fs::read_to_string(&path)
            && !text.trim().is_empty()
        {
            return Ok(text);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(w.fail_about(
        None,
        format!("log lines in {}", path.display()),
        "an empty or missing file: is server_log the file the server writes?",
    ))
}

#[then("the server log contains none of the scenario's canaries")]
async fn no_canary(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let log = read_log(w).await?;
    match log.lines().find(|l| l.contains(&w.canary)) {
        None => Ok(()),
        Some(line) => Err(w.fail_about(
            None,
            format!("no trace of {} (sent as a message text, a query or an idempotency key)", w.canary),
            format!("the log line {}", crate::client::cut(line, 600)),
        )),
    }
}

#[then("the server log does not contain their token")]
async fn no_token(w: &mut ConformanceWorld) -> anyhow::Result<()> {
    let log = read_log(w).await?;
    match w.token() {
        Some(token) if !token.is_empty() && log.contains(token) => {
            Err(w.fail_about(None, "no trace of the bearer token in the log", "the token is in the log"))
        }
        _ => Ok(()),
    }
}
