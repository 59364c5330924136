//! Every change the server makes to its data, as a value: the tools and the control API plan a
//! [`Change`] on the state they read, and [`Data::apply`] is the only way the data changes, in
//! memory as on Redis (where the changes are a shared log every replica applies in order).

use chataigne_contract::Role;
use chataigne_contract::dataset::{Instruction, Membership, Message, Order, Organization, Restaurant};
use serde::{Deserialize, Serialize};

use super::Data;

/// One change to the data. Serialized as an entry of the shared log (`state::redis`), so a
/// variant's fields are a wire format: add variants, do not rename fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// An order moved to `status` at `updated_at` (`update_order_status`).
    OrderStatus {
        restaurant_id: String,
        order_id: String,
        status: String,
        updated_at: String,
    },
    /// A restaurant opened or paused (`set_restaurant_status`).
    RestaurantStatus {
        restaurant_id: String,
        status: String,
    },
    /// A new organization, its creator `owner` its owner (`create_organization`).
    Organization {
        organization: Organization,
        owner: String,
    },
    Restaurant {
        restaurant: Restaurant,
    },
    /// An order arrived (the control API's `POST /orders`).
    Order {
        order: Order,
    },
    Message {
        message: Message,
    },
    Instruction {
        instruction: Instruction,
    },
    /// Every membership of the user in the organization revoked or restored (control API).
    Membership {
        user_id: String,
        organization_id: String,
        revoked: bool,
    },
}

impl Change {
    /// The record whose state the change was planned on, when the plan read one (a status
    /// `expected_status` compared): it commits only if no other change to that record came first
    /// (PRE-4). Inserts and membership flags depend on nothing that can change under them: records
    /// are never deleted, only a reset drops them, and a reset is noticed on its own.
    pub fn guarded_record(&self) -> Option<&str> {
        match self {
            Change::OrderStatus { order_id, .. } => Some(order_id),
            Change::RestaurantStatus { restaurant_id, .. } => Some(restaurant_id),
            _ => None,
        }
    }
}

impl Data {
    /// Applies one change. A change whose record is missing (it cannot be, for a change planned on
    /// this data or on the log before it) changes nothing.
    pub fn apply(&mut self, change: &Change) {
        match change {
            Change::OrderStatus { restaurant_id, order_id, status, updated_at } => {
                let status = self.interner.intern(status);
                if let Some((_, row)) = self.order_mut(restaurant_id, order_id) {
                    row.status = status;
                    row.updated_at = updated_at.as_str().into();
                }
            }
            Change::RestaurantStatus { restaurant_id, status } => {
                if let Some(r) = self.restaurant_mut(restaurant_id) {
                    r.status.clone_from(status);
                }
            }
            Change::Organization { organization, owner } => {
                self.memberships.push(Membership {
                    user_id: owner.clone(),
                    organization_id: organization.id.clone(),
                    role: Role::Owner,
                    restaurant_ids: None,
                    revoked: false,
                });
                self.insert_organization(organization.clone());
            }
            Change::Restaurant { restaurant } => self.insert_restaurant(restaurant.clone()),
            Change::Order { order } => self.insert_order(order.clone()),
            Change::Message { message } => self.insert_message(message.clone()),
            Change::Instruction { instruction } => self.insert_instruction(instruction.clone()),
            Change::Membership { user_id, organization_id, revoked } => {
                for m in self
                    .memberships
                    .iter_mut()
                    .filter(|m| m.user_id == *user_id && m.organization_id == *organization_id)
                {
                    m.revoked = *revoked;
                }
            }
        }
    }

    /// Whether the user has a membership, revoked or not, in the organization.
    pub fn has_membership(&self, user_id: &str, organization_id: &str) -> bool {
        self.memberships.iter().any(|m| m.user_id == user_id && m.organization_id == organization_id)
    }
}

#[cfg(test)]
mod tests {
    use chataigne_contract::dataset::generate;

    use super::*;

    /// A change survives the log's wire format, and applying it is what the tools did before.
    #[test]
    fn changes_round_trip_and_apply() {
        let dataset = generate();
        let mut data = Data::load(&dataset);
        let order = data.orders_of("rst_central").next().map(|o| o.to_order()).expect("an order");
        let m = &dataset.memberships[0];
        let changes = [
            Change::OrderStatus {
                restaurant_id: "rst_central".into(),
                order_id: order.id.clone(),
                status: "cancelled".into(),
                updated_at: "2026-12-01T00:00:00Z".into(),
            },
            Change::RestaurantStatus { restaurant_id: "rst_central".into(), status: "paused".into() },
            Change::Membership {
                user_id: m.user_id.clone(),
                organization_id: m.organization_id.clone(),
                revoked: true,
            },
        ];
        for change in &changes {
            let wire = serde_json::to_string(change).unwrap();
            assert_eq!(&serde_json::from_str::<Change>(&wire).unwrap(), change, "{wire}");
            data.apply(change);
        }
        let moved = data.order("rst_central", &order.id).unwrap();
        assert_eq!((&*moved.row.status, &*moved.row.updated_at), ("cancelled", "2026-12-01T00:00:00Z"));
        assert_eq!(data.restaurant("rst_central").unwrap().status, "paused");
        assert!(data.memberships.iter().filter(|x| x.user_id == m.user_id).any(|x| x.revoked));
        assert_eq!(changes[0].guarded_record(), Some(order.id.as_str()));
        assert_eq!(changes[2].guarded_record(), None);
    }
}
