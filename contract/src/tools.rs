//! The tool catalogue of §10: names, kinds, scopes, roles, annotations, and the JSON Schemas that
//! `tools/list` publishes and that both sides validate against.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Minimum role of a tool (§7), ordered from least to most privileged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Viewer,
    Staff,
    Manager,
    Owner,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Staff => "staff",
            Role::Manager => "manager",
            Role::Owner => "owner",
        }
    }
}

/// What a tool does, which sets its deadline, rate limit and annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Read,
    Analytics,
    /// A write guarded by `expected_status` (PRE-1).
    Write,
    /// A write guarded by `idempotency_key` (IDEM-1).
    KeyedWrite,
}

impl Kind {
    pub fn is_write(self) -> bool {
        matches!(self, Kind::Write | Kind::KeyedWrite)
    }
    /// Calls per minute per (client, user, tool) (LIM-2).
    pub fn rate_per_minute(self) -> u32 {
        if self.is_write() { 500 } else { 1000 }
    }
    /// Deadline in milliseconds (LIM-4).
    pub fn deadline_ms(self) -> u64 {
        match self {
            Kind::Read => 15_000,
            Kind::Analytics => 30_000,
            Kind::Write | Kind::KeyedWrite => 20_000,
        }
    }
}

macro_rules! tools {
    ($($variant:ident = $name:literal, $kind:ident, $scope:literal, $role:expr, $desc:literal;)*) => {
        /// The seventeen tools, and nothing else (ABS-1).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ToolName { $($variant,)* }

        impl ToolName {
            pub const ALL: &'static [ToolName] = &[$(ToolName::$variant,)*];
            pub fn as_str(self) -> &'static str { match self { $(ToolName::$variant => $name,)* } }
            pub fn kind(self) -> Kind { match self { $(ToolName::$variant => Kind::$kind,)* } }
            pub fn scope(self) -> &'static str { match self { $(ToolName::$variant => $scope,)* } }
            /// `None`: any authenticated user (create_organization).
            pub fn min_role(self) -> Option<Role> { match self { $(ToolName::$variant => $role,)* } }
            pub fn description(self) -> &'static str { match self { $(ToolName::$variant => $desc,)* } }
            pub fn parse(name: &str) -> Option<ToolName> {
                match name { $($name => Some(ToolName::$variant),)* _ => None }
            }
        }
    };
}

