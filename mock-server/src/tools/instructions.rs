//! Standing instructions of a restaurant: listing (newest first) and creating one.

use chataigne_contract::dataset::Instruction;
use serde_json::json;

use super::{Call, Output, in_order, page_output, start, take_page, to_json};
use crate::error::ToolError;
use crate::state::store::{Change, Planned};

pub fn list(call: &Call) -> Result<Output, ToolError> {
    let data = call.app.store.read();
    let rid = call.restaurant_id()?;
    let from = start(call)?;
    let instructions = call.app.defects.listed(&data, rid, |d| &d.instructions);
    let now_s = call.app.clock.now_ms().div_euclid(1000);
    let items = in_order(call, instructions.as_deref(), &from)
        .filter(|(_, i)| !call.app.defects.unlisted(&i.created_at, now_s))
        .map(|(k, i)| (k.clone(), to_json(i)));
    let page = take_page(call, items, super::limit(call))?;
    Ok(page_output(call, "instructions", page, &format!("instructions of {rid}")))
}

pub async fn create(call: &Call) -> Result<Output, ToolError> {
    let instruction = Instruction {
        id: super::new_id("ins"),
        restaurant_id: call.restaurant_id()?.to_owned(),
        text: call.req("text")?.to_owned(),
        created_by: call.principal.user_id.clone(),
        created_at: call.app.clock.now_timestamp(),
    };
    super::commit(call, |_| {
        let output = Output::new(
            json!({ "instruction": instruction }),
            format!("Created instruction {}", instruction.id),
        );
        Ok(Planned { change: Change::Instruction { instruction: instruction.clone() }, output })
    })
    .await
}
