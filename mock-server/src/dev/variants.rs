//! Allowed variants (`--variant NAME`): behaviours the French seed contract allows but the
//! reference server does not pick, so the suite's self-test can prove it certifies each of them
//! at the seed level (no false failures). The positive counterpart of `defects.rs`, built the same
//! way: the healthy code asks this one seam at a few named points, and with no variant set every
//! answer here is the reference one. Documented in docs/VARIANTS.md.

use std::collections::BTreeSet;
use std::sync::Arc;

use chataigne_contract::{ErrorCode, MAX_MESSAGE_LIMIT, ToolName};
use serde_json::{Value, json};

use crate::error::ToolError;

use crate::output::Output;
use crate::state::ratelimit::{MemoryLimiter, RateLimiter, SlidingLogLimiter, TokenBucketLimiter};

named_modes! {
    /// An allowed variant: the suite must still certify the seed level with it.
    Variant {
        LifecycleSkipForward = "lifecycle-skip-forward", "PRE-3", "update_order_status accepts any forward move in the lifecycle (received → preparing)";
        ErrorExtraFields = "error-extra-fields", "ENV-4", "data.error also carries occurred_at and trace_id (published in the output schemas)";
        NoMembershipForbidden = "no-membership-forbidden", "AUTH-7", "a user without a current membership gets MCP_RESOURCE_FORBIDDEN from the unscoped lists";
        AccessBeforeSchema = "access-before-schema", "AUTH-8", "scope, membership and role are checked before the input schema";
        CalendarMinuteWindows = "calendar-minute-windows", "LIM-2", "rate windows are calendar minutes of the server's clock";
        TokenBucket = "token-bucket", "LIM-2", "rate limiting is a token bucket of the limit, refilled at the limit per minute";
        SlidingLog = "sliding-log", "LIM-2", "rate limiting is a true sliding window of 60 s";
        BareOrderData = "bare-order-data", "ENV-7", "get_order and update_order_status answer with the order itself as data";
        OldestFirst = "oldest-first", "PAG-4", "every list and message page comes oldest first (timestamp, then id, ascending)";
        TransitionMismatchCode = "transition-mismatch-code", "PRE-3", "a transition the lifecycle forbids is refused with MCP_EXPECTED_STATE_MISMATCH";
        TransitionValidationCode = "transition-validation-code", "PRE-3", "a transition the lifecycle forbids is refused with MCP_INVALID_ARGUMENTS";
        MessageLimitClamp = "message-limit-clamp", "PAG-8", "a message_limit over 100 is clamped to 100 (the input schema sets no maximum)";
        RepeatsAsOnce = "repeats-as-once", "LIM-1", "a status filter value or a metric given twice is served as if given once (no uniqueItems published)";
        Utf16Lengths = "utf16-lengths", "IDEM-1", "string lengths are counted in UTF-16 code units, as zod does: a character outside the BMP counts twice";
    }
}

/// The variants that replace the in-memory rate limiter: at most one of them at a time.
const RATE_VARIANTS: [Variant; 3] =
    [Variant::CalendarMinuteWindows, Variant::TokenBucket, Variant::SlidingLog];

/// The variants that pick the code of a forbidden transition: at most one of them at a time.
const TRANSITION_VARIANTS: [Variant; 2] =
    [Variant::TransitionMismatchCode, Variant::TransitionValidationCode];

/// Refuses combinations that cannot run: two rate variants together, two transition codes
/// together, or a rate variant with Redis (the variants replace the in-memory limiter only).
pub fn check(list: &[Variant], redis: bool) -> Result<(), String> {
    let among = |group: &[Variant]| -> BTreeSet<&str> {
        list.iter().filter(|v| group.contains(v)).map(|v| v.name()).collect()
    };
    let rate = among(&RATE_VARIANTS);
    for (group, what) in [
        (&rate, "replaces the rate limiter"),
        (&among(&TRANSITION_VARIANTS), "picks the code of a forbidden transition"),
    ] {
        if group.len() > 1 {
            let names: Vec<&str> = group.iter().copied().collect();
            return Err(format!("variants {} cannot be combined: each {what} (pick one)", names.join(", ")));
        }
    }
    if let (Some(name), true) = (rate.first(), redis) {
        return Err(format!(
            "variant {name} applies to the in-memory rate limiter only; it cannot run with --redis"
        ));
    }
    Ok(())
}

/// The variants switched on.
#[derive(Debug, Default, Clone)]
pub struct Variants(BTreeSet<Variant>);

impl Variants {
    pub fn new(list: &[Variant]) -> Variants {
        Variants(list.iter().copied().collect())
    }

    pub fn has(&self, v: Variant) -> bool {
        self.0.contains(&v)
    }

    pub fn any(&self) -> bool {
        !self.0.is_empty()
    }

    // --- protocol and envelope ---