tools! {
    ListOrganizations = "list_organizations", Read, "organizations:read", Some(Role::Viewer),
        "List the organizations you are a member of, with your role in each.";
    ListRestaurants = "list_restaurants", Read, "restaurants:read", Some(Role::Viewer),
        "List the restaurants you can access, optionally within one organization or status.";
    GetRestaurant = "get_restaurant", Read, "restaurants:read", Some(Role::Viewer),
        "Get one restaurant.";
    ListOrders = "list_orders", Read, "orders:read", Some(Role::Viewer),
        "List a restaurant's orders, newest first (created_at desc, then id desc), with optional filters.";
    GetOrder = "get_order", Read, "orders:read", Some(Role::Viewer),
        "Get one order of a restaurant.";
    ListConversations = "list_conversations", Read, "conversations:read", Some(Role::Viewer),
        "List a restaurant's customer conversations, most recent activity first.";
    GetConversation = "get_conversation", Read, "conversations:read", Some(Role::Viewer),
        "Get one conversation with its messages, newest first; older messages through the cursor.";
    SearchTranscripts = "search_transcripts", Read, "transcripts:read", Some(Role::Viewer),
        "Search a restaurant's call transcripts for a phrase, newest call first.";
    GetTranscript = "get_transcript", Read, "transcripts:read", Some(Role::Viewer),
        "Get one call transcript.";
    ListInstructions = "list_instructions", Read, "instructions:read", Some(Role::Viewer),
        "List a restaurant's standing instructions, newest first.";
    GetAnalytics = "get_analytics", Analytics, "analytics:read", Some(Role::Viewer),
        "Compute up to 8 metrics of a restaurant over at most 366 days, per day, week or month.";
    UpdateOrderStatus = "update_order_status", Write, "orders:write", Some(Role::Staff),
        "Move an order one step along received → accepted → preparing → ready → completed. Requires the status you last observed.";
    SetRestaurantStatus = "set_restaurant_status", Write, "restaurants:write", Some(Role::Manager),
        "Open or pause a restaurant. Requires the status you last observed.";
    SendMessage = "send_message", KeyedWrite, "messages:write", Some(Role::Staff),
        "Send a message to the customer of a conversation. Requires an idempotency key.";
    CreateInstruction = "create_instruction", KeyedWrite, "instructions:write", Some(Role::Manager),
        "Add a standing instruction to a restaurant. Requires an idempotency key.";
    CreateOrganization = "create_organization", KeyedWrite, "organizations:write", None,
        "Create an organization; you become its owner. Requires an idempotency key.";
    CreateRestaurant = "create_restaurant", KeyedWrite, "restaurants:write", Some(Role::Owner),
        "Create a restaurant in an organization you own. Requires an idempotency key.";
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub const ORDER_STATUSES: [&str; 7] =
    ["received", "accepted", "preparing", "ready", "completed", "cancelled", "rejected"];
/// The lifecycle (PRE-3); `cancelled` and `rejected` are never targets (ABS-2).
pub const ORDER_LIFECYCLE: [&str; 5] = ["received", "accepted", "preparing", "ready", "completed"];
pub const ORDER_CHANNELS: [&str; 4] = ["phone", "web", "app", "marketplace"];
pub const RESTAURANT_STATUSES: [&str; 2] = ["open", "paused"];
pub const CONVERSATION_STATUSES: [&str; 2] = ["open", "closed"];
pub const CONVERSATION_CHANNELS: [&str; 3] = ["sms", "whatsapp", "webchat"];
pub const METRICS: [&str; 10] = [
    "orders_count",
    "revenue_cents",
    "average_order_cents",
    "completed_orders",
    "conversations_count",
    "messages_received",
    "messages_sent",
    "median_first_response_s",
    "new_customers",
    "repeat_customers",
];
pub const IDEMPOTENCY_KEY_MIN: usize = 8;
pub const IDEMPOTENCY_KEY_MAX: usize = 255;
pub const MESSAGE_TEXT_MAX: usize = 2000;
pub const QUERY_MAX: usize = 200;
pub const NAME_MAX: usize = 120;
pub const CURSOR_MAX: usize = 4096;

/// All scopes of §7.
pub const SCOPES: [&str; 12] = [
    "organizations:read",
    "organizations:write",
    "restaurants:read",
    "restaurants:write",
    "orders:read",
    "orders:write",
    "conversations:read",
    "messages:write",
    "transcripts:read",
    "instructions:read",
    "instructions:write",
    "analytics:read",
];

fn id(prefix: &str) -> Value {
    json!({ "type": "string", "pattern": format!("^{prefix}_[0-9A-Za-z_]{{1,60}}$"), "maxLength": 64 })
}

fn enum_of(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

fn text(min: usize, max: usize) -> Value {
    json!({ "type": "string", "minLength": min, "maxLength": max })
}

fn timestamp() -> Value {
    json!({ "type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$" })
}

fn date() -> Value {
    json!({ "type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" })
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Merge `extra` properties into an object schema.
fn with(mut schema: Value, extra: Value) -> Value {
    if let (Some(props), Value::Object(extra)) = (schema["properties"].as_object_mut(), extra) {
        props.extend(extra);
    }
    schema
}

fn paged(properties: Value, required: &[&str]) -> Value {
    with(
        object(properties, required),
        json!({
            "limit": { "type": "integer", "minimum": 1, "maximum": 50, "description": "Page size, default 20" },
            "cursor": { "type": "string", "maxLength": CURSOR_MAX, "description": "Opaque; pass meta.next_cursor unchanged with the same filters" },
        }),
    )
}

fn keyed(properties: Value, required: &[&str]) -> Value {
    let mut required = required.to_vec();
    required.push("idempotency_key");
    with(
        object(properties, &required),
        json!({ "idempotency_key": text(IDEMPOTENCY_KEY_MIN, IDEMPOTENCY_KEY_MAX) }),
    )
}

const SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

impl ToolName {
    /// The argument naming the one existing record a write changes (an order's status, a
    /// restaurant's status, a conversation's messages); `None` for reads and for the writes that
    /// only create. No other existing record may change (PRE-1, ABS-2).
    pub fn changes(self) -> Option<&'static str> {
        match self {
            ToolName::UpdateOrderStatus => Some("order_id"),
            ToolName::SetRestaurantStatus => Some("restaurant_id"),
            ToolName::SendMessage => Some("conversation_id"),
            _ => None,
        }
    }

    /// The input schema `tools/list` publishes (PROTO-3) and the server validates against.
    pub fn input_schema(self) -> Value {
        use ToolName::*;
        let rid = || id("rst");
        let mut schema = match self {
            ListOrganizations => paged(json!({}), &[]),
            ListRestaurants => {
                paged(json!({ "organization_id": id("org"), "status": enum_of(&RESTAURANT_STATUSES) }), &[])
            }
            GetRestaurant => object(json!({ "restaurant_id": rid() }), &["restaurant_id"]),
            ListOrders => paged(
                json!({
                    "restaurant_id": rid(),
                    "status": { "type": "array", "items": enum_of(&ORDER_STATUSES), "minItems": 1, "maxItems": 7, "uniqueItems": true },
                    "channel": enum_of(&ORDER_CHANNELS),
                    "created_from": timestamp(),
                    "created_to": timestamp(),
                }),
                &["restaurant_id"],
            ),
            GetOrder => object(
                json!({ "restaurant_id": rid(), "order_id": id("ord") }),
                &["restaurant_id", "order_id"],
            ),
            ListConversations => paged(
                json!({
                    "restaurant_id": rid(),
                    "status": enum_of(&CONVERSATION_STATUSES),
                    "channel": enum_of(&CONVERSATION_CHANNELS),
                }),
                &["restaurant_id"],
            ),
            GetConversation => object(
                json!({
                    "restaurant_id": rid(),
                    "conversation_id": id("cnv"),
                    "message_limit": { "type": "integer", "minimum": 1, "maximum": 100, "description": "Messages per call, default 50" },
                    "cursor": { "type": "string", "maxLength": CURSOR_MAX },
                }),
                &["restaurant_id", "conversation_id"],
            ),
            SearchTranscripts => paged(
                json!({ "restaurant_id": rid(), "query": text(1, QUERY_MAX) }),
                &["restaurant_id", "query"],
            ),
            GetTranscript => object(
                json!({ "restaurant_id": rid(), "transcript_id": id("trs") }),
                &["restaurant_id", "transcript_id"],
            ),
            ListInstructions => paged(json!({ "restaurant_id": rid() }), &["restaurant_id"]),
            GetAnalytics => object(
                json!({
                    "restaurant_id": rid(),
                    "metrics": { "type": "array", "items": enum_of(&METRICS), "minItems": 1, "maxItems": 8, "uniqueItems": true },
                    "from": date(),
                    "to": date(),
                    "granularity": enum_of(&["day", "week", "month"]),
                }),
                &["restaurant_id", "metrics", "from", "to"],
            ),
            UpdateOrderStatus => object(
                json!({
                    "restaurant_id": rid(),
                    "order_id": id("ord"),
                    "status": enum_of(&ORDER_LIFECYCLE[1..]),
                    "expected_status": enum_of(&ORDER_STATUSES),
                }),
                &["restaurant_id", "order_id", "status", "expected_status"],
            ),
            SetRestaurantStatus => object(
                json!({
                    "restaurant_id": rid(),
                    "status": enum_of(&RESTAURANT_STATUSES),
                    "expected_status": enum_of(&RESTAURANT_STATUSES),
                }),
                &["restaurant_id", "status", "expected_status"],
            ),
            SendMessage => keyed(
                json!({ "restaurant_id": rid(), "conversation_id": id("cnv"), "text": text(1, MESSAGE_TEXT_MAX) }),
                &["restaurant_id", "conversation_id", "text"],
            ),
            CreateInstruction => keyed(
                json!({ "restaurant_id": rid(), "text": text(1, MESSAGE_TEXT_MAX) }),
                &["restaurant_id", "text"],
            ),
            CreateOrganization => keyed(json!({ "name": text(1, NAME_MAX) }), &["name"]),
            CreateRestaurant => keyed(
                json!({
                    "organization_id": id("org"),
                    "name": text(1, NAME_MAX),
                    "timezone": { "type": "string", "maxLength": 64, "pattern": "^(UTC|[A-Z][A-Za-z_]+(/[A-Za-z0-9_+-]+){1,2})$" },
                }),
                &["organization_id", "name", "timezone"],
            ),
        };
        schema["$schema"] = json!(SCHEMA_DIALECT);
        schema
    }

    /// The `data` of a success.
    fn data_schema(self) -> Value {
        use ToolName::*;
        let list =
            |key: &str, item: Value| object(json!({ key: { "type": "array", "items": item } }), &[key]);
        let one = |key: &str, item: Value| object(json!({ key: item }), &[key]);
        match self {
            ListOrganizations => list("organizations", organization()),
            ListRestaurants => list("restaurants", restaurant()),
            GetRestaurant | SetRestaurantStatus | CreateRestaurant => one("restaurant", restaurant()),
            ListOrders => list("orders", order()),
            GetOrder | UpdateOrderStatus => one("order", order()),
            ListConversations => list("conversations", conversation()),
            GetConversation => object(
                json!({ "conversation": conversation(), "messages": { "type": "array", "items": message() } }),
                &["conversation", "messages"],
            ),
            SearchTranscripts => list("transcripts", transcript_hit()),
            GetTranscript => one("transcript", transcript()),
            ListInstructions => list("instructions", instruction()),
            CreateInstruction => one("instruction", instruction()),
            SendMessage => one("message", message()),
            CreateOrganization => one("organization", organization()),
            GetAnalytics => analytics(),
        }
    }

    /// The shape of a success's `data` (ENV-7): the contract's data schema with every object
    /// left open, so a server may add fields but not move or drop the ones the contract names.
    pub fn data_shape(self) -> Value {
        fn open(v: &mut Value) {
            match v {
                Value::Object(map) => {
                    map.remove("additionalProperties");
                    map.values_mut().for_each(open);
                }
                Value::Array(items) => items.iter_mut().for_each(open),
                _ => {}
            }
        }
        let mut schema = self.data_schema();
        open(&mut schema);
        schema["$schema"] = json!(SCHEMA_DIALECT);
        schema
    }

    /// The output schema: the union of this tool's success envelope and the error envelope
    /// (PROTO-4).
    pub fn output_schema(self) -> Value {
        json!({
            "$schema": SCHEMA_DIALECT,
            "type": "object",
            "oneOf": [
                object(json!({ "data": self.data_schema(), "meta": success_meta() }), &["data", "meta"]),
                error_envelope(),
            ],
        })
    }

    /// MCP annotations (PROTO-3).
    pub fn annotations(self) -> Value {
        match self.kind() {
            Kind::Read | Kind::Analytics => json!({ "readOnlyHint": true, "openWorldHint": false }),
            Kind::Write => json!({ "readOnlyHint": false, "destructiveHint": false, "openWorldHint": false }),
            Kind::KeyedWrite => json!({
                "readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false,
            }),
        }
    }

    /// The whole `tools/list` entry.
    pub fn descriptor(self) -> Value {
        json!({
            "name": self.as_str(),
            "title": self.as_str().replace('_', " "),
            "description": self.description(),
            "inputSchema": self.input_schema(),
            "outputSchema": self.output_schema(),
            "annotations": self.annotations(),
        })
    }
}

fn request_id() -> Value {
    json!({ "type": "string", "pattern": "^req_[0-9A-Za-z]{16,}$" })
}

fn success_meta() -> Value {
    object(
        json!({
            "request_id": request_id(),
            "next_cursor": { "type": "string", "minLength": 1 },
            "truncated": { "type": "boolean" },
            "replayed": { "type": "boolean" },
        }),
        &["request_id", "truncated", "replayed"],
    )
}

/// The error envelope of ENV-4, shared by every tool.
pub fn error_envelope() -> Value {
    let codes: Vec<&str> = crate::ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    let categories: Vec<&str> = crate::Category::ALL.iter().map(|c| c.as_str()).collect();
    object(
        json!({
            "data": object(json!({ "error": object(json!({
                "code": enum_of(&codes),
                "category": enum_of(&categories),
                "retryable": { "type": "boolean" },
                "message": { "type": "string", "maxLength": 500 },
                "request_id": request_id(),
                "retry_after_ms": { "type": "integer", "minimum": 1 },
                "required_scope": { "type": "string" },
            }), &["code", "category", "retryable", "message", "request_id"]) }), &["error"]),
            "meta": object(json!({ "request_id": request_id() }), &["request_id"]),
        }),
        &["data", "meta"],
    )
}

fn organization() -> Value {
    object(
        json!({ "id": id("org"), "name": {"type": "string"}, "role": enum_of(&["viewer", "staff", "manager", "owner"]), "created_at": timestamp() }),
        &["id", "name", "role", "created_at"],
    )
}

fn restaurant() -> Value {
    object(
        json!({
            "id": id("rst"), "organization_id": id("org"), "name": {"type": "string"},
            "status": enum_of(&RESTAURANT_STATUSES), "timezone": {"type": "string"}, "created_at": timestamp(),
        }),
        &["id", "organization_id", "name", "status", "timezone", "created_at"],
    )
}

fn order() -> Value {
    object(
        json!({
            "id": id("ord"), "restaurant_id": id("rst"), "status": enum_of(&ORDER_STATUSES),
            "channel": enum_of(&ORDER_CHANNELS), "customer_name": {"type": "string"},
            "items": { "type": "array", "items": object(json!({
                "name": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1},
                "unit_price_cents": {"type": "integer", "minimum": 0},
            }), &["name", "quantity", "unit_price_cents"]) },
            "total_cents": {"type": "integer", "minimum": 0}, "currency": {"type": "string"},
            "notes": {"type": "string"}, "created_at": timestamp(), "updated_at": timestamp(),
        }),
        &[
            "id",
            "restaurant_id",
            "status",
            "channel",
            "customer_name",
            "items",
            "total_cents",
            "currency",
            "notes",
            "created_at",
            "updated_at",
        ],
    )
}

fn conversation() -> Value {
    object(
        json!({
            "id": id("cnv"), "restaurant_id": id("rst"), "status": enum_of(&CONVERSATION_STATUSES),
            "channel": enum_of(&CONVERSATION_CHANNELS), "customer_name": {"type": "string"},
            "message_count": {"type": "integer", "minimum": 0}, "last_message_at": timestamp(),
            "created_at": timestamp(),
        }),
        &[
            "id",
            "restaurant_id",
            "status",
            "channel",
            "customer_name",
            "message_count",
            "last_message_at",
            "created_at",
        ],
    )
}

fn message() -> Value {
    object(
        json!({
            "id": id("msg"), "conversation_id": id("cnv"), "direction": enum_of(&["inbound", "outbound"]),
            "text": {"type": "string"}, "sent_at": timestamp(),
        }),
        &["id", "conversation_id", "direction", "text", "sent_at"],
    )
}

fn transcript_hit() -> Value {
    object(
        json!({
            "id": id("trs"), "restaurant_id": id("rst"), "call_started_at": timestamp(),
            "duration_s": {"type": "integer", "minimum": 0}, "snippet": {"type": "string", "maxLength": 400},
        }),
        &["id", "restaurant_id", "call_started_at", "duration_s", "snippet"],
    )
}

fn transcript() -> Value {
    object(
        json!({
            "id": id("trs"), "restaurant_id": id("rst"), "call_started_at": timestamp(),
            "duration_s": {"type": "integer", "minimum": 0}, "language": {"type": "string"}, "text": {"type": "string"},
        }),
        &["id", "restaurant_id", "call_started_at", "duration_s", "language", "text"],
    )
}

fn instruction() -> Value {
    object(
        json!({
            "id": id("ins"), "restaurant_id": id("rst"), "text": {"type": "string"},
            "created_by": id("usr"), "created_at": timestamp(),
        }),
        &["id", "restaurant_id", "text", "created_by", "created_at"],
    )
}

fn analytics() -> Value {
    let values = json!({ "type": "object", "additionalProperties": { "type": "number" } });
    object(
        json!({
            "restaurant_id": id("rst"), "from": date(), "to": date(),
            "granularity": enum_of(&["day", "week", "month"]),
            "metrics": { "type": "array", "items": enum_of(&METRICS) },
            "series": { "type": "array", "items": object(json!({ "period_start": date(), "values": values }), &["period_start", "values"]) },
            "totals": values,
        }),
        &["restaurant_id", "from", "to", "granularity", "metrics", "series", "totals"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_compiles_and_inputs_are_closed() {
        for tool in ToolName::ALL {
            crate::schema::Validator::new(&tool.input_schema()).unwrap();
            crate::schema::Validator::new(&tool.output_schema()).unwrap();
            assert_eq!(tool.input_schema()["additionalProperties"], false, "{tool}");
            assert_eq!(ToolName::parse(tool.as_str()), Some(*tool));
        }
    }
}
