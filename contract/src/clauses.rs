//! Every clause of CONTRACT.md, so the suite can report a full matrix and a test can prove each
//! clause has a scenario. `ext` marks the reference server's extensions to the seed contract.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clause {
    pub id: &'static str,
    pub title: &'static str,
    pub ext: bool,
}

const fn c(id: &'static str, title: &'static str, ext: bool) -> Clause {
    Clause { id, title, ext }
}

pub const CLAUSES: &[Clause] = &[
    c("PROTO-1", "Streamable HTTP at /mcp, protocol versions served", false),
    c("PROTO-2", "JSON-RPC errors for unknown tool, method, bad JSON, bad object", false),
    c("PROTO-3", "tools/list: descriptions, closed input schemas, output schemas, annotations", false),
    c("PROTO-4", "every structuredContent validates against the output schema", false),
    c("PROTO-5", "foreign Origin refused with 403", false),
    c("ENV-1", "success envelope with data, meta and a short text", false),
    c("ENV-2", "request_id format, unique per call, x-request-id header", true),
    c("ENV-3", "text summary at most 4 KiB, structured output at most 128 KiB", false),
    c("ENV-4", "error envelope with isError and matching request_ids", false),
    c("ENV-5", "fixed category and retryable flag per code", false),
    c("ENV-6", "error messages echo no argument, text, query, key or token", true),
    c("ENV-7", "each tool's data has the contract's shape (data.order, data.orders, …)", true),
    c("PAG-1", "20 items by default", false),
    c("PAG-2", "limit 1..=50, anything else refused", true),
    c("PAG-3", "next_cursor present iff more items follow", false),
    c("PAG-4", "walking all pages yields every item once, in order, despite insertions", false),
    c("PAG-5", "a changed cursor is refused", false),
    c("PAG-6", "a cursor reused with other filters, tool, client or user is refused", false),
    c("PAG-7", "a cursor carries no authority", false),
    c("PAG-8", "conversation detail pages messages by at most 100", false),
    c("LIM-1", "analytics: 1..=8 distinct metrics over at most 366 days", false),
    c("LIM-2", "rate limit per client, user and tool", false),
    c("LIM-3", "other pairs and tools are not slowed by a limited pair", false),
    c("LIM-4", "deadlines: read timeout, write outcome unknown", false),
    c("LIM-5", "an oversized page is truncated with a continuing cursor", false),
    c("LIM-6", "an uncuttable response is refused as too large", false),
    c("LIM-7", "request body over 1 MiB refused with 413; string lengths bounded", true),
    c("PRE-1", "state changes require expected_status", false),
    c("PRE-2", "expected_status mismatch refused, state unchanged", false),
    c("PRE-3", "forbidden lifecycle transitions refused", false),
    c("PRE-4", "racing operators: exactly one wins", false),
    c("IDEM-1", "keyed writes require an 8..=255 character idempotency_key", false),
    c("IDEM-2", "same key and arguments replay the stored result", false),
    c("IDEM-3", "same key, other arguments: mismatch", false),
    c("IDEM-4", "same key while running: in progress; one effect under concurrency", false),
    c("IDEM-5", "keys scoped by client, user and tool", false),
    c("IDEM-6", "keys forgotten after 24 h", false),
    c("IDEM-7", "only successes stored; authorization checked before a replay", false),
    c("IDEM-8", "keys hashed before storage, never logged", false),
    c("AUTH-1", "missing or invalid token: 401 with resource metadata", false),
    c("AUTH-2", "token for another audience refused", false),
    c("AUTH-3", "missing scope: MCP_SCOPE_REQUIRED with required_scope", false),
    c("AUTH-4", "foreign and absent restaurants indistinguishable", false),
    c("AUTH-5", "child resources through the wrong restaurant: not found", false),
    c("AUTH-6", "role too low: forbidden", false),
    c("AUTH-7", "memberships read at call time", false),
    c("AUTH-8", "check order", false),
    c("ABS-1", "no tool for deliberately absent operations", false),
    c("ABS-2", "no combination of tools reaches them", false),
    c("SEC-1", "sensitive values never reach logs", false),
    c("SEC-2", "internal errors leak no detail", false),
];

