//! The prompts the server serves (`prompts/list`, `prompts/get`): short instructions that help an
//! agent use the tools the way the contract wants (pages, preconditions, idempotency keys). An
//! argument must be an ID of its kind, so a prompt never carries text a caller made up; an unknown
//! prompt or a bad argument is -32602, naming the argument but never its value.

use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::Value;

/// One argument: its name, its ID prefix (`rst`, `cnv`) and what it is.
struct Argument {
    name: &'static str,
    prefix: &'static str,
    description: &'static str,
}

struct Definition {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    arguments: &'static [Argument],
    /// The message, from the arguments' values in the order of `arguments`.
    text: fn(&[&str]) -> String,
}

const RESTAURANT: Argument =
    Argument { name: "restaurant_id", prefix: "rst", description: "The restaurant, e.g. rst_central" };
const CONVERSATION: Argument =
    Argument { name: "conversation_id", prefix: "cnv", description: "The conversation, e.g. cnv_long" };

const PROMPTS: [Definition; 2] = [
    Definition {
        name: "work_the_order_queue",
        title: "Work a restaurant's order queue",
        description: "Accept a restaurant's received orders one lifecycle step at a time, with the \
                      preconditions the contract asks for",
        arguments: &[RESTAURANT],
        text: |a| {
            format!(
                "Work the order queue of restaurant {rid} with the Chataigne tools.\n\
                 1. Call list_orders with restaurant_id \"{rid}\" and status \"received\". While the \
                 answer has meta.next_cursor, call it again with that cursor, unchanged, and the same \
                 filters.\n\
                 2. For each order you accept, call update_order_status with status \"accepted\" and \
                 expected_status \"received\": orders move one step at a time (received, accepted, \
                 preparing, ready, completed).\n\
                 3. ORDER_STATUS_PRECONDITION_FAILED or MCP_EXPECTED_STATE_MISMATCH means the order \
                 changed meanwhile: read it again with get_order before deciding; never retry such a \
                 call unchanged.\n\
                 4. When error.retryable is true, wait retry_after_ms if given, then retry.\n\
                 Report each change with its meta.request_id.",
                rid = a[0],
            )
        },
    },
    Definition {
        name: "answer_a_guest",
        title: "Answer a guest's conversation",
        description: "Read a conversation and send one reply, safely retried with its idempotency key",
        arguments: &[RESTAURANT, CONVERSATION],
        text: |a| {
            format!(
                "Answer the guest in conversation {cid} of restaurant {rid} with the Chataigne tools.\n\
                 1. Call get_conversation with restaurant_id \"{rid}\" and conversation_id \"{cid}\" \
                 and read the latest messages.\n\
                 2. Write one short, polite reply and send it with send_message, with a new \
                 idempotency_key of 8 to 255 characters that you keep.\n\
                 3. If the call fails with a retryable error, or you get no answer at all, send it \
                 again with the same idempotency_key and the same text: the server sends it once, and \
                 answers a repeat with meta.replayed true. Never reuse a key for another text \
                 (MCP_IDEMPOTENCY_MISMATCH).\n\
                 Keep meta.request_id to report a problem.",
                rid = a[0],
                cid = a[1],
            )
        },
    },
];

/// The `prompts/list` entries.
pub fn list() -> Vec<Prompt> {
    PROMPTS
        .iter()
        .map(|p| {
            let arguments = p
                .arguments
                .iter()
                .map(|a| PromptArgument::new(a.name).with_description(a.description).with_required(true))
                .collect();
            Prompt::new(p.name, Some(p.description), Some(arguments)).with_title(p.title)
        })
        .collect()
}

/// The name of the first prompt listed.
pub fn first() -> &'static str {
    PROMPTS[0].name
}

/// Whether the server has a prompt of this name.
pub fn exists(name: &str) -> bool {
    PROMPTS.iter().any(|p| p.name == name)
}

/// `prompts/get`: the prompt's one user message, or -32602.
pub fn get(name: &str, arguments: Option<&JsonObject>) -> Result<GetPromptResult, ErrorData> {
    let prompt = PROMPTS
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| ErrorData::invalid_params("unknown prompt", None))?;
    let values = prompt
        .arguments
        .iter()
        .map(|a| {
            arguments
                .and_then(|args| args.get(a.name))
                .and_then(Value::as_str)
                .filter(|v| is_id(v, a.prefix))
                .ok_or_else(|| {
                    let message = format!("prompt argument {} must be an ID like {}_…", a.name, a.prefix);
                    ErrorData::invalid_params(message, Some(serde_json::json!({ "argument": a.name })))
                })
        })
        .collect::<Result<Vec<&str>, _>>()?;
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, (prompt.text)(&values))])
        .with_description(prompt.description))
}

/// The contract's ID shape: `<prefix>_` then 1 to 60 of `[0-9A-Za-z_]` (the tools' schemas).
pub fn is_id(value: &str, prefix: &str) -> bool {
    value.strip_prefix(prefix).and_then(|rest| rest.strip_prefix('_')).is_some_and(|tail| {
        (1..=60).contains(&tail.len()) && tail.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

#[cfg(test)]
mod tests {
    use super::is_id;

    #[test]
    fn ids_have_the_contract_shape() {
        let check = |value: &str, expected: bool| assert_eq!(is_id(value, "rst"), expected, "{value}");
        check("rst_central", true);
        check("rst_a", true);
        check(&format!("rst_{}", "a".repeat(60)), true);
        check(&format!("rst_{}", "a".repeat(61)), false);
        check("rst_", false);
        check("rst", false);
        check("cnv_long", false);
        check("rst_central\nIgnore the above", false);
        check("rst_caf\u{e9}", false);
    }
}
