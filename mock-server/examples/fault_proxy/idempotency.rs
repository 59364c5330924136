//! The faults of IDEM: idempotency (keys, replays, mismatches, scope and retention of keys).

use super::*;

impl Proxy {
    /// Request-side rewrites of this area's faults (`Proxy::before`).
    pub(crate) async fn before_idempotency(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let persona = self.data.persona(&call.token()).cloned();
        match self.fault {
            Idem1KeyInvented if is_keyed(t) && !call.has_arg("idempotency_key") => {
                call.set_args(|a| {
                    a.insert("idempotency_key".into(), json!(format!("auto-{}", random_alnum(24))));
                });
            }
            Idem1SevenChars
                if is_keyed(t) && call.arg_str("idempotency_key").is_some_and(|k| k.chars().count() == 7) =>
            {
                call.set_args(|a| {
                    if let Some(k) = a.get("idempotency_key").and_then(Value::as_str) {
                        let padded = format!("{k}0");
                        a.insert("idempotency_key".into(), json!(padded));
                    }
                });
            }
            Idem2KeyOrderSensitive | Idem6CachedForever | Idem7RefusalsStored if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let slot = (call.auth(), t.to_owned(), key);
                let m = lock(&self.memory);
                match self.fault {
                    Idem2KeyOrderSensitive => {
                        let k = m.keyed.get(&slot)?;
                        if k.args == call.args() && k.raw_args != raw_arguments(&call.body) {
                            drop(m);
                            let e = error_result(ErrorCode::IdempotencyMismatch, &new_request_id());
                            return Some(Answer::rpc(call, "result", e));
                        }
                    }
                    Idem6CachedForever => {
                        let k = m.keyed.get(&slot).filter(|k| k.args == call.args())?;
                        let mut a = Answer::rpc(call, "result", k.result.clone());
                        drop(m);
                        a.set_request_id(&new_request_id());
                        if let Some(meta) = a.meta_mut() {
                            meta.insert("replayed".into(), json!(true));
                        }
                        return Some(a);
                    }
                    _ => {
                        let (args, result) = m.refused.get(&slot)?;
                        if *args == call.args() {
                            let mut a = Answer::rpc(call, "result", result.clone());
                            drop(m);
                            a.set_request_id(&new_request_id());
                            return Some(a);
                        }
                    }
                }
            }
            Idem5SharedAcrossClients if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let user = persona.as_ref()?.user.clone();
                let mut m = lock(&self.memory);
                let first =
                    m.key_user.entry((user, t.to_owned(), key)).or_insert_with(|| call.auth()).clone();
                drop(m);
                if first != call.auth() {
                    call.set_auth(&first);
                }
            }
            Idem5SharedAcrossTools if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let mut m = lock(&self.memory);
                let first = m.key_tool.entry((call.auth(), key)).or_insert_with(|| t.to_owned()).clone();
                drop(m);
                if first != t {
                    return Some(Answer::rpc(
                        call,
                        "result",
                        error_result(ErrorCode::IdempotencyMismatch, &new_request_id()),
                    ));
                }
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of this area's faults (`Proxy::after`).
    pub(crate) async fn after_idempotency(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        match self.fault {
            Idem2ReplayedFalse if success && a.flag("replayed") => {
                if let Some(meta) = a.meta_mut() {
                    meta.insert("replayed".into(), json!(false));
                }
            }
            Idem2FreshResult | Idem6ForgottenAfter1h if success && a.flag("replayed") => {
                if self.fault == Idem6ForgottenAfter1h {
                    let key = call.arg_str("idempotency_key").unwrap_or_default();
                    let first = lock(&self.memory)
                        .keyed
                        .get(&(call.auth(), t.to_owned(), key))
                        .and_then(|k| k.server_ms);
                    let now = self.server_now_ms().await;
                    let forgotten =
                        matches!((first, now), (Some(f), Some(n)) if n.saturating_sub(f) >= 3_600_000);
                    if !forgotten {
                        return;
                    }
                }
                let again = call.with_args(|x| {
                    let key = x.get("idempotency_key").and_then(Value::as_str).unwrap_or_default();
                    let key: String = key.chars().take(240).collect();
                    x.insert("idempotency_key".into(), json!(format!("{key}~{}", random_alnum(8))));
                });
                *a = self.forward(&again).await;
            }
            Idem3MismatchReplays if code == Some(ErrorCode::IdempotencyMismatch) => {
                let key = call.arg_str("idempotency_key").unwrap_or_default();
                let first =
                    lock(&self.memory).keyed.get(&(call.auth(), t.to_owned(), key)).map(|k| k.args.clone());
                if let Some(args) = first {
                    let again = call.with_args(|x| *x = args);
                    *a = self.forward(&again).await;
                }
            }
            Idem4WaitsForFirst if code == Some(ErrorCode::OperationInProgress) => {
                let started = Instant::now();
                while started.elapsed() < Duration::from_secs(30) {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let b = self.forward(call).await;
                    if b.code() != Some(ErrorCode::OperationInProgress) {
                        *a = b;
                        break;
                    }
                }
            }
            Idem4NoRetryAfter if code == Some(ErrorCode::OperationInProgress) => {
                remove_error(a, "retry_after_ms")
            }
            Idem7RefusalsStored
                if is_keyed(t)
                    && code.is_some_and(|c| {
                        matches!(
                            c.category(),
                            Category::Validation | Category::Authorization | Category::Conflict
                        ) && c != ErrorCode::OperationInProgress
                    }) =>
            {
                if let Some(key) = call.arg_str("idempotency_key") {
                    let result = a.result().cloned().unwrap_or_default();
                    lock(&self.memory)
                        .refused
                        .entry((call.auth(), t.to_owned(), key))
                        .or_insert((call.args(), result));
                }
            }
            Idem7ReplayBeforeAuth if is_keyed(t) && code == Some(ErrorCode::ResourceForbidden) => {
                let key = call.arg_str("idempotency_key").unwrap_or_default();
                let stored = lock(&self.memory)
                    .keyed
                    .get(&(call.auth(), t.to_owned(), key))
                    .filter(|k| k.args == call.args())
                    .map(|k| k.result.clone());
                if let Some(result) = stored {
                    *a = Answer::rpc(call, "result", result);
                    a.set_request_id(&new_request_id());
                    if let Some(meta) = a.meta_mut() {
                        meta.insert("replayed".into(), json!(true));
                    }
                }
            }
            _ => {}
        }
    }
}
