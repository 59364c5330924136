//! The faults of ENV: the envelope (text block, meta, request_id, error fields, echoes, data shapes).

use super::*;

impl Proxy {
    /// Answer-side rewrites of this area's faults (`Proxy::after`).
    pub(crate) async fn after_envelope(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        match self.fault {
            Env1EmptyText if success => {
                if let Some(r) = a.result_mut() {
                    r["content"] = json!([{ "type": "text", "text": "" }]);
                }
            }
            Env1ReplayedOmitted if success && !a.flag("replayed") => {
                if let Some(meta) = a.meta_mut() {
                    meta.remove("replayed");
                }
            }
            Env2UuidRequestId => {
                let u = format!("{}-{}-4{}-a{}-{}", hex(8), hex(4), hex(3), hex(3), hex(12));
                if a.result().and_then(request_id).is_some() {
                    a.set_request_id(&u);
                } else if a.headers.contains_key("x-request-id") {
                    a.set_header_id(&u);
                }
            }
            Env2GatewayHeader => a.set_header_id(&new_request_id()),
            Env2ReplayKeepsId if success && a.flag("replayed") => {
                let key = call.arg_str("idempotency_key").unwrap_or_default();
                let first = lock(&self.memory)
                    .keyed
                    .get(&(call.auth(), t.to_owned(), key))
                    .map(|k| k.request_id.clone());
                if let Some(rid) = first {
                    a.set_request_id(&rid);
                }
            }
            Env3TextIsJson if success => {
                let pretty = a
                    .result()
                    .map(|r| serde_json::to_string_pretty(&r["structuredContent"]).unwrap_or_default());
                if let (Some(text), Some(p)) = (a.text_mut(), pretty) {
                    *text = json!(p);
                }
            }
            Env3SummaryListsItems if success => {
                let lines: Vec<String> = a.items(t).into_iter().flatten().map(|i| i.to_string()).collect();
                if let Some(text) = a.text_mut()
                    && !lines.is_empty()
                {
                    *text = json!(format!("{}\n{}", text.as_str().unwrap_or_default(), lines.join("\n")));
                }
            }
            Env4IsErrorFalse if code.is_some() => {
                if let Some(r) = a.result_mut() {
                    r["isError"] = json!(false);
                }
            }
            Env4ErrorTopLevel if code.is_some() => {
                if let Some(r) = a.result_mut() {
                    let sc = &mut r["structuredContent"];
                    let error = sc["data"]["error"].take();
                    *sc = json!({ "error": error, "meta": sc["meta"].take() });
                }
            }
            Env4NoMeta if code.is_some() => {
                if let Some(r) = a.result_mut()
                    && let Some(sc) = r["structuredContent"].as_object_mut()
                {
                    sc.remove("meta");
                }
            }
            Env5ForbiddenAuthentication
                if matches!(code, Some(ErrorCode::ResourceForbidden | ErrorCode::ScopeRequired)) =>
            {
                set_error(a, "category", json!(Category::Authentication.as_str()));
            }
            Env5OutcomeUnknownRetryable if code == Some(ErrorCode::OutcomeUnknown) => {
                set_error(a, "retryable", json!(true))
            }
            Env5RateLimitedNotRetryable if code == Some(ErrorCode::RateLimited) => {
                set_error(a, "retryable", json!(false))
            }
            Env6NotFoundNamesId if code == Some(ErrorCode::ResourceNotFound) => {
                let id = ["order_id", "conversation_id", "transcript_id", "instruction_id"]
                    .iter()
                    .find_map(|k| call.arg_str(k));
                if let Some(id) = id {
                    append_message(a, &format!(" ({id})"));
                }
            }
            Env6ValidationEchoesValue if code == Some(ErrorCode::InvalidArguments) => {
                let longest =
                    call.args().values().filter_map(|v| v.as_str().map(String::from)).max_by_key(String::len);
                if let Some(v) = longest {
                    let v: String = v.chars().take(STRING_ARG_CAP).collect();
                    append_message(a, &format!(": got \"{v}\""));
                }
            }
            Env6EchoInSummary if code.is_some() => {
                let strings: Vec<String> =
                    call.args().values().filter_map(|v| v.as_str().map(String::from)).collect();
                let joined: String = strings.join(", ").chars().take(1000).collect();
                if let Some(text) = a.text_mut() {
                    *text = json!(format!("{} (arguments: {joined})", text.as_str().unwrap_or_default()));
                }
            }
            Env6ConflictEchoesStatus
                if matches!(
                    code,
                    Some(ErrorCode::ExpectedStateMismatch | ErrorCode::OrderStatusPreconditionFailed)
                ) =>
            {
                if let Some(expected) = call.arg_str("expected_status") {
                    set_error(
                        a,
                        "message",
                        json!(format!("The status is not {expected} any more; reload it")),
                    );
                }
            }
            Env7RestaurantAsItem if success => {
                if let Some(r) = a.result_mut()
                    && let Some(data) = r["structuredContent"]["data"].as_object_mut()
                    && let Some(x) = data.remove("restaurant")
                {
                    data.insert("item".into(), x);
                }
            }
            Env7MessagesInConversation if success && t == "get_conversation" => {
                if let Some(r) = a.result_mut() {
                    let data = &mut r["structuredContent"]["data"];
                    let messages = data["messages"].take();
                    if let Some(d) = data.as_object_mut() {
                        d.remove("messages");
                    }
                    data["conversation"]["messages"] = messages;
                }
            }
            _ => {}
        }
    }
}
