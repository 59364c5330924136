//! Conversations: listing (created_at desc), one conversation with its messages newest first,
//! at most 100 per call, older ones through the cursor (PAG-8), and sending a message.

use chataigne_contract::dataset::{Conversation, Message};
use chataigne_contract::{DEFAULT_MESSAGE_LIMIT, ErrorCode};
use serde_json::{Value, json};

use super::{Call, Output, in_order, start, take_page, to_json};
use crate::error::ToolError;
use crate::state::store::{Change, Data, Planned};

fn view(data: &Data, c: &Conversation) -> Value {
    json!({
        "id": c.id, "restaurant_id": c.restaurant_id, "status": c.status, "channel": c.channel,
        "customer_name": c.customer_name, "message_count": data.message_count(&c.id),
        "last_message_at": data.last_message_at(c), "created_at": c.created_at,
    })
}

pub fn list(call: &Call) -> Result<Output, ToolError> {
    let data = call.app.store.read();
    let rid = call.restaurant_id()?;
    let (status, channel) = (call.str("status"), call.str("channel"));
    let from = start(call)?;
    let items = in_order(call, data.conversations.get(rid), &from)
        .filter(|(_, c)| status.is_none_or(|s| c.status == s))
        .filter(|(_, c)| channel.is_none_or(|ch| c.channel == ch))
        .map(|(k, c)| (k.clone(), view(&data, c)));
    let page = take_page(call, items, super::limit(call))?;
    Ok(super::page_output(call, "conversations", page, &format!("conversations of {rid}")))
}

pub fn get(call: &Call) -> Result<Output, ToolError> {
    let data = call.app.store.read();
    let c = (call.app.defects)
        .conversation(&data, call.restaurant_id()?, call.req("conversation_id")?)
        .ok_or(ErrorCode::ResourceNotFound)?;
    let limit = super::count(call, "message_limit")
        .map(|asked| call.app.variants.message_limit(asked))
        .unwrap_or_else(|| call.app.defects.default_message_limit(DEFAULT_MESSAGE_LIMIT));
    let from = start(call)?;
    let items = in_order(call, data.messages.get(&c.id), &from).map(|(k, m)| (k.clone(), to_json(m)));
    let page = take_page(call, items, limit)?;
    let mut out = super::page_output(call, "messages", page, &format!("messages of {}", c.id));
    out.data["conversation"] = view(&data, c);
    Ok(out)
}

pub async fn send_message(call: &Call) -> Result<Output, ToolError> {
    let (rid, cid, text) = (call.restaurant_id()?, call.req("conversation_id")?, call.req("text")?);
    let (id, sent_at) = (super::new_id("msg"), call.app.clock.now_timestamp());
    let sent = super::commit(call, |data| {
        let c = call.app.defects.conversation(data, rid, cid).ok_or(ErrorCode::ResourceNotFound)?;
        let message = Message {
            id: id.clone(),
            conversation_id: c.id.clone(),
            direction: "outbound".into(),
            text: text.to_owned(),
            sent_at: sent_at.clone(),
        };
        // The summary names the message, never its text (SEC-1).
        let output = Output::new(
            json!({ "message": message }),
            format!("Sent message {} in {}", message.id, message.conversation_id),
        );
        Ok(Planned { change: Change::Message { message }, output })
    })
    .await?;
    // `message-broadcast` only: the same text appended to the restaurant's other conversations.
    let others = call.app.defects.broadcast_to(&call.app.store.read(), rid, cid);
    for other in others {
        let message = Message {
            id: super::new_id("msg"),
            conversation_id: other,
            direction: "outbound".into(),
            text: text.to_owned(),
            sent_at: sent_at.clone(),
        };
        let planned = |_: &Data| {
            let output = Output::new(Value::Null, "");
            Ok::<_, ToolError>(Planned { change: Change::Message { message: message.clone() }, output })
        };
        let _ = call.app.store.commit(None, planned).await;
    }
    Ok(sent)
}
