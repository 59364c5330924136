//! The resources surface (`resources/templates/list`, `resources/read`) under the tenant clause
//! (AUTH-4): which templates a server advertises name a restaurant, how to fill one with an ID,
//! and whether a read of a restaurant outside the caller's memberships was refused without
//! leaking it. Pure functions of the answers, like the rest of `rules`.

use serde_json::Value;

use crate::client::Exchange;

/// A restaurant ID no dataset has: its read is what a refusal of a foreign one must look like.
pub const ABSENT_RESTAURANT: &str = "rst_doesnotexist";

/// At most this many pages of `resources/templates/list` are walked.
pub const TEMPLATE_PAGES: usize = 20;

/// The status a read of the restaurant `id` states for it (PRE-2 on this surface): an error, or a
/// result with no contents, is `Err` (what it was); `Ok(None)` when no JSON text of the contents
/// holds an object with that `id` and a string `status`; otherwise that status (the first found,
/// depth first).
pub fn restaurant_status(read: &Exchange, id: &str) -> Result<Option<String>, String> {
    let Some(result) = read.result() else { return Err(read.summary()) };
    let contents = result.get("contents").and_then(Value::as_array).filter(|c| !c.is_empty());
    let Some(contents) = contents else {
        return Err(format!("a result without contents: {}", read.summary()));
    };
    let texts = contents.iter().filter_map(|c| c.get("text").and_then(Value::as_str));
    Ok(texts.filter_map(|t| serde_json::from_str::<Value>(t).ok()).find_map(|doc| status_of(&doc, id)))
}

fn status_of(value: &Value, id: &str) -> Option<String> {
    match value {
        Value::Object(map) => {
            if map.get("id").and_then(Value::as_str) == Some(id)
                && let Some(status) = map.get("status").and_then(Value::as_str)
            {
                return Some(status.to_owned());
            }
            map.values().find_map(|v| status_of(v, id))
        }
        Value::Array(items) => items.iter().find_map(|v| status_of(v, id)),
        _ => None,
    }
}

/// The variables of an RFC 6570 template, each without its operator, prefix or explode modifier.
pub fn variables(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else { break };
        let expression = &rest[start + 1..start + len];
        let expression = expression.trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        for var in expression.split(',') {
            let name = var.split(':').next().unwrap_or_default().trim_end_matches('*');
            if !name.is_empty() {
                out.push(name.to_owned());
            }
        }
        rest = &rest[start + len + 1..];
    }
    out
}

/// A template whose one variable names a restaurant (`{restaurant_id}`, `{restaurantId}`, …),
/// filled with `id`; `None` for a template with no such variable, or with others the suite
/// cannot fill.
pub fn fill_restaurant(template: &str, id: &str) -> Option<String> {
    let vars = variables(template);
    let [var] = vars.as_slice() else { return None };
    if !var.to_ascii_lowercase().contains("restaurant") {
        return None;
    }
    let start = template.find('{')?;
    let end = start + template[start..].find('}')?;
    let operator = template[start + 1..].chars().next().filter(|c| "+#./;?&".contains(*c));
    let value = match operator {
        None | Some('+') => id.to_owned(),
        Some('#') => format!("#{id}"),
        Some('.') => format!(".{id}"),
        Some('/') => format!("/{id}"),
        Some(';') => format!(";{var}={id}"),
        Some('?') => format!("?{var}={id}"),
        Some(_) => format!("&{var}={id}"),
    };
    Some(format!("{}{value}{}", &template[..start], &template[end + 1..]))
}

/// Two answers that must look alike (about a foreign tenant's records, and about records that do
/// not exist): the same JSON-RPC result or error once each names its own IDs as `<idN>` and every
/// `request_id` member is left out. `None` when they are alike.
pub fn answered_alike_ids(a: &Exchange, a_ids: &[&str], b: &Exchange, b_ids: &[&str]) -> Option<String> {
    let masked = |ex: &Exchange, ids: &[&str]| {
        let message = ex.message()?;
        Some(masked(message.get("result").or_else(|| message.get("error"))?, ids))
    };
    match (masked(a, a_ids), masked(b, b_ids)) {
        (Some(x), Some(y)) if x == y => None,
        _ => Some("the same answer about another tenant's records as about records that do not exist (but for the IDs)".to_owned()),
    }
}

/// A secret of `secrets` that the answer's body shows.
pub fn told<'s>(ex: &Exchange, secrets: &[&'s str]) -> Option<&'s str> {
    let body = ex.response().map(|r| r.body.as_str()).unwrap_or_default();
    secrets.iter().copied().filter(|s| !s.is_empty()).find(|s| body.contains(s))
}

/// `answer` as text with every `request_id` member left out and each of `ids` written `<idN>`.
fn masked(answer: &Value, ids: &[&str]) -> String {
    let mut answer = answer.clone();
    without_request_ids(&mut answer);
    let mut text = answer.to_string();
    for (i, id) in ids.iter().enumerate().filter(|(_, id)| !id.is_empty()) {
        text = text.replace(id, &format!("<id{i}>"));
    }
    text
}

fn without_request_ids(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("request_id");
            m.values_mut().for_each(without_request_ids);
        }
        Value::Array(items) => items.iter_mut().for_each(without_request_ids),
        _ => {}
    }
}

/// The kinds of record a template variable or prompt argument may name, as its name says
/// (`{order_id}`, `{orderId}`, `conversation`), most specific first.
pub const KINDS: [&str; 6] =
    ["organization", "restaurant", "order", "conversation", "transcript", "instruction"];

/// The kind of record `name` names, if any.
pub fn kind_of(name: &str) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    KINDS.into_iter().find(|k| name.contains(k))
}

