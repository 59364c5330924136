//! The faults of LIM: limits (analytics bounds, rate windows, deadlines, truncation, sizes, bodies).

use super::*;

impl Proxy {
    /// Request-side rewrites of this area's faults (`Proxy::before`).
    pub(crate) async fn before_limits(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        match self.fault {
            Lim1RangeClamped | Lim1NineMetricsCut | Lim1ReversedSwapped if t == "get_analytics" => {
                let from = call.arg_str("from").as_deref().and_then(chataigne_contract::time::parse_date);
                let to = call.arg_str("to").as_deref().and_then(chataigne_contract::time::parse_date);
                match (self.fault, from, to) {
                    (Lim1RangeClamped, Some(f), Some(to)) if to - f + 1 > 366 => call.set_args(|a| {
                        a.insert("from".into(), json!(chataigne_contract::time::format_date(to - 365)));
                    }),
                    (Lim1ReversedSwapped, Some(f), Some(to)) if to < f => call.set_args(|a| {
                        let (x, y) = (a.remove("from"), a.remove("to"));
                        a.insert("from".into(), y.unwrap_or_default());
                        a.insert("to".into(), x.unwrap_or_default());
                    }),
                    (Lim1NineMetricsCut, ..) => call.set_args(|a| {
                        if let Some(m) = a.get_mut("metrics").and_then(Value::as_array_mut) {
                            m.truncate(8);
                        }
                    }),
                    _ => {}
                }
            }
            Lim2ReadLimit900 if matches!(kind(t), Some(Kind::Read | Kind::Analytics)) => {
                return self.count(call, t, 900);
            }
            Lim3SharedAcrossTools if kind(t).is_some() => return self.count(call, "*", 1000),
            Lim3GlobalPerTool => {
                let until = lock(&self.memory).blocked.get(t).copied();
                if until.is_some_and(|u| u > Instant::now()) {
                    return Some(Answer::rpc(
                        call,
                        "result",
                        error_result(ErrorCode::RateLimited, &new_request_id()),
                    ));
                }
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of this area's faults (`Proxy::after`).
    pub(crate) async fn after_limits(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        match self.fault {
            Lim2NoRetryAfter if code == Some(ErrorCode::RateLimited) => remove_error(a, "retry_after_ms"),
            Lim3GlobalPerTool if code == Some(ErrorCode::RateLimited) => {
                lock(&self.memory).blocked.insert(t.to_owned(), Instant::now() + Duration::from_secs(60));
            }
            Lim4TimeoutAsInternal if code == Some(ErrorCode::ToolTimeout) => {
                a.recode(ErrorCode::InternalError)
            }
            Lim4OutcomeAsTimeout if code == Some(ErrorCode::OutcomeUnknown) => {
                a.recode(ErrorCode::ToolTimeout)
            }
            Lim5TruncatedFlagMissing if success && a.flag("truncated") => {
                if let Some(meta) = a.meta_mut() {
                    meta.insert("truncated".into(), json!(false));
                }
            }
            Lim5CursorSkipsCut if success && a.flag("truncated") => {
                let limit = call.arg("limit").and_then(|l| l.as_u64()).unwrap_or(20) as usize;
                let n = a.items(t).map_or(0, Vec::len);
                if let Some(cursor) = a.next_cursor()
                    && limit > n
                {
                    let skip = call.with_args(|x| {
                        x.insert("cursor".into(), json!(cursor));
                        x.insert("limit".into(), json!(limit - n));
                    });
                    let b = self.forward(&skip).await;
                    if b.is_success()
                        && let Some(meta) = a.meta_mut()
                    {
                        match b.next_cursor() {
                            Some(c) => meta.insert("next_cursor".into(), json!(c)),
                            None => meta.remove("next_cursor"),
                        };
                    }
                }
            }
            Lim6TooLargeAsInternal if code == Some(ErrorCode::OutputTooLarge) => {
                a.recode(ErrorCode::InternalError)
            }
            Lim6HugeItemCut if code == Some(ErrorCode::OutputTooLarge) && t == "get_transcript" => {
                let id = call.arg_str("transcript_id").unwrap_or_default();
                if let Some(mut transcript) = self.data.transcripts.get(&id).cloned() {
                    let text = transcript["text"].as_str().unwrap_or_default();
                    let end = text.floor_char_boundary(100_000);
                    transcript["text"] = json!(text[..end].to_owned());
                    let mut meta = fresh_meta();
                    meta.insert("truncated".into(), json!(true));
                    let result = success_result(
                        json!({ "transcript": transcript }),
                        meta,
                        &format!("Transcript {id} (cut)"),
                    );
                    *a = Answer::rpc(call, "result", result);
                }
            }
            Lim7413As400 if a.status == StatusCode::PAYLOAD_TOO_LARGE => {
                *a = Answer::rpc(call, "error", json!({ "code": -32700, "message": "Parse error" }));
                a.status = StatusCode::BAD_REQUEST;
            }
            _ => {}
        }
    }

    /// One rate window per (auth, bucket) opened by its first call: the wrong limit or the wrong
    /// bucket (LIM-2, LIM-3).
    pub(crate) fn count(&self, call: &Call, bucket: &str, limit: u32) -> Option<Answer> {
        let mut m = lock(&self.memory);
        let w = m.windows.entry((call.auth(), bucket.to_owned())).or_insert((Instant::now(), 0));
        if w.0.elapsed() >= Duration::from_secs(60) {
            *w = (Instant::now(), 0);
        }
        w.1 += 1;
        if w.1 <= limit {
            return None;
        }
        let left = Duration::from_secs(60).saturating_sub(w.0.elapsed()).as_millis().max(1) as u64;
        drop(m);
        let mut e = error_result(ErrorCode::RateLimited, &new_request_id());
        e["structuredContent"]["data"]["error"]["retry_after_ms"] = json!(left);
        Some(Answer::rpc(call, "result", e))
    }
}
