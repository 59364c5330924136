//! The faults of PAG: pagination (defaults, limits, cursors, walks, message caps).

use super::*;

impl Proxy {
    /// Request-side rewrites of this area's faults (`Proxy::before`).
    pub(crate) async fn before_pagination(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        match self.fault {
            Pag1Default10 if list_key(t).is_some() && !call.has_arg("limit") => {
                call.set_args(|a| {
                    a.insert("limit".into(), json!(10));
                });
            }
            Pag1Default50ExceptOrders
                if list_key(t).is_some() && t != "list_orders" && !call.has_arg("limit") =>
            {
                call.set_args(|a| {
                    a.insert("limit".into(), json!(50));
                });
            }
            Pag2Clamp if call.arg("limit").and_then(|l| l.as_f64()).is_some_and(|l| l > 50.0) => {
                call.set_args(|a| {
                    a.insert("limit".into(), json!(50));
                });
            }
            Pag2ZeroAsDefault if call.arg("limit").and_then(|l| l.as_f64()).is_some_and(|l| l <= 0.0) => {
                call.set_args(|a| {
                    a.remove("limit");
                });
            }
            Pag3CursorWhenFull => {
                let cursor = call.arg_str("cursor").unwrap_or_default();
                if let Some(key) = list_key(t)
                    && lock(&self.memory).fake_cursors.contains(&cursor)
                {
                    let result = success_result(json!({ key: [] }), fresh_meta(), &format!("0 {key}"));
                    return Some(Answer::rpc(call, "result", result));
                }
            }
            Pag4OffsetCursor => {
                if let Some(key) = list_key(t)
                    && let Some(offset) = call.arg_str("cursor").as_deref().and_then(parse_offset_cursor)
                {
                    return Some(self.offset_page(call, key, offset).await);
                }
            }
            Pag5EmptyCursorFirstPage if call.arg_str("cursor").as_deref() == Some("") => {
                call.set_args(|a| {
                    a.remove("cursor");
                });
            }
            Pag5PrefixAccepted => {
                if let Some(c) = call.arg_str("cursor").filter(|c| !c.is_empty()) {
                    let m = lock(&self.memory);
                    if !m.cursors.contains_key(&c) {
                        let near = m.cursors.keys().find(|k| {
                            (k.starts_with(&c) && c.len() * 2 >= k.len()) || (c.starts_with(k.as_str()))
                        });
                        if let Some(k) = near.cloned() {
                            drop(m);
                            call.set_args(|a| {
                                a.insert("cursor".into(), json!(k));
                            });
                        }
                    }
                }
            }
            Pag6FiltersUnbound | Pag6ClientUnbound | Pag6LimitChangeRefused => {
                let c = call.arg_str("cursor")?;
                let (filters, limit, auth) = {
                    let m = lock(&self.memory);
                    let issued = m.cursors.get(&c).filter(|i| i.tool == t)?;
                    (issued.filters.clone(), issued.limit.clone(), issued.auth.clone())
                };
                match self.fault {
                    Pag6FiltersUnbound if call.filters() != filters => call.set_args(|a| {
                        a.retain(|k, _| matches!(k.as_str(), "cursor" | "limit" | "message_limit"));
                        a.extend(filters);
                    }),
                    Pag6ClientUnbound if call.auth() != auth => call.set_auth(&auth),
                    Pag6LimitChangeRefused if call.page_limit() != limit => {
                        return Some(Answer::rpc(
                            call,
                            "result",
                            error_result(ErrorCode::CursorInvalid, &new_request_id()),
                        ));
                    }
                    _ => {}
                }
            }
            Pag7PrefetchedPages => {
                if let Some(c) = call.arg_str("cursor") {
                    let cached = lock(&self.memory).prefetched.remove(&(call.auth(), t.to_owned(), c));
                    if let Some(json) = cached {
                        let a = Answer::rpc(call, "result", json["result"].clone());
                        self.prefetch(call, &a).await;
                        return Some(a);
                    }
                }
            }
            Pag8NoMessageCap
                if t == "get_conversation" && !call.has_arg("message_limit") && !call.has_arg("cursor") =>
            {
                return Some(self.all_messages(call).await);
            }
            Pag8Clamp101 if call.arg("message_limit").and_then(|l| l.as_f64()).is_some_and(|l| l > 100.0) => {
                call.set_args(|a| {
                    a.insert("message_limit".into(), json!(100));
                });
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of this area's faults (`Proxy::after`).
    pub(crate) async fn after_pagination(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        match self.fault {
            Pag3CursorWhenFull if success && a.next_cursor().is_none() => {
                let limit = call.arg("limit").and_then(|l| l.as_u64()).unwrap_or(20) as usize;
                if list_key(t).is_some() && a.items(t).is_some_and(|i| i.len() == limit) {
                    let fake = format!("{}{}", random_alnum(40), "Zz");
                    lock(&self.memory).fake_cursors.insert(fake.clone());
                    if let Some(meta) = a.meta_mut() {
                        meta.insert("next_cursor".into(), json!(fake));
                    }
                }
            }
            Pag3EmptyStringCursor if success && items_key(t).is_some() && a.next_cursor().is_none() => {
                if let Some(meta) = a.meta_mut() {
                    meta.insert("next_cursor".into(), json!(""));
                }
            }
            Pag4SkipFirstOnNext if success && call.has_arg("cursor") => {
                if let Some(items) = a.items_mut(t)
                    && !items.is_empty()
                {
                    items.remove(0);
                }
            }
            Pag4OffsetCursor if success && list_key(t).is_some() => {
                let n = a.items(t).map_or(0, Vec::len);
                if a.next_cursor().is_some()
                    && let Some(meta) = a.meta_mut()
                {
                    meta.insert("next_cursor".into(), json!(offset_cursor(n)));
                }
            }
            Pag4TieOrderAsc if success && t == "list_orders" => {
                if let Some(items) = a.items_mut(t) {
                    // Stable: only orders of the same second change places.
                    let mut i = 0;
                    while i < items.len() {
                        let mut j = i + 1;
                        while j < items.len() && items[j]["created_at"] == items[i]["created_at"] {
                            j += 1;
                        }
                        items[i..j].sort_by(|x, y| x["id"].as_str().cmp(&y["id"].as_str()));
                        i = j;
                    }
                }
            }
            Pag5InvalidCursorRestarts if code == Some(ErrorCode::CursorInvalid) && call.has_arg("cursor") => {
                let again = call.with_args(|x| {
                    x.remove("cursor");
                });
                *a = self.forward(&again).await;
            }
            Pag7PrefetchedPages if success => self.prefetch(call, a).await,
            Pag7ForbiddenAsCursorInvalid
                if code == Some(ErrorCode::ResourceForbidden) && call.has_arg("cursor") =>
            {
                a.recode(ErrorCode::CursorInvalid);
            }
            _ => {}
        }
    }

    /// PAG-4 as an offset server would: walk from the start and cut at the offset.
    pub(crate) async fn offset_page(&self, call: &Call, key: &str, offset: usize) -> Answer {
        let limit = call.arg("limit").and_then(|l| l.as_u64()).unwrap_or(20) as usize;
        let mut items: Vec<Value> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = call.with_args(|a| {
                a.remove("cursor");
                a.insert("limit".into(), json!(50));
                if let Some(c) = &cursor {
                    a.insert("cursor".into(), json!(c));
                }
            });
            let a = self.forward(&page).await;
            if !a.is_success() {
                return answer_as(call, a);
            }
            items.extend(a.items(call.tool().unwrap_or_default()).cloned().unwrap_or_default());
            cursor = a.next_cursor();
            if cursor.is_none() || items.len() > offset + limit {
                break;
            }
        }
        let more = items.len() > offset + limit;
        let page: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
        let mut meta = fresh_meta();
        if more {
            meta.insert("next_cursor".into(), json!(offset_cursor(offset + limit)));
        }
        let summary = format!("{} {key}", page.len());
        Answer::rpc(call, "result", success_result(json!({ key: page }), meta, &summary))
    }

    /// PAG-8 without a cap: every message of the conversation in one answer.
    pub(crate) async fn all_messages(&self, call: &Call) -> Answer {
        let mut first: Option<Answer> = None;
        let mut messages = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = call.with_args(|a| {
                a.insert("message_limit".into(), json!(100));
                if let Some(c) = &cursor {
                    a.insert("cursor".into(), json!(c));
                }
            });
            let a = self.forward(&page).await;
            if !a.is_success() {
                return first.unwrap_or(a);
            }
            messages.extend(a.items("get_conversation").cloned().unwrap_or_default());
            cursor = a.next_cursor();
            if first.is_none() {
                first = Some(a);
            }
            if cursor.is_none() {
                break;
            }
        }
        let mut a = first.expect("one page at least");
        if let Some(items) = a.items_mut("get_conversation") {
            *items = messages;
        }
        if let Some(meta) = a.meta_mut() {
            meta.remove("next_cursor");
        }
        a
    }

    pub(crate) async fn prefetch(&self, call: &Call, a: &Answer) {
        let Some(tool) = call.tool() else { return };
        let Some(cursor) = a.next_cursor() else { return };
        if items_key(tool).is_none() {
            return;
        }
        let next = call.with_args(|x| {
            x.insert("cursor".into(), json!(cursor));
        });
        let b = self.forward(&next).await;
        if b.is_success() {
            self.learn(&next, &b).await;
            if let Some(json) = b.json {
                lock(&self.memory).prefetched.insert((call.auth(), tool.to_owned(), cursor), json);
            }
        }
    }
}

pub(crate) fn offset_cursor(offset: usize) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("offset={offset}"))
}

pub(crate) fn parse_offset_cursor(cursor: &str) -> Option<usize> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(cursor).ok()?;
    String::from_utf8(bytes).ok()?.strip_prefix("offset=")?.parse().ok()
}
