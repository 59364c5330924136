//! What a server advertises against what it serves (PROTO-1). MCP's *Capability Negotiation*:
//! a server that offers tools, resources or prompts declares the capability, and a client may use
//! exactly what was negotiated. So each capability `initialize` advertises must be served (its
//! lists answer, each listed resource reads, each listed prompt is known), and a list that answers
//! with entries while its capability is not advertised is a finding. An empty list where nothing
//! is advertised passes: it serves nothing, and is what rmcp's default handlers answer.

use chataigne_contract::dataset::{Dataset, Restaurant};
use serde_json::Value;

use crate::client::Exchange;

/// A list method of the protocol, the capability that announces it and the array it answers.
#[derive(Debug, Clone, Copy)]
pub struct Surface {
    pub capability: &'static str,
    pub method: &'static str,
    pub items: &'static str,
    /// A server may advertise the capability and still not serve this method (-32601): a
    /// server with resources need not have templates.
    pub optional: bool,
}

/// Every list method MCP has for a server's features.
pub const LISTS: [Surface; 4] = [
    Surface { capability: "tools", method: "tools/list", items: "tools", optional: false },
    Surface { capability: "resources", method: "resources/list", items: "resources", optional: false },
    Surface {
        capability: "resources",
        method: "resources/templates/list",
        items: "resourceTemplates",
        optional: true,
    },
    Surface { capability: "prompts", method: "prompts/list", items: "prompts", optional: false },
];

/// A capability that is one request rather than a list: when advertised, the request must
/// answer a result. (Not advertised, it is not judged: accepting it anyway harms nothing.)
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    pub capability: &'static str,
    pub method: &'static str,
    pub params: &'static str,
}