/// Whether a kind is a child of a restaurant (AUTH-5's), not a tenant's own (AUTH-4's).
pub fn is_child(kind: &str) -> bool {
    matches!(kind, "order" | "conversation" | "transcript" | "instruction")
}

/// `template` with every variable filled by `value(kind)` of the kind its name says, and the
/// kinds in the order filled; `None` when a variable has an operator, names no kind, or
/// `value` has nothing for it.
pub fn fill_kinds(
    template: &str,
    value: impl Fn(&str) -> Option<String>,
) -> Option<(String, Vec<&'static str>)> {
    let mut out = String::new();
    let mut kinds = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let len = rest[start..].find('}')?;
        let var = &rest[start + 1..start + len];
        if var.is_empty() || var.contains(|c: char| "+#./;?&,:*".contains(c)) {
            return None;
        }
        let kind = kind_of(var)?;
        out.push_str(&rest[..start]);
        out.push_str(&value(kind)?);
        kinds.push(kind);
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    Some((out, kinds))
}

/// The `uriTemplate` of every template on one page of `resources/templates/list`.
pub fn templates(page: &Value) -> Vec<String> {
    page.get("resourceTemplates")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|t| t.get("uriTemplate").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// What only a restaurant of the dataset tells of itself: its name, its creation time, its
/// organization's name ([`refused_without_leak`]'s secrets). Empty for an ID the dataset lacks.
pub fn restaurant_secrets(dataset: &chataigne_contract::dataset::Dataset, id: &str) -> Vec<String> {
    let Some(restaurant) = dataset.restaurants.iter().find(|r| r.id == id) else { return Vec::new() };
    let organization =
        dataset.organizations.iter().find(|o| o.id == restaurant.organization_id).map(|o| o.name.clone());
    vec![restaurant.name.clone(), restaurant.created_at.clone(), organization.unwrap_or_default()]
}

/// A read of a resource the caller may not see: refused with a JSON-RPC error (resource not
/// found, or another), never a result, and no `secrets` (what only the resource tells: its
/// name, its organization's name, its creation time) anywhere in the answer. The ID may be
/// echoed: the caller sent it (SEP-2164's `data.uri`). `None` when it holds.
pub fn refused_without_leak(ex: &Exchange, secrets: &[&str]) -> Option<String> {
    if ex.status().is_some_and(|s| s >= 500) {
        return Some("an answer below HTTP 500".to_owned());
    }
    if ex.result().is_some() || ex.rpc_error().is_none() {
        return Some("a JSON-RPC error refusing the read, not its contents".to_owned());
    }
    let body = ex.response().map(|r| r.body.as_str()).unwrap_or_default();
    secrets.iter().filter(|s| !s.is_empty()).any(|s| body.contains(*s)).then(|| {
        "a refusal that tells nothing of the restaurant (its name, organization or creation time)".to_owned()
    })
}

/// Two refusals of reads that must look alike (a foreign restaurant, one that does not exist):
/// the same JSON-RPC error once each names its own ID as `<id>` and every `request_id` member
/// is left out. `None` when they are alike.
pub fn refused_alike(a: &Exchange, a_id: &str, b: &Exchange, b_id: &str) -> Option<String> {
    refused_alike_ids(a, &[a_id], b, &[b_id])
}

/// [`refused_alike`] for reads naming several IDs each (`a_ids[i]` stands where `b_ids[i]` does).
pub fn refused_alike_ids(a: &Exchange, a_ids: &[&str], b: &Exchange, b_ids: &[&str]) -> Option<String> {
    let masked = |ex: &Exchange, ids: &[&str]| Some(masked(ex.rpc_error()?, ids));
    match (masked(a, a_ids), masked(b, b_ids)) {
        (Some(x), Some(y)) if x == y => None,
        (Some(_), Some(_)) => Some(
            "the same refusal for a restaurant of another tenant as for one that does not exist (but for the ID)"
                .to_owned(),
        ),
        _ => Some("two JSON-RPC errors refusing the reads".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restaurant_templates_are_filled_and_others_left() {
        let check = |template: &str, expected: Option<&str>| {
            assert_eq!(fill_restaurant(template, "rst_x").as_deref(), expected, "{template}");
        };
        check("chataigne://restaurants/{restaurant_id}", Some("chataigne://restaurants/rst_x"));
        check("x://r{/restaurantId}", Some("x://r/rst_x"));
        check("x://r{?restaurant}", Some("x://r?restaurant=rst_x"));
        check("x://orders/{order_id}", None);
        check("x://r/{restaurant_id}/orders/{order_id}", None);
        check("chataigne://contract", None);
    }

    #[test]
    fn refusals_are_alike_but_for_their_ids_and_request_ids() {
        let error = |code: i64, id: &str, rid: &str| {
            Exchange::answered_for_test(Some(serde_json::json!({ "jsonrpc": "2.0", "id": 1,
                "error": { "code": code, "message": "not found", "data": { "uri": format!("x://r/{id}"), "request_id": rid } } })))
        };
        assert_eq!(
            refused_alike(
                &error(-32002, "rst_a", "req_1"),
                "rst_a",
                &error(-32002, "rst_b", "req_2"),
                "rst_b"
            ),
            None
        );
        assert!(
            refused_alike(
                &error(-32603, "rst_a", "req_1"),
                "rst_a",
                &error(-32002, "rst_b", "req_2"),
                "rst_b"
            )
            .is_some()
        );
    }

    #[test]
    fn variables_lose_operators_and_modifiers() {
        assert_eq!(variables("a{+x}b{?y*,z:3}"), vec!["x", "y", "z"]);
    }
}