/// Readings the seed leaves open where this project or the reference server picked one. A scenario
/// that checks one is tagged `@ext-<slug>`; a step that checks one in passing records an *ext
/// difference* under its slug. Either way it counts at the full level only, never against a seed
/// clause at the seed level.
pub const CHOICES: &[(&str, &str)] = &[
    ("lifecycle-one-step", "orders move one lifecycle step at a time: skipping forward is refused too"),
    (
        "check-order",
        "AUTH-8's full order (schema → scope → membership → role); the seed only puts every check before business logic",
    ),
    (
        "error-codes",
        "the project's codes where the seed names none (MCP_INVALID_ARGUMENTS, MCP_RATE_LIMITED, …)",
    ),
    ("identical-errors", "refusals of absent and foreign resources are equal in every field but request_id"),
    ("empty-when-no-membership", "a user without memberships gets empty lists, not MCP_RESOURCE_FORBIDDEN"),
    (
        "failed-calls-count",
        "refused calls count against the rate limit, and the limit is checked before the role",
    ),
    (
        "rate-window",
        "the rate window opens with a pair's first call and lasts 60 s: call 1001 (501) within it is refused",
    ),
    (
        "retry-after",
        "rate-limited errors carry retry_after_ms, no shorter than what is left of the rate window",
    ),
    ("message-page-default", "get_conversation returns 50 messages unless message_limit says otherwise"),
    ("keyset-walk", "items created during a walk never cause a duplicate or a skip (keyset pagination)"),
    ("stateless-revision", "protocol revision 2026-07-28 is served (server/discover, no handshake)"),
    ("closed-schemas", "input schemas are closed (additionalProperties: false) and tools carry annotations"),
    (
        "protocol-versions",
        "protocol versions 2025-06-18 and 2025-11-25 are both served when a client asks for them",
    ),
    ("analytics-distinct-metrics", "a metric asked twice is refused (the seed only bounds the count at 8)"),
    (
        "host-validation",
        "a request whose Host is not the server's is refused with 403 (the seed level accepts any 4xx that runs nothing: the MCP SDKs send 403 or 421)",
    ),
    (
        "jsonrpc-error-codes",
        "over HTTP, a body that is not JSON gets the JSON-RPC error -32700 and a JSON value that is not a JSON-RPC message -32600 (the seed level accepts any 4xx that runs nothing)",
    ),
    (
        "failures-not-stored",
        "a keyed call that failed while running leaves its key free (only successes are stored)",
    ),
    (
        "newest-first",
        "lists come newest first, ties broken by `id` descending (the seed names no order: a walk in one consistent order passes PAG-4)",
    ),
    (
        "transition-code",
        "a transition the lifecycle forbids is refused with ORDER_STATUS_PRECONDITION_FAILED (the seed also allows MCP_EXPECTED_STATE_MISMATCH or a validation refusal)",
    ),
    (
        "distinct-filter-values",
        "a filter value given twice in one array (status) is refused (the seed says nothing of repeats: serving it as if given once passes the seed level)",
    ),
    (
        "contract-input-schemas",
        "every bound of the contract's input schemas is enforced (the seed level holds a server to the input schema it publishes, and to the bounds the seed states)",
    ),
    (
        "message-limit-refused",
        "a message_limit over 100 is refused with MCP_INVALID_ARGUMENTS (the seed's \"100 messages maximum\" also reads as a clamp)",
    ),
    (
        "no-batches",
        "a JSON array body (a JSON-RPC batch, gone from MCP since 2025-06-18) is refused with a 4xx that runs nothing (the TypeScript SDK still runs batches: the seed level accepts one served)",
    ),
    (
        "unknown-name-codes",
        "prompts/get of a prompt the server does not have is -32602, resources/read of a resource it does not have -32002 (-32602 from revision 2026-07-28), as MCP says a server SHOULD (the seed level accepts any JSON-RPC error)",
    ),
    (
        "length-code-points",
        "string lengths count Unicode code points, as JSON Schema's maxLength does (the seed says \"characters\": counting UTF-16 code units, as the TypeScript SDK's zod does, passes the seed level; counting UTF-8 bytes fails)",
    ),
];

pub fn find_choice(slug: &str) -> Option<&'static str> {
    CHOICES.iter().find(|(s, _)| *s == slug).map(|(_, text)| *text)
}

pub fn find(id: &str) -> Option<&'static Clause> {
    CLAUSES.iter().find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    /// The list above is CONTRACT.md's list: a clause added there must be added here.
    #[test]
    fn matches_contract_md() {
        let text = include_str!("../../docs/CONTRACT.md");
        let mut in_doc: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("- "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.contains('-') && w.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
            .collect();
        in_doc.dedup();
        let listed: Vec<&str> = super::CLAUSES.iter().map(|c| c.id).collect();
        assert_eq!(in_doc, listed);
    }

    /// CONTRACT.md states every clause's level and every reference choice, as the suite has them.
    #[test]
    fn levels_and_choices_match_contract_md() {
        let text = include_str!("../../docs/CONTRACT.md");
        let list = |prefix: &str| -> Vec<String> {
            let line = text.lines().find_map(|l| l.strip_prefix(prefix)).expect("a level line");
            line.split(", ").map(str::to_owned).collect()
        };
        let ids = |ext: bool| -> Vec<String> {
            super::CLAUSES.iter().filter(|c| c.ext == ext).map(|c| c.id.to_owned()).collect()
        };
        assert_eq!(list("- seed: "), ids(false));
        assert_eq!(list("- ext: "), ids(true));
        // The list of reference choices is CHOICES, in its order, and nothing else.
        let listed: Vec<String> = text
            .lines()
            .skip_while(|l| !l.starts_with("Reference choices"))
            .skip(1)
            .take_while(|l| l.starts_with("- `"))
            .map(str::to_owned)
            .collect();
        let expected: Vec<String> =
            super::CHOICES.iter().map(|(slug, what)| format!("- `{slug}`: {what}")).collect();
        assert_eq!(listed, expected, "CONTRACT.md's reference choices and CHOICES differ");
        for clause in super::CLAUSES.iter().filter(|c| c.ext) {
            assert!(text.contains(&format!("- {} **ext**", clause.id)), "{} is not marked ext", clause.id);
        }
    }
}