/// `logging`: setting a level (the least noisy MCP names) is answered with a result.
pub const PROBES: [Probe; 1] =
    [Probe { capability: "logging", method: "logging/setLevel", params: r#"{"level":"emergency"}"# }];

/// A probe's answer, when its capability is advertised; `None` when it holds.
pub fn probe_finding(ex: &Exchange, probe: &Probe) -> Option<String> {
    (ex.result().is_none()).then(|| {
        format!("{} to answer with a result, as initialize advertises `{}`", probe.method, probe.capability)
    })
}

/// What one exchange of a walk of every surface (`tools/list` … `prompts/get`, the probes)
/// breaks, judged by what `init`, the session's `initialize`, advertised: the expectation it
/// misses, `None` when it holds or is no surface's.
pub fn finding(init: &Exchange, ex: &Exchange) -> Option<String> {
    match ex.method.as_str() {
        "resources/read" => read_finding(ex, &sent_param(ex, "uri")),
        "prompts/get" => prompt_finding(ex, &sent_param(ex, "name")),
        method => {
            if let Some(probe) = PROBES.iter().find(|p| p.method == method) {
                return probe_finding(ex, probe);
            }
            let surface = LISTS.iter().find(|s| s.method == method)?;
            match advertised(init, surface.capability) {
                Some(advertised) => list_finding(ex, surface, advertised),
                None => Some("initialize to answer with a result".to_owned()),
            }
        }
    }
}

/// The `params` member `name` of a request, read back from the recorded body.
pub fn sent_param(ex: &Exchange, name: &str) -> String {
    serde_json::from_str::<Value>(&ex.request_body)
        .ok()
        .and_then(|b| b.pointer(&format!("/params/{name}")).and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default()
}

/// Whether `initialize`'s result advertises `capability`; `None` without a result.
pub fn advertised(initialize: &Exchange, capability: &str) -> Option<bool> {
    let result = initialize.result()?;
    Some(result.get("capabilities").and_then(|c| c.get(capability)).is_some_and(|c| !c.is_null()))
}

/// The JSON-RPC error code of an answer, if it is one.
fn rpc_code(ex: &Exchange) -> Option<i64> {
    ex.rpc_error().and_then(|e| e.get("code")).and_then(Value::as_i64)
}

/// The entries of one page of `surface`'s list, when the answer is such a page.
pub fn entries<'a>(ex: &'a Exchange, surface: &Surface) -> Option<&'a Vec<Value>> {
    ex.result()?.get(surface.items)?.as_array()
}

/// A page of a list, judged by whether its capability is advertised; `None` when it holds.
pub fn list_finding(ex: &Exchange, surface: &Surface, advertised: bool) -> Option<String> {
    if ex.status().is_some_and(|s| s >= 500) {
        return Some(format!("{} answered below HTTP 500", surface.method));
    }
    match (advertised, entries(ex, surface)) {
        (true, Some(_)) => None,
        (true, None) if surface.optional && rpc_code(ex) == Some(-32601) => None,
        (true, None) => Some(format!(
            "{} to answer with its `{}`, as initialize advertises `{}`",
            surface.method, surface.items, surface.capability
        )),
        (false, Some(list)) if !list.is_empty() => Some(format!(
            "initialize to advertise `{}`, as {} serves {} of them (or -32601 / an empty list)",
            surface.capability,
            surface.method,
            list.len()
        )),
        (false, _) => None,
    }
}

/// `resources/read` of a resource the server listed: a result with its `contents`.
pub fn read_finding(ex: &Exchange, uri: &str) -> Option<String> {
    let served = ex.result().and_then(|r| r.get("contents")).is_some_and(Value::is_array);
    (!served)
        .then(|| format!("resources/read of {uri}, which resources/list names, to answer with its contents"))
}

/// `prompts/get` of a prompt the server listed, sent without arguments: its messages, or a
/// refusal of the missing arguments (any JSON-RPC error but -32601, which says the method is
/// not served at all).
pub fn prompt_finding(ex: &Exchange, name: &str) -> Option<String> {
    if ex.status().is_some_and(|s| s >= 500) {
        return Some(format!("prompts/get of {name} answered below HTTP 500"));
    }
    let messages = ex.result().and_then(|r| r.get("messages")).is_some_and(Value::is_array);
    let refused = ex.rpc_error().is_some() && rpc_code(ex) != Some(-32601);
    (!messages && !refused).then(|| {
        format!(
            "prompts/get of {name}, which prompts/list names, to answer its messages or refuse its arguments (not -32601)"
        )
    })
}

/// A prompt name and a resource URI no server has: asked for to see the unknown refused.
pub const UNKNOWN_PROMPT: &str = "chataigne-conformance-no-such-prompt";
pub const UNKNOWN_URI: &str = "chataigne-conformance://no-such-resource";

/// PROTO-2 for a prompt or resource the server does not have (`prompts/get`, `resources/read`):
/// a JSON-RPC error below HTTP 500, never a result (that would serve what does not exist). `Err`
/// is the expectation it misses; `Ok(Some(_))` a code other than the ones MCP says a server
/// SHOULD use — -32602 for a prompt; -32002, or -32602 as revision 2026-07-28 names it, for a
/// resource —, the reference's choice `unknown-name-codes`, a difference at the full level only.
/// -32601 passes both: a server without the capability need not serve the method.
pub fn unknown_finding(ex: &Exchange) -> Result<Option<String>, String> {
    let what = match ex.method.as_str() {
        "prompts/get" => format!("prompts/get of {UNKNOWN_PROMPT}, a prompt the server does not have,"),
        _ => format!("resources/read of {UNKNOWN_URI}, a resource the server does not have,"),
    };
    if ex.status().is_some_and(|s| s >= 500) {
        return Err(format!("{what} to be refused below HTTP 500"));
    }
    let Some(code) = rpc_code(ex) else {
        return Err(format!("{what} to be refused with a JSON-RPC error"));
    };
    let expected: &[i64] = match ex.method.as_str() {
        "prompts/get" => &[-32602, -32601],
        _ => &[-32002, -32602, -32601],
    };
    Ok((!expected.contains(&code)).then(|| format!("{what} answered {code}, not {expected:?}")))
}

/// The caller's own record of `kind` in the dataset (the home tenant's landmarks), in dataset IDs.
pub fn own_record(d: &Dataset, kind: &str) -> Option<String> {
    let l = &d.landmarks;
    Some(match kind {
        "organization" => l.home_organization.clone(),
        "restaurant" => l.busy_restaurant.clone(),
        "order" => d.orders.iter().find(|o| o.restaurant_id == l.busy_restaurant)?.id.clone(),
        "conversation" => l.long_conversation.clone(),
        "transcript" => l.small_transcript.clone(),
        _ => d.instructions.iter().find(|i| i.restaurant_id == l.busy_restaurant)?.id.clone(),
    })
}

/// PROTO-2's unknown prompt asked again with the arguments of each prompt a `prompts/list`
/// answer lists, each filled by `own` (the caller's record of the argument's kind, as the server
/// names it) or a word: a server that falls back to a prompt it has shows it only then.
pub fn unknown_prompt_asks(listed: &Exchange, own: impl Fn(&str) -> Option<String>) -> Vec<Value> {
    let prompts = entries(listed, &LISTS[3]).cloned().unwrap_or_default();
    prompts
        .iter()
        .map(|prompt| {
            let mut arguments = serde_json::Map::new();
            for arg in prompt.get("arguments").and_then(Value::as_array).into_iter().flatten() {
                let Some(name) = arg.get("name").and_then(Value::as_str) else { continue };
                let value = super::resources::kind_of(name)
                    .and_then(&own)
                    .unwrap_or_else(|| "conformance".to_owned());
                arguments.insert(name.to_owned(), Value::String(value));
            }
            serde_json::json!({ "name": UNKNOWN_PROMPT, "arguments": arguments })
        })
        .collect()
}

/// The `uri` of every resource of a `resources/list` page.
pub fn resource_uris(ex: &Exchange) -> Vec<String> {
    let surface = LISTS[1];
    entries(ex, &surface)
        .map(|list| list.iter().filter_map(|r| r.get("uri")?.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The `name` of every prompt of a `prompts/list` page.
pub fn prompt_names(ex: &Exchange) -> Vec<String> {
    let surface = LISTS[3];
    entries(ex, &surface)
        .map(|list| list.iter().filter_map(|p| p.get("name")?.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// What only the data tells of the restaurants and organizations `user_id` has no membership of
/// (revoked ones grant nothing; a membership limited to some restaurants reaches those alone):
/// their names. IDs are left out: documentation gives them as examples.
pub fn out_of_reach(dataset: &Dataset, user_id: &str) -> Vec<String> {
    let active: Vec<_> = dataset.memberships.iter().filter(|m| m.user_id == user_id && !m.revoked).collect();
    let reaches = |r: &Restaurant| {
        active.iter().any(|m| {
            m.organization_id == r.organization_id
                && m.restaurant_ids.as_ref().is_none_or(|ids| ids.contains(&r.id))
        })
    };
    let restaurants = dataset.restaurants.iter().filter(|r| !reaches(r)).map(|r| r.name.clone());
    let organizations = dataset
        .organizations
        .iter()
        .filter(|o| !active.iter().any(|m| m.organization_id == o.id))
        .map(|o| o.name.clone());
    restaurants.chain(organizations).filter(|n| !n.is_empty()).collect()
}

/// The first of `secrets` an answer's body holds.
pub fn named<'a>(ex: &Exchange, secrets: &'a [String]) -> Option<&'a str> {
    let body = ex.response().map(|r| r.body.as_str()).unwrap_or_default();
    secrets.iter().find(|s| body.contains(s.as_str())).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(message: Value) -> Exchange {
        Exchange::answered_for_test(Some(message))
    }

    #[test]
    fn an_advertised_list_must_answer_its_array() {
        let prompts = LISTS[3];
        let page = answer(json!({ "jsonrpc": "2.0", "id": 1, "result": { "prompts": [] } }));
        assert_eq!(list_finding(&page, &prompts, true), None);
        let missing =
            answer(json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32601, "message": "x" } }));
        assert!(list_finding(&missing, &prompts, true).is_some());
        assert_eq!(list_finding(&missing, &prompts, false), None);
    }

    #[test]
    fn entries_served_without_the_capability_are_a_finding_and_an_empty_list_is_not() {
        let prompts = LISTS[3];
        let served = answer(json!({ "jsonrpc": "2.0", "id": 1, "result": { "prompts": [{ "name": "p" }] } }));
        assert!(list_finding(&served, &prompts, false).is_some());
        let empty = answer(json!({ "jsonrpc": "2.0", "id": 1, "result": { "prompts": [] } }));
        assert_eq!(list_finding(&empty, &prompts, false), None);
    }

    #[test]
    fn a_listed_prompt_is_known_unless_the_method_is_missing() {
        let ok = answer(json!({ "jsonrpc": "2.0", "id": 1, "result": { "messages": [] } }));
        assert_eq!(prompt_finding(&ok, "p"), None);
        let refused =
            answer(json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32602, "message": "x" } }));
        assert_eq!(prompt_finding(&refused, "p"), None);
        let python = answer(json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": 0, "message": "x" } }));
        assert_eq!(prompt_finding(&python, "p"), None);
        let missing =
            answer(json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32601, "message": "x" } }));
        assert!(prompt_finding(&missing, "p").is_some());
        let empty = answer(json!({ "jsonrpc": "2.0", "id": 1, "result": {} }));
        assert!(prompt_finding(&empty, "p").is_some());
    }

    #[test]
    fn an_unknown_prompt_or_resource_is_an_error_and_mcps_codes_are_the_choice() {
        let on = |method: &str, message: Value| {
            let mut ex = answer(message);
            ex.method = method.into();
            ex
        };
        let error =
            |code: i64| json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": code, "message": "x" } });
        assert_eq!(unknown_finding(&on("prompts/get", error(-32602))), Ok(None));
        assert_eq!(unknown_finding(&on("resources/read", error(-32002))), Ok(None));
        assert_eq!(unknown_finding(&on("resources/read", error(-32602))), Ok(None));
        assert_eq!(unknown_finding(&on("prompts/get", error(-32601))), Ok(None), "no prompts served");
        // The Python SDK answers an unknown prompt -32603: the seed passes, the choice differs.
        assert!(matches!(unknown_finding(&on("prompts/get", error(-32603))), Ok(Some(_))));
        assert!(matches!(unknown_finding(&on("resources/read", error(0))), Ok(Some(_))));
        let served = json!({ "jsonrpc": "2.0", "id": 1, "result": { "messages": [] } });
        assert!(unknown_finding(&on("prompts/get", served)).is_err());
        let read = json!({ "jsonrpc": "2.0", "id": 1, "result": { "contents": [] } });
        assert!(unknown_finding(&on("resources/read", read)).is_err());
    }

    #[test]
    fn what_is_out_of_reach_follows_the_memberships() {
        let d = chataigne_contract::dataset::generate();
        let user = |persona: &str| d.personas.iter().find(|p| p.persona == persona).unwrap().user_id.clone();
        let outsider = out_of_reach(&d, &user("outsider"));
        let owner = out_of_reach(&d, &user("owner"));
        let home = d.restaurants.iter().find(|r| r.id == d.landmarks.busy_restaurant).unwrap();
        assert!(outsider.contains(&home.name), "{outsider:?}");
        assert!(!owner.contains(&home.name), "{owner:?}");
        assert!(!owner.is_empty() && owner.iter().all(|n| !outsider.contains(n)), "{owner:?} {outsider:?}");
    }

    #[test]
    fn an_advertised_probe_must_answer_a_result() {
        let logging = PROBES[0];
        let ok = answer(json!({ "jsonrpc": "2.0", "id": 1, "result": {} }));
        assert_eq!(probe_finding(&ok, &logging), None);
        let missing =
            answer(json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32601, "message": "x" } }));
        assert!(probe_finding(&missing, &logging).is_some());
    }

    #[test]
    fn a_listed_resource_must_read() {
        let ok = answer(json!({ "jsonrpc": "2.0", "id": 1, "result": { "contents": [] } }));
        assert_eq!(read_finding(&ok, "x://a"), None);
        let gone = answer(json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32002, "message": "x" } }));
        assert!(read_finding(&gone, "x://a").is_some());
    }
}
