//! Organizations: the caller's organizations with their role, and creating one (the creator
//! becomes its owner).

use chataigne_contract::Role;
use chataigne_contract::dataset::Organization;
use serde_json::{Value, json};

use super::{Call, Output, in_order, page_output, start, take_page};
use crate::error::ToolError;
use crate::state::store::{Change, Planned};

fn view(o: &Organization, role: Role) -> Value {
    json!({ "id": o.id, "name": o.name, "role": role, "created_at": o.created_at })
}

pub fn list(call: &Call) -> Result<Output, ToolError> {
    let data = call.app.store.read();
    let user = call.principal.user_id.as_str();
    let from = start(call)?;
    let items = in_order(call, Some(&data.organizations), &from)
        .filter_map(|(k, o)| data.role_for_organization(user, &o.id).map(|role| (k.clone(), view(o, role))));
    let page = take_page(call, items, super::limit(call))?;
    Ok(page_output(call, "organizations", page, "organizations"))
}

pub async fn create(call: &Call) -> Result<Output, ToolError> {
    let org = Organization {
        id: super::new_id("org"),
        name: call.req("name")?.to_owned(),
        created_at: call.app.clock.now_timestamp(),
    };
    super::commit(call, |_| {
        let output = Output::new(
            json!({ "organization": view(&org, Role::Owner) }),
            format!("Created organization {}", org.id),
        );
        let change =
            Change::Organization { organization: org.clone(), owner: call.principal.user_id.clone() };
        Ok(Planned { change, output })
    })
    .await
}
