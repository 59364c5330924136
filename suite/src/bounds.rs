//! What a tool's input schema forbids, member by member: the mutations that make valid arguments
//! invalid (one bound, type, enum, pattern or required member at a time) and the clause a server
//! breaks by accepting each. Pure, from the schema alone: the fuzzer draws from it and the
//! matrices (`bound_rows`) check every one of them in each certification.

use serde_json::Value;

/// One way to make valid arguments invalid.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mutation {
    MissingRequired,
    WrongType,
    BelowMinimum(i64),
    AboveMaximum(i64),
    TooShort(u64),
    TooLong(u64),
    TooFewItems(u64),
    TooManyItems(u64),
    DuplicateItems,
    OutsideEnum,
    PatternBroken,
    /// An unknown member: `field` is the one added.
    ExtraProperty,
}

/// A mutation of one member of one tool's arguments.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub field: String,
    pub mutation: Mutation,
}

impl Target {
    /// The same target on another tool (`limit` above its maximum is one bug on every list).
    pub fn signature(&self) -> String {
        format!("{}:{:?}", self.field, self.mutation)
    }

    /// Which mutations to try first when the budget is short: bounds first (where servers go
    /// wrong), then required members, lengths, enums, closed objects, types, patterns.
    pub fn priority(&self) -> u8 {
        match self.mutation {
            Mutation::AboveMaximum(_) | Mutation::BelowMinimum(_) => 0,
            Mutation::TooManyItems(_) | Mutation::TooFewItems(_) | Mutation::DuplicateItems => 1,
            Mutation::MissingRequired => 2,
            Mutation::TooShort(_) | Mutation::TooLong(_) => 3,
            Mutation::OutsideEnum => 4,
            Mutation::ExtraProperty => 5,
            Mutation::WrongType => 6,
            Mutation::PatternBroken => 7,
        }
    }

    pub fn describe(&self) -> String {
        let f = &self.field;
        match &self.mutation {
            Mutation::MissingRequired => format!("required `{f}` missing"),
            Mutation::WrongType => format!("`{f}` of the wrong type"),
            Mutation::BelowMinimum(m) => format!("`{f}` below its minimum {m}"),
            Mutation::AboveMaximum(m) => format!("`{f}` above its maximum {m}"),
            Mutation::TooShort(m) => format!("`{f}` shorter than {m} characters"),
            Mutation::TooLong(m) => format!("`{f}` longer than {m} characters"),
            Mutation::TooFewItems(m) => format!("`{f}` with fewer than {m} items"),
            Mutation::TooManyItems(m) => format!("`{f}` with more than {m} items"),
            Mutation::DuplicateItems => format!("`{f}` with a duplicate item"),
            Mutation::OutsideEnum => format!("`{f}` outside its enum"),
            Mutation::PatternBroken => format!("`{f}` not matching its pattern"),
            Mutation::ExtraProperty => format!("unknown member `{f}`"),
        }
    }

    /// The clause a server breaks by accepting this mutation: the clause of the bound when the
    /// contract gives the bound its own clause, else PROTO-3 (the input schema is not enforced).
    pub fn clause(&self, tool: &str) -> &'static str {
        let f = self.field.as_str();
        match (&self.mutation, f) {
            // A value of another type is forbidden by the published schema, not by a bound the
            // seed states (PROTO-3: "arguments the published inputSchema forbids are refused").
            // The idempotency key is IDEM-1's string of 8..=255 characters: a number is none.
            (Mutation::WrongType, "idempotency_key") => "IDEM-1",
            (Mutation::WrongType, _) => "PROTO-3",
            (_, "limit") => "PAG-2",
            (Mutation::BelowMinimum(_) | Mutation::AboveMaximum(_), "message_limit") => "PAG-8",
            (Mutation::TooFewItems(_) | Mutation::TooManyItems(_) | Mutation::DuplicateItems, "metrics")
                if tool == "get_analytics" =>
            {
                "LIM-1"
            }
            (Mutation::MissingRequired, "expected_status") => "PRE-1",
            (Mutation::MissingRequired | Mutation::TooShort(_) | Mutation::TooLong(_), "idempotency_key") => {
                "IDEM-1"
            }
            (Mutation::OutsideEnum, "status") if tool == "update_order_status" => "ABS-2",
            // LIM-7: string arguments have their documented maxLength (IDs break their pattern too).
            (Mutation::TooLong(_), f) if !f.ends_with("_id") => "LIM-7",
            _ => "PROTO-3",
        }
    }
}

/// The field name an extra-property mutation adds: no contract tool has it.
pub const EXTRA_FIELD: &str = "fuzz_unknown_member";

/// Every mutation the tool's schema allows, one per member and bound.
pub fn targets(schema: &Value) -> Vec<Target> {
    let mut out = Vec::new();
    let props = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let required = chataigne_contract::schema::required(schema);
    let mut push = |field: &str, mutation: Mutation| out.push(Target { field: field.to_owned(), mutation });
    for (name, p) in &props {
        if required.contains(&name.as_str()) {
            push(name, Mutation::MissingRequired);
        }
        if p.get("type").is_some() {
            push(name, Mutation::WrongType);
        }
        let int = |k: &str| p.get(k).and_then(Value::as_i64);
        let uint = |k: &str| p.get(k).and_then(Value::as_u64);
        if let Some(m) = int("minimum") {
            push(name, Mutation::BelowMinimum(m));
        }
        if let Some(m) = int("maximum") {
            push(name, Mutation::AboveMaximum(m));
        }
        if let Some(m) = uint("minLength").filter(|m| *m > 0) {
            push(name, Mutation::TooShort(m));
        }
        if let Some(m) = uint("maxLength") {
            push(name, Mutation::TooLong(m));
        }
        if let Some(m) = uint("minItems").filter(|m| *m > 0) {
            push(name, Mutation::TooFewItems(m));
        }
        if let Some(m) = uint("maxItems") {
            push(name, Mutation::TooManyItems(m));
        }
        if p.get("uniqueItems") == Some(&Value::Bool(true)) {
            push(name, Mutation::DuplicateItems);
        }
        if p.get("enum").is_some() || p.pointer("/items/enum").is_some() {
            push(name, Mutation::OutsideEnum);
        }
        if p.get("pattern").is_some() {
            push(name, Mutation::PatternBroken);
        }
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        push(EXTRA_FIELD, Mutation::ExtraProperty);
    }
    out
}

#[cfg(test)]
mod tests {
    use chataigne_contract::ToolName;

    use super::*;

    #[test]
    fn every_bound_of_a_list_is_a_target_with_its_clause() {
        let targets = targets(&ToolName::ListOrders.input_schema());
        let limit = targets.iter().find(|t| t.mutation == Mutation::AboveMaximum(50)).unwrap();
        assert_eq!((limit.field.as_str(), limit.clause("list_orders")), ("limit", "PAG-2"));
        assert!(
            targets.iter().any(|t| t.field == "restaurant_id" && t.mutation == Mutation::MissingRequired)
        );
        assert!(targets.iter().any(|t| t.mutation == Mutation::ExtraProperty));
        let keyed = self::targets(&ToolName::SendMessage.input_schema());
        let short = keyed.iter().find(|t| t.mutation == Mutation::TooShort(8)).unwrap();
        assert_eq!(short.clause("send_message"), "IDEM-1");
    }
}
