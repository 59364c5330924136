//! The conformance dataset's types (§12): what `fixtures/dataset.json` holds. The reference server
//! loads it; the suite reads it to know which IDs and counts to expect. The fixture itself is
//! written by [`generate`] (see `generate.rs`), and a test keeps the two equal.

use serde::{Deserialize, Serialize};

use crate::Role;

mod generate;
#[cfg(test)]
mod tests;

pub use generate::{generate, synthetic_orders};

/// How many orders of the busy restaurant one run of the conformance suite moves out of
/// `received` at most, on a server nothing resets (no control API): PRE-2 and PRE-4 move one
/// each to `accepted`, and PRE-3's forward skip (`received → preparing`, refused by the reference
/// server) moves one more on a server that allows skipping. No run moves an order out of any
/// other status on a conforming server.
pub const RECEIVED_PER_RUN: usize = 3;

/// How many runs of the suite the dataset survives when seeded once: the busy restaurant holds at
/// least `RERUNS * RECEIVED_PER_RUN` received orders (a test keeps it so).
pub const RERUNS: usize = 25;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    pub organizations: Vec<Organization>,
    pub restaurants: Vec<Restaurant>,
    pub users: Vec<User>,
    pub memberships: Vec<Membership>,
    pub clients: Vec<Client>,
    pub personas: Vec<Persona>,
    pub orders: Vec<Order>,
    pub conversations: Vec<Conversation>,
    pub messages: Vec<Message>,
    pub transcripts: Vec<Transcript>,
    pub instructions: Vec<Instruction>,
    /// The dataset's named roles, so scenarios say "the busy restaurant", not an ID.
    pub landmarks: Landmarks,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Organization {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Restaurant {
    pub id: String,
    pub organization_id: String,
    pub name: String,
    pub status: String,
    pub timezone: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub id: String,
    pub name: String,
}

/// A user's role in an organization, optionally limited to some of its restaurants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Membership {
    pub user_id: String,
    pub organization_id: String,
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restaurant_ids: Option<Vec<String>>,
    /// A revoked membership grants nothing (AUTH-7); kept to document the former staff persona.
    #[serde(default)]
    pub revoked: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Client {
    pub id: String,
    pub name: String,
}

/// Who a conformance token acts as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Persona {
    pub persona: String,
    pub user_id: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    /// `None`: the server's own resource; `Some`: a token issued for another audience (AUTH-2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderItem {
    pub name: String,
    pub quantity: u32,
    pub unit_price_cents: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    pub id: String,
    pub restaurant_id: String,
    pub status: String,
    pub channel: String,
    pub customer_name: String,
    pub items: Vec<OrderItem>,
    pub total_cents: u64,
    pub currency: String,
    pub notes: String,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub id: String,
    pub restaurant_id: String,
    pub status: String,
    pub channel: String,
    pub customer_name: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    pub conversation_id: String,
    pub direction: String,
    pub text: String,
    pub sent_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    pub id: String,
    pub restaurant_id: String,
    pub call_started_at: String,
    pub duration_s: u64,
    pub language: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instruction {
    pub id: String,
    pub restaurant_id: String,
    pub text: String,
    pub created_by: String,
    pub created_at: String,
}

/// The IDs scenarios refer to by role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Landmarks {
    pub home_organization: String,
    pub foreign_organization: String,
    /// The restaurant with at least 137 orders over every status and channel.
    pub busy_restaurant: String,
    /// The restaurant with exactly 3 orders.
    pub small_restaurant: String,
    /// The restaurant whose 50 orders make a page over 128 KiB.
    pub large_orders_restaurant: String,
    pub foreign_restaurant: String,
    /// A conversation of 150 messages in the busy restaurant.
    pub long_conversation: String,
    /// A transcript over 128 KiB in the busy restaurant.
    pub huge_transcript: String,
    /// A small transcript in the busy restaurant and a phrase it contains.
    pub small_transcript: String,
    pub transcript_phrase: String,
    pub foreign_order: String,
    pub foreign_conversation: String,
    pub foreign_transcript: String,
    /// Records of the small restaurant, a sibling of the busy one in the same organization.
    pub sibling_conversation: String,
    pub sibling_transcript: String,
    pub sibling_instruction: String,
}

impl Dataset {
    pub fn from_json(text: &str) -> Result<Dataset, serde_json::Error> {
        serde_json::from_str(text)
    }

    pub fn persona(&self, name: &str) -> Option<&Persona> {
        self.personas.iter().find(|p| p.persona == name)
    }

    pub fn orders_of<'a>(&'a self, restaurant_id: &'a str) -> impl Iterator<Item = &'a Order> + 'a {
        self.orders.iter().filter(move |o| o.restaurant_id == restaurant_id)
    }
}