    /// The input schema to publish and validate against: `schema` (the contract's, as the
    /// defects left it), patched for `message-limit-clamp` (no maximum on `message_limit`) and
    /// `repeats-as-once` (no `uniqueItems` on the status filter and the metrics).
    pub fn input_schema(&self, tool: ToolName, mut schema: Value) -> Value {
        if self.has(Variant::RepeatsAsOnce) {
            for pointer in ["/properties/status", "/properties/metrics"] {
                if let Some(prop) = schema.pointer_mut(pointer).and_then(Value::as_object_mut) {
                    prop.remove("uniqueItems");
                }
            }
        }
        if self.has(Variant::MessageLimitClamp)
            && tool == ToolName::GetConversation
            && let Some(prop) = schema.pointer_mut("/properties/message_limit").and_then(Value::as_object_mut)
        {
            prop.remove("maximum");
        }
        schema
    }

    /// The schema the server validates against, from the one it publishes: `utf16-lengths`
    /// publishes the contract's lengths and counts them itself ([`Variants::refuses_length`]).
    pub fn validated_schema(&self, mut schema: Value) -> Value {
        if self.has(Variant::Utf16Lengths)
            && let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut)
        {
            for prop in props.values_mut().filter_map(Value::as_object_mut) {
                if prop.get("pattern").is_none() {
                    prop.remove("minLength");
                    prop.remove("maxLength");
                }
            }
        }
        schema
    }

    /// `utf16-lengths`: a free string whose length in UTF-16 code units is outside the
    /// contract's bounds (what zod's `.min()`/`.max()` count).
    pub fn refuses_length(&self, tool: ToolName, args: &Value) -> Option<ToolError> {
        if !self.has(Variant::Utf16Lengths) {
            return None;
        }
        let schema = tool.input_schema();
        for (name, prop) in schema.get("properties")?.as_object()? {
            let Some(text) = args.get(name).and_then(Value::as_str) else { continue };
            if prop.get("pattern").is_some() {
                continue;
            }
            let units = text.encode_utf16().count() as u64;
            let min = prop.get("minLength").and_then(Value::as_u64).unwrap_or(0);
            let max = prop.get("maxLength").and_then(Value::as_u64).unwrap_or(u64::MAX);
            if units < min || units > max {
                return Some(ToolError::invalid(format!("/{name} has the wrong length")));
            }
        }
        None
    }

    /// The output schema to publish: the contract's, patched for the variants that change a
    /// shape (the error object's extra fields, the bare order).
    pub fn output_schema(&self, tool: ToolName) -> Value {
        let mut schema = tool.output_schema();
        if self.has(Variant::ErrorExtraFields)
            && let Some(props) = schema
                .pointer_mut("/oneOf/1/properties/data/properties/error/properties")
                .and_then(Value::as_object_mut)
        {
            props.insert(
                "occurred_at".into(),
                json!({
                    "type": "string", "format": "date-time",
                    "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                }),
            );
            props.insert("trace_id".into(), json!({ "type": "string", "pattern": "^[0-9a-f]{32}$" }));
        }
        if self.bare_order(tool)
            && let Some(data) = schema.pointer_mut("/oneOf/0/properties/data")
        {
            *data = data["properties"]["order"].take();
        }
        schema
    }

    /// Adds the extra error fields of `error-extra-fields` to a finished envelope.
    pub fn envelope(&self, structured: &mut Value, now_ms: i64) {
        if !self.has(Variant::ErrorExtraFields) {
            return;
        }
        if let Some(err) = structured.pointer_mut("/data/error").and_then(Value::as_object_mut) {
            err.insert("occurred_at".into(), timestamp_ms(now_ms).into());
            err.insert("trace_id".into(), format!("{:032x}", rand::random::<u128>()).into());
        }
    }

    fn bare_order(&self, tool: ToolName) -> bool {
        self.has(Variant::BareOrderData) && matches!(tool, ToolName::GetOrder | ToolName::UpdateOrderStatus)
    }

    /// `bare-order-data`: the order itself as `data`, not `{ "order": … }`.
    pub fn order_output(&self, mut out: Output) -> Output {
        if self.has(Variant::BareOrderData) {
            out.data = out.data["order"].take();
        }
        out
    }

    // --- authorization ---

    /// `access-before-schema`: scope, membership and role before the input schema.
    pub fn access_before_schema(&self) -> bool {
        self.has(Variant::AccessBeforeSchema)
    }

    /// `no-membership-forbidden`: may this targetless list refuse a user with no membership?
    pub fn forbids_without_membership(&self, tool: ToolName) -> bool {
        self.has(Variant::NoMembershipForbidden)
            && matches!(tool, ToolName::ListOrganizations | ToolName::ListRestaurants)
    }

    // --- pages ---

    /// `oldest-first`: lists and message pages run oldest first, not newest first.
    pub fn oldest_first(&self) -> bool {
        self.has(Variant::OldestFirst)
    }

    /// The messages a page may hold for a `message_limit` of `asked`: as asked (the schema caps
    /// it at 100), or at most 100 with `message-limit-clamp` (the schema sets no maximum).
    pub fn message_limit(&self, asked: usize) -> usize {
        if self.has(Variant::MessageLimitClamp) { asked.min(MAX_MESSAGE_LIMIT) } else { asked }
    }

    // --- limits ---

    /// The in-memory rate limiter: the reference's window opened by a pair's first call, or the
    /// one rate variant switched on.
    pub fn memory_limiter(&self) -> Arc<dyn RateLimiter> {
        if self.has(Variant::CalendarMinuteWindows) {
            Arc::new(MemoryLimiter::calendar_minutes())
        } else if self.has(Variant::TokenBucket) {
            Arc::new(TokenBucketLimiter::default())
        } else if self.has(Variant::SlidingLog) {
            Arc::new(SlidingLogLimiter::default())
        } else {
            Arc::new(MemoryLimiter::default())
        }
    }

    // --- preconditions ---

    /// `lifecycle-skip-forward`: any forward move is allowed, not only the next step.
    pub fn skips_forward(&self) -> bool {
        self.has(Variant::LifecycleSkipForward)
    }

    /// The refusal of a transition the lifecycle forbids: ORDER_STATUS_PRECONDITION_FAILED, or
    /// the code a transition variant picks.
    pub fn forbidden_transition(&self) -> ToolError {
        if self.has(Variant::TransitionMismatchCode) {
            ErrorCode::ExpectedStateMismatch.into()
        } else if self.has(Variant::TransitionValidationCode) {
            ToolError::invalid("/status is not a move the order's lifecycle allows from its current status")
        } else {
            ErrorCode::OrderStatusPreconditionFailed.into()
        }
    }
}

/// RFC 3339 UTC with milliseconds: `2026-11-05T12:34:56.789Z`.
fn timestamp_ms(now_ms: i64) -> String {
    let seconds = chataigne_contract::time::format_timestamp(now_ms.div_euclid(1000));
    let whole = seconds.strip_suffix('Z').unwrap_or(&seconds);
    format!("{whole}.{:03}Z", now_ms.rem_euclid(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant is documented for implementers, names a clause and parses back.
    #[test]
    fn variants_are_documented_and_parse() {
        let doc = include_str!("../../../docs/VARIANTS.md");
        for v in Variant::ALL {
            assert!(chataigne_contract::clauses::find(v.clause()).is_some(), "{} names no clause", v.name());
            assert!(
                doc.contains(&format!("| `{}` | {} |", v.name(), v.clause())),
                "{} is not in docs/VARIANTS.md",
                v.name()
            );
            assert_eq!(Variant::parse(v.name()), Some(*v));
        }
        assert_eq!(Variant::parse("no-such-variant"), None);
    }

    #[test]
    fn variants_rate_combinations_are_refused() {
        use Variant::*;
        assert_eq!(check(&[], true), Ok(()));
        assert_eq!(check(Variant::ALL, false).map_err(|e| e.contains("cannot be combined")), Err(true));
        assert!(check(&[TokenBucket, SlidingLog], false).is_err());
        assert!(check(&[CalendarMinuteWindows, TokenBucket], false).is_err());
        assert_eq!(check(&[TokenBucket, TokenBucket, BareOrderData, AccessBeforeSchema], false), Ok(()));
        let redis = check(&[SlidingLog], true).unwrap_err();
        assert!(redis.contains("sliding-log") && redis.contains("--redis"), "{redis}");
        assert_eq!(check(&[ErrorExtraFields, LifecycleSkipForward, NoMembershipForbidden], true), Ok(()));
        let codes =
            check(&[TransitionMismatchCode, OldestFirst, TransitionValidationCode], false).unwrap_err();
        assert!(codes.contains("transition-mismatch-code, transition-validation-code"), "{codes}");
        assert_eq!(check(&[TransitionValidationCode, MessageLimitClamp, OldestFirst], true), Ok(()));
    }

    #[test]
    fn variants_message_limit_clamp_drops_only_message_limits_maximum() {
        let clamp = Variants::new(&[Variant::MessageLimitClamp]);
        for tool in ToolName::ALL {
            let (reference, patched) = (tool.input_schema(), clamp.input_schema(*tool, tool.input_schema()));
            assert_eq!(Variants::default().input_schema(*tool, tool.input_schema()), reference, "{tool}");
            if *tool != ToolName::GetConversation {
                assert_eq!(patched, reference, "{tool}");
                continue;
            }
            assert_eq!(reference.pointer("/properties/message_limit/maximum"), Some(&json!(100)));
            assert_eq!(patched.pointer("/properties/message_limit/maximum"), None);
            assert_eq!(patched.pointer("/properties/message_limit/minimum"), Some(&json!(1)));
        }
        assert_eq!((clamp.message_limit(101), clamp.message_limit(7)), (100, 7));
        assert_eq!(Variants::default().message_limit(101), 101);
    }

    #[test]
    fn variants_leave_schemas_alone_unless_they_change_a_shape() {
        let none = Variants::default();
        let all = Variants::new(&[Variant::LifecycleSkipForward, Variant::AccessBeforeSchema]);
        for tool in ToolName::ALL {
            assert_eq!(none.output_schema(*tool), tool.output_schema(), "{tool}");
            assert_eq!(all.output_schema(*tool), tool.output_schema(), "{tool}");
        }
    }

    #[test]
    fn variants_timestamps_have_milliseconds() {
        assert_eq!(timestamp_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp_ms(1_795_000_000_007), "2026-11-18T11:06:40.007Z");
    }
}
