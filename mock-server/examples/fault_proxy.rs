//! An HTTP reverse proxy that breaks one rule of the contract in front of a healthy reference
//! server: the outside faults of `bench/outside-faults.sh` (docs/KILL_MATRIX.md, "Outside faults").
//!
//! `cargo run -p mock-server --example fault_proxy -- LISTEN UPSTREAM FAULT`, e.g.
//! `127.0.0.1:18181 127.0.0.1:18180 pag4-skip-first-on-next`; `fault_proxy --list` prints the
//! catalogue (name, clause, level, what) and `none` forwards everything unchanged.
//!
//! The catalogue was written from docs/CONTRACT.md alone, before reading the scenarios, so the
//! faults are bugs a real server could have rather than bugs the suite was written against
//! (unlike `--defect`). Each is a rewrite of requests or answers of `POST /mcp`, sometimes with
//! extra calls upstream (reading the state, walking pages, retrying as someone else) to act out
//! server logic the reference does not have. The proxy reads the published dataset
//! (`FAULT_DATASET`, default `fixtures/dataset.json`) to know personas (tokens are
//! `dev-token-<persona>`), memberships and who owns what; `FAULT_CONTROL_SECRET` lets one fault
//! read the server's clock through the control API.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use chataigne_contract::envelope::{self, ErrorBody};
use chataigne_contract::{Category, ErrorCode, Kind, ToolName};
use rand::Rng;
use serde_json::{Map, Value, json};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Level {
    /// The seed text requires it: `status` of the clause in the report.
    Seed,
    /// An ext clause or a reference choice: `full_status`.
    Full,
}

macro_rules! faults {
    ($($variant:ident = $name:literal, $clause:literal, $level:ident, $what:literal;)*) => {
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        enum Fault { Healthy, $($variant,)* }
        const CATALOGUE: &[(Fault, &str, &str, Level, &str)] = &[
            (Fault::Healthy, "none", "-", Level::Seed, "forwards everything unchanged (the proxy itself must be certified)"),
            $((Fault::$variant, $name, $clause, Level::$level, $what),)*
        ];
    };
}

faults! {
    Proto1OldProtocolOnly = "proto1-old-protocol-only", "PROTO-1", Seed, "initialize always negotiates 2025-03-26 and server/discover is unknown";
    Proto1NoDiscover = "proto1-no-discover", "PROTO-1", Full, "server/discover is an unknown method (no stateless revision)";
    Proto2UnknownToolResult = "proto2-unknown-tool-result", "PROTO-2", Seed, "an unknown tool is a tool result with isError, not JSON-RPC -32602";
    Proto2ParseError500 = "proto2-parse-error-500", "PROTO-2", Seed, "a body that is not JSON gets HTTP 500";
    Proto2UnknownMethodEmpty = "proto2-unknown-method-empty", "PROTO-2", Seed, "an unknown method gets an empty result instead of -32601";
    Proto3OpenInputSchemas = "proto3-open-input-schemas", "PROTO-3", Full, "input schemas lose additionalProperties: false";
    Proto3NoOutputSchema = "proto3-no-output-schema", "PROTO-3", Seed, "tools/list publishes no outputSchema";
    Proto3NoDescription = "proto3-no-description", "PROTO-3", Seed, "tools/list entries have no description";
    Proto3KeyedNotIdempotent = "proto3-keyed-not-idempotent", "PROTO-3", Full, "keyed writes lack idempotentHint";
    Proto4CreatedAtEpoch = "proto4-created-at-epoch", "PROTO-4", Seed, "created_at is sent as epoch seconds, off the published schema";
    Proto4NullNextCursor = "proto4-null-next-cursor", "PROTO-4", Seed, "meta.next_cursor is null on last pages (the schema wants a string)";
    Proto5OriginStripped = "proto5-origin-stripped", "PROTO-5", Seed, "a front proxy drops Origin, so the server never sees a foreign one";
    Proto5OriginPrefix = "proto5-origin-prefix", "PROTO-5", Seed, "Origin is checked with starts_with: http://localhost.evil.example passes";
    Proto5HostRewritten = "proto5-host-rewritten", "PROTO-5", Full, "a front proxy rewrites Host to the upstream's, so a foreign Host passes";
    Env1EmptyText = "env1-empty-text", "ENV-1", Seed, "successes carry an empty text block";
    Env1ReplayedOmitted = "env1-replayed-omitted", "ENV-1", Seed, "meta.replayed is left out when false";
    Env2UuidRequestId = "env2-uuid-request-id", "ENV-2", Full, "request_id is a bare UUID (no req_ prefix)";
    Env2GatewayHeader = "env2-gateway-header", "ENV-2", Full, "the x-request-id header is the gateway's own, not the envelope's";
    Env2ReplayKeepsId = "env2-replay-keeps-id", "ENV-2", Full, "a replay repeats the original call's request_id";
    Env3TextIsJson = "env3-text-is-json", "ENV-3", Seed, "the text block is the whole structured output, pretty-printed";
    Env3SummaryListsItems = "env3-summary-lists-items", "ENV-3", Seed, "list summaries name every item in full";
    Env4IsErrorFalse = "env4-iserror-false", "ENV-4", Seed, "errors are not flagged isError";
    Env4ErrorTopLevel = "env4-error-top-level", "ENV-4", Seed, "errors are {error, meta} instead of {data: {error}, meta}";
    Env4NoMeta = "env4-no-meta", "ENV-4", Seed, "errors carry no meta";
    Env5ForbiddenAuthentication = "env5-forbidden-authentication", "ENV-5", Seed, "MCP_RESOURCE_FORBIDDEN and MCP_SCOPE_REQUIRED say category authentication";
    Env5OutcomeUnknownRetryable = "env5-outcome-unknown-retryable", "ENV-5", Seed, "MCP_OUTCOME_UNKNOWN says retryable: true";
    Env5RateLimitedNotRetryable = "env5-rate-limited-not-retryable", "ENV-5", Seed, "MCP_RATE_LIMITED says retryable: false";
    Env6NotFoundNamesId = "env6-not-found-names-id", "ENV-6", Full, "MCP_RESOURCE_NOT_FOUND names the ID asked for";
    Env6ValidationEchoesValue = "env6-validation-echoes-value", "ENV-6", Full, "MCP_INVALID_ARGUMENTS quotes the longest string argument";
    Env6EchoInSummary = "env6-echo-in-summary", "ENV-6", Full, "error text blocks list the string arguments (messages stay clean)";
    Env6ConflictEchoesStatus = "env6-conflict-echoes-status", "ENV-6", Full, "precondition conflicts quote the expected_status sent";
    Env7RestaurantAsItem = "env7-restaurant-as-item", "ENV-7", Full, "restaurant answers use data.item (output schemas follow)";
    Env7MessagesInConversation = "env7-messages-in-conversation", "ENV-7", Full, "get_conversation nests messages in data.conversation (schema follows)";
    Pag1Default10 = "pag1-default-10", "PAG-1", Seed, "lists return 10 items by default";
    Pag1Default50ExceptOrders = "pag1-default-50-except-orders", "PAG-1", Seed, "every list but list_orders returns 50 items by default";
    Pag2Clamp = "pag2-clamp", "PAG-2", Full, "a limit over 50 is clamped to 50 instead of refused";
    Pag2ZeroAsDefault = "pag2-zero-as-default", "PAG-2", Full, "a limit of 0 or less means the default";
    Pag3CursorWhenFull = "pag3-cursor-when-full", "PAG-3", Seed, "a full last page still has a next_cursor (to an empty page)";
    Pag3EmptyStringCursor = "pag3-empty-string-cursor", "PAG-3", Seed, "the last page has next_cursor: \"\"";
    Pag4SkipFirstOnNext = "pag4-skip-first-on-next", "PAG-4", Seed, "every page reached by a cursor loses its first item";
    // Full since the keyset walk is a reference choice (`keyset-walk`: the seed says nothing of
    // items created during a walk).
    Pag4OffsetCursor = "pag4-offset-cursor", "PAG-4", Full, "cursors are base64 offsets (new items shift the walk)";
    Pag4TieOrderAsc = "pag4-tie-order-asc", "PAG-4", Full, "orders created in the same second come id ascending";
    Pag5EmptyCursorFirstPage = "pag5-empty-cursor-first-page", "PAG-5", Seed, "an empty cursor means the first page";
    Pag5InvalidCursorRestarts = "pag5-invalid-cursor-restarts", "PAG-5", Seed, "an invalid cursor restarts from the first page";
    Pag5PrefixAccepted = "pag5-prefix-accepted", "PAG-5", Seed, "a truncated or extended cursor decodes to the same position";
    Pag6FiltersUnbound = "pag6-filters-unbound", "PAG-6", Seed, "a cursor reused with other filters continues the first walk";
    Pag6ClientUnbound = "pag6-client-unbound", "PAG-6", Seed, "a cursor works for any client or user (the issuer's page)";
    Pag6LimitChangeRefused = "pag6-limit-change-refused", "PAG-6", Seed, "a cursor with another limit is refused";
    Pag7PrefetchedPages = "pag7-prefetched-pages", "PAG-7", Seed, "next pages are prefetched and served without an access check";
    Pag7ForbiddenAsCursorInvalid = "pag7-forbidden-as-cursor-invalid", "PAG-7", Seed, "a next page after access ended says MCP_CURSOR_INVALID";
    Pag8NoMessageCap = "pag8-no-message-cap", "PAG-8", Seed, "conversation detail without message_limit returns every message";
    Pag8Clamp101 = "pag8-clamp-101", "PAG-8", Full, "message_limit over 100 is clamped instead of refused";
    Lim1RangeClamped = "lim1-range-clamped", "LIM-1", Seed, "an analytics range over 366 days is clamped to 366";
    Lim1NineMetricsCut = "lim1-nine-metrics-cut", "LIM-1", Seed, "more than 8 metrics are cut to 8";
    Lim1ReversedSwapped = "lim1-reversed-swapped", "LIM-1", Seed, "to < from is swapped instead of refused";
    Lim2ReadLimit900 = "lim2-read-limit-900", "LIM-2", Seed, "reads are limited at 900 a minute";
    Lim2NoRetryAfter = "lim2-no-retry-after", "LIM-2", Full, "MCP_RATE_LIMITED has no retry_after_ms";
    Lim3SharedAcrossTools = "lim3-shared-across-tools", "LIM-3", Seed, "one window of 1000 a minute for all tools of a token";
    Lim3GlobalPerTool = "lim3-global-per-tool", "LIM-3", Seed, "a limited tool is limited for every caller";
    Lim4TimeoutAsInternal = "lim4-timeout-as-internal", "LIM-4", Seed, "a read past its deadline says MCP_INTERNAL_ERROR";
    Lim4OutcomeAsTimeout = "lim4-outcome-as-timeout", "LIM-4", Seed, "a write past its deadline says MCP_TOOL_TIMEOUT";
    Lim5TruncatedFlagMissing = "lim5-truncated-flag-missing", "LIM-5", Seed, "cut pages say truncated: false";
    Lim5CursorSkipsCut = "lim5-cursor-skips-cut", "LIM-5", Seed, "a cut page's cursor continues after the uncut page (items lost)";
    Lim6TooLargeAsInternal = "lim6-too-large-as-internal", "LIM-6", Seed, "an item over 128 KiB says MCP_INTERNAL_ERROR";
    Lim6HugeItemCut = "lim6-huge-item-cut", "LIM-6", Seed, "a transcript over 128 KiB is returned with its text cut";
    Lim7413As400 = "lim7-413-as-400", "LIM-7", Full, "a body over 1 MiB gets 400 and a parse error";
    Lim7NoMaxLength = "lim7-no-max-length", "LIM-7", Full, "string arguments publish no maxLength";
    Pre1ExpectedOptional = "pre1-expected-optional", "PRE-1", Seed, "a missing expected_status is read from the store";
    Pre1MissingAsConflict = "pre1-missing-as-conflict", "PRE-1", Seed, "a missing expected_status says MCP_EXPECTED_STATE_MISMATCH";
    Pre2Ignored = "pre2-ignored", "PRE-2", Seed, "expected_status is replaced by the current state";
    Pre2RefusedButApplied = "pre2-refused-but-applied", "PRE-2", Seed, "a stale expected_status is refused, but the change is applied";
    Pre3ForbiddenAcked = "pre3-forbidden-acked", "PRE-3", Seed, "a forbidden transition answers success (nothing changes)";
    Pre3AsMismatch = "pre3-as-mismatch", "PRE-3", Full, "a forbidden transition says MCP_EXPECTED_STATE_MISMATCH";
    Pre4LastWriterWins = "pre4-last-writer-wins", "PRE-4", Seed, "the loser of a race is told it succeeded";
    Pre4LoserInternal = "pre4-loser-internal", "PRE-4", Seed, "the loser of a race gets MCP_INTERNAL_ERROR";
    Idem1KeyInvented = "idem1-key-invented", "IDEM-1", Seed, "a missing idempotency_key is made up";
    Idem1SevenChars = "idem1-seven-chars", "IDEM-1", Seed, "7-character keys are accepted";
    Idem2ReplayedFalse = "idem2-replayed-false", "IDEM-2", Seed, "replays say replayed: false";
    Idem2FreshResult = "idem2-fresh-result", "IDEM-2", Seed, "a replay runs again with a new key (second effect)";
    Idem2KeyOrderSensitive = "idem2-key-order-sensitive", "IDEM-2", Seed, "the same arguments in another key order are a mismatch";
    Idem3MismatchReplays = "idem3-mismatch-replays", "IDEM-3", Seed, "a key reused with other arguments replays the first result";
    Idem4WaitsForFirst = "idem4-waits-for-first", "IDEM-4", Seed, "a duplicate waits for the first call and replays it";
    Idem4NoRetryAfter = "idem4-no-retry-after", "IDEM-4", Seed, "MCP_OPERATION_IN_PROGRESS has no retry_after_ms";
    Idem5SharedAcrossClients = "idem5-shared-across-clients", "IDEM-5", Seed, "a user's keys are shared by all their OAuth clients";
    Idem5SharedAcrossTools = "idem5-shared-across-tools", "IDEM-5", Seed, "a key used on one tool is a mismatch on another";
    Idem6CachedForever = "idem6-cached-forever", "IDEM-6", Seed, "a cache in front replays keyed results forever";
    Idem6ForgottenAfter1h = "idem6-forgotten-after-1h", "IDEM-6", Seed, "keys are forgotten after 1 h instead of 24 h";
    Idem7RefusalsStored = "idem7-refusals-stored", "IDEM-7", Seed, "refused keyed calls are stored and replayed";
    Idem7ReplayBeforeAuth = "idem7-replay-before-auth", "IDEM-7", Seed, "a stored result is replayed to a user who lost access";
    Auth1401As200 = "auth1-401-as-200", "AUTH-1", Seed, "a missing token gets HTTP 200 with a JSON-RPC error";
    Auth1NoChallenge = "auth1-no-challenge", "AUTH-1", Seed, "401 has no WWW-Authenticate";
    Auth1InternalMetadataUrl = "auth1-internal-metadata-url", "AUTH-1", Seed, "the challenge names the internal host's metadata URL";
    Auth2AudienceUnchecked = "auth2-audience-unchecked", "AUTH-2", Seed, "a token for another audience is accepted";
    Auth2Audience403 = "auth2-audience-403", "AUTH-2", Seed, "a token for another audience gets 403";
    Auth3ScopeAsForbidden = "auth3-scope-as-forbidden", "AUTH-3", Seed, "a missing scope says MCP_RESOURCE_FORBIDDEN";
    Auth3NoRequiredScope = "auth3-no-required-scope", "AUTH-3", Seed, "MCP_SCOPE_REQUIRED has no required_scope";
    Auth3ReadsUnscoped = "auth3-reads-unscoped", "AUTH-3", Seed, "read tools do not check scopes";
    Auth4AbsentNotFound = "auth4-absent-not-found", "AUTH-4", Seed, "an absent restaurant or organization is MCP_RESOURCE_NOT_FOUND";
    Auth4AbsentMessageDiffers = "auth4-absent-message-differs", "AUTH-4", Seed, "an absent restaurant is refused with another message";
    Auth4ForeignOrgEmpty = "auth4-foreign-org-empty", "AUTH-4", Seed, "list_restaurants of a foreign organization is an empty list";
    Auth5SiblingLookup = "auth5-sibling-lookup", "AUTH-5", Seed, "children are found through any restaurant of their organization";
    Auth5ForeignLookup = "auth5-foreign-lookup", "AUTH-5", Seed, "children are looked up by ID alone, whatever the tenant";
    Auth5AbsentForbidden = "auth5-absent-forbidden", "AUTH-5", Seed, "an absent child is MCP_RESOURCE_FORBIDDEN";
    Auth5SearchSpansOrg = "auth5-search-spans-org", "AUTH-5", Seed, "transcript searches and instruction lists cover the whole organization";
    Auth5WriteLookup = "auth5-write-lookup", "AUTH-5", Seed, "writes find their order or conversation by ID alone";
    Auth6ViewerWrites = "auth6-viewer-writes", "AUTH-6", Seed, "a viewer may write";
    Auth6RoleAsScope = "auth6-role-as-scope", "AUTH-6", Seed, "a role too low says MCP_SCOPE_REQUIRED";
    Auth7MembershipCache = "auth7-membership-cache", "AUTH-7", Seed, "access is cached for 60 s after a success";
    Auth7RevokedIgnored = "auth7-revoked-ignored", "AUTH-7", Seed, "a revoked membership still grants its role";
    Auth8ScopeBeforeSchema = "auth8-scope-before-schema", "AUTH-8", Full, "the scope is checked before the input schema";
    Auth8PreconditionBeforeRole = "auth8-precondition-before-role", "AUTH-8", Seed, "expected_status is compared before the role is checked";
    Abs1RefundTool = "abs1-refund-tool", "ABS-1", Seed, "tools/list offers refund_order";
    Abs1ArchiveDownload = "abs1-archive-download", "ABS-1", Seed, "tools/list offers download_order_history (a bulk export under a mild name)";
    Abs2CancelAcked = "abs2-cancel-acked", "ABS-2", Seed, "update_order_status lists and acknowledges cancelled and rejected";
    Sec2StackTrace = "sec2-stack-trace", "SEC-2", Seed, "internal errors carry a panic message and a backtrace line";
    Sec2LeakInText = "sec2-leak-in-text", "SEC-2", Seed, "internal errors' text block names a path and a dependency error";
    Sec2LeakInField = "sec2-leak-in-field", "SEC-2", Seed, "internal errors carry data.error.detail with SQL";
}

/// Clauses no rewrite of the wire can break: what the server writes to its own log or store.
const NOT_EXPRESSIBLE: &[(&str, &str)] = &[
    ("SEC-1", "log contents are the server's own"),
    ("IDEM-8", "key storage and the log are the server's own"),
];

const LISTS: [(&str, &str); 6] = [
    ("list_organizations", "organizations"),
    ("list_restaurants", "restaurants"),
    ("list_orders", "orders"),
    ("list_conversations", "conversations"),
    ("search_transcripts", "transcripts"),
    ("list_instructions", "instructions"),
];

fn list_key(tool: &str) -> Option<&'static str> {
    LISTS.iter().find(|(t, _)| *t == tool).map(|(_, k)| *k)
}

/// The list in a success's data: a list tool's items, or get_conversation's messages.
fn items_key(tool: &str) -> Option<&'static str> {
    list_key(tool).or((tool == "get_conversation").then_some("messages"))
}

fn kind(tool: &str) -> Option<Kind> {
    ToolName::parse(tool).map(ToolName::kind)
}

fn is_keyed(tool: &str) -> bool {
    kind(tool) == Some(Kind::KeyedWrite)
}

fn random_alnum(n: usize) -> String {
    rand::rng().sample_iter(&rand::distr::Alphanumeric).take(n).map(char::from).collect()
}

fn new_request_id() -> String {
    format!("req_{}", random_alnum(20))
}

// ---------------------------------------------------------------------------------------------
// The published dataset: personas, memberships, who owns what.

#[derive(Clone)]
struct Persona {
    name: String,
    user: String,
    client: String,
    scopes: Vec<String>,
    audience: Option<String>,
}

#[derive(Clone)]
struct Membership {
    user: String,
    org: String,
    role: String,
    restaurants: Option<Vec<String>>,
    revoked: bool,
}

#[derive(Default)]
struct Dataset {
    personas: Vec<Persona>,
    memberships: Vec<Membership>,
    /// restaurant → organization
    restaurant_org: HashMap<String, String>,
    /// order, conversation, transcript or instruction → restaurant
    child_restaurant: HashMap<String, String>,
    transcripts: HashMap<String, Value>,
    orgs: HashSet<String>,
}

impl Dataset {
    fn load(path: &str) -> Dataset {
        let Ok(text) = std::fs::read_to_string(path) else {
            eprintln!("fault_proxy: no dataset at {path}: faults that need it do nothing");
            return Dataset::default();
        };
        let d: Value = serde_json::from_str(&text).unwrap_or_default();
        let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let arr = |k: &str| d[k].as_array().cloned().unwrap_or_default();
        let mut out = Dataset::default();
        for p in arr("personas") {
            out.personas.push(Persona {
                name: s(&p, "persona"),
                user: s(&p, "user_id"),
                client: s(&p, "client_id"),
                scopes: p["scopes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                audience: p["audience"].as_str().map(String::from),
            });
        }
        for m in arr("memberships") {
            out.memberships.push(Membership {
                user: s(&m, "user_id"),
                org: s(&m, "organization_id"),
                role: s(&m, "role"),
                restaurants: m["restaurant_ids"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect()),
                revoked: m["revoked"].as_bool().unwrap_or(false),
            });
        }
        for o in arr("organizations") {
            out.orgs.insert(s(&o, "id"));
        }
        for r in arr("restaurants") {
            out.restaurant_org.insert(s(&r, "id"), s(&r, "organization_id"));
        }
        for kind in ["orders", "conversations", "transcripts", "instructions"] {
            for c in arr(kind) {
                out.child_restaurant.insert(s(&c, "id"), s(&c, "restaurant_id"));
                if kind == "transcripts" {
                    out.transcripts.insert(s(&c, "id"), c);
                }
            }
        }
        out
    }

    fn persona(&self, token: &str) -> Option<&Persona> {
        let name = token.strip_prefix(mock_server::DEV_TOKEN_PREFIX)?;
        self.personas.iter().find(|p| p.name == name)
    }

    /// Another persona of the same user and client, for this audience, holding `scope` (or the
    /// most scopes): the token a server that skips one check would effectively act on.
    fn sibling(&self, of: &Persona, scope: Option<&str>) -> Option<&Persona> {
        self.personas
            .iter()
            .filter(|p| p.user == of.user && p.client == of.client && p.audience.is_none())
            .filter(|p| scope.is_none_or(|s| p.scopes.iter().any(|x| x == s)))
            .max_by_key(|p| p.scopes.len())
    }

    fn membership(&self, user: &str, org: &str) -> Option<&Membership> {
        self.memberships.iter().find(|m| m.user == user && m.org == org)
    }

    /// A persona that owns `org` (full scopes, first client): for faults that act as someone
    /// who has access.
    fn owner_of_org(&self, org: &str) -> Option<&Persona> {
        let m = self.memberships.iter().find(|m| m.org == org && m.role == "owner" && !m.revoked)?;
        self.personas
            .iter()
            .filter(|p| p.user == m.user && p.audience.is_none())
            .max_by_key(|p| (p.scopes.len(), std::cmp::Reverse(p.client.clone())))
    }
}

fn token_header(persona: &Persona) -> String {
    format!("Bearer {}{}", mock_server::DEV_TOKEN_PREFIX, persona.name)
}

// ---------------------------------------------------------------------------------------------
// Requests and answers as the proxy sees them.

#[derive(Clone)]
struct Call {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    /// The JSON-RPC request, when the body is one object.
    rpc: Option<Value>,
}

impl Call {
    fn rpc_method(&self) -> Option<&str> {
        self.rpc.as_ref()?.get("method")?.as_str()
    }

    fn tool(&self) -> Option<&str> {
        if self.rpc_method() != Some("tools/call") {
            return None;
        }
        self.rpc.as_ref()?.get("params")?.get("name")?.as_str()
    }

    fn args(&self) -> Map<String, Value> {
        let args = self.rpc.as_ref().and_then(|r| r.get("params")).and_then(|p| p.get("arguments"));
        args.and_then(Value::as_object).cloned().unwrap_or_default()
    }

    fn arg(&self, key: &str) -> Option<Value> {
        self.args().get(key).cloned()
    }

    fn arg_str(&self, key: &str) -> Option<String> {
        self.arg(key).and_then(|v| v.as_str().map(String::from))
    }

    fn has_arg(&self, key: &str) -> bool {
        self.args().contains_key(key)
    }

    fn set_args(&mut self, f: impl FnOnce(&mut Map<String, Value>)) {
        let Some(rpc) = self.rpc.as_mut() else { return };
        let params = &mut rpc["params"];
        if !params["arguments"].is_object() {
            params["arguments"] = json!({});
        }
        if let Some(args) = params["arguments"].as_object_mut() {
            f(args);
        }
        self.body = Bytes::from(serde_json::to_vec(rpc).unwrap_or_default());
    }

    fn with_args(&self, f: impl FnOnce(&mut Map<String, Value>)) -> Call {
        let mut c = self.clone();
        c.set_args(f);
        c
    }

    fn auth(&self) -> String {
        self.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    }

    fn token(&self) -> String {
        let auth = self.auth();
        auth.strip_prefix("Bearer ").unwrap_or_default().to_owned()
    }

    fn set_auth(&mut self, auth: &str) {
        if let Ok(v) = HeaderValue::from_str(auth) {
            self.headers.insert(header::AUTHORIZATION, v);
        }
    }

    fn as_auth(&self, auth: &str) -> Call {
        let mut c = self.clone();
        c.set_auth(auth);
        c
    }

    fn rpc_id(&self) -> Value {
        self.rpc.as_ref().and_then(|r| r.get("id")).cloned().unwrap_or(Value::Null)
    }

    /// The arguments that choose a walk: everything but the cursor and the page size.
    fn filters(&self) -> Map<String, Value> {
        let mut args = self.args();
        for k in ["cursor", "limit", "message_limit"] {
            args.remove(k);
        }
        args
    }

    fn page_limit(&self) -> Option<Value> {
        self.arg("limit").or_else(|| self.arg("message_limit"))
    }
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
    json: Option<Value>,
    changed: bool,
}

impl Answer {
    fn new(status: StatusCode, headers: HeaderMap, body: Bytes) -> Answer {
        let is_json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.contains("json"));
        let json = if is_json { serde_json::from_slice(&body).ok() } else { None };
        Answer { status, headers, body, json, changed: false }
    }

    fn plain(status: StatusCode, text: &str) -> Answer {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        Answer::new(status, headers, Bytes::from(text.to_owned()))
    }

    /// A JSON-RPC answer to `call` made by the proxy.
    fn rpc(call: &Call, member: &str, value: Value) -> Answer {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let mut a = Answer::new(StatusCode::OK, headers, Bytes::new());
        a.json = Some(json!({ "jsonrpc": "2.0", "id": call.rpc_id(), member: value }));
        a.changed = true;
        if let Some(rid) = a.result().and_then(request_id) {
            a.set_header_id(&rid);
        }
        a
    }

    fn result(&self) -> Option<&Value> {
        self.json.as_ref()?.get("result")
    }

    fn result_mut(&mut self) -> Option<&mut Value> {
        self.changed = true;
        self.json.as_mut()?.get_mut("result")
    }

    fn rpc_error_code(&self) -> Option<i64> {
        self.json.as_ref()?.get("error")?.get("code")?.as_i64()
    }

    fn code(&self) -> Option<ErrorCode> {
        self.result().and_then(error_code)
    }

    fn is_success(&self) -> bool {
        self.result().is_some_and(is_success)
    }

    fn items(&self, tool: &str) -> Option<&Vec<Value>> {
        self.result()?.get("structuredContent")?.get("data")?.get(items_key(tool)?)?.as_array()
    }

    fn items_mut(&mut self, tool: &str) -> Option<&mut Vec<Value>> {
        let key = items_key(tool)?;
        self.result_mut()?.get_mut("structuredContent")?.get_mut("data")?.get_mut(key)?.as_array_mut()
    }

    fn meta_mut(&mut self) -> Option<&mut Map<String, Value>> {
        self.result_mut()?.get_mut("structuredContent")?.get_mut("meta")?.as_object_mut()
    }

    fn next_cursor(&self) -> Option<String> {
        let meta = self.result()?.get("structuredContent")?.get("meta")?;
        meta.get("next_cursor")?.as_str().map(String::from)
    }

    fn flag(&self, name: &str) -> bool {
        let meta = self.result().and_then(|r| r.get("structuredContent")).and_then(|s| s.get("meta"));
        meta.and_then(|m| m.get(name)).and_then(Value::as_bool).unwrap_or(false)
    }

    fn error_mut(&mut self) -> Option<&mut Map<String, Value>> {
        let r = self.result_mut()?;
        r.get_mut("structuredContent")?.get_mut("data")?.get_mut("error")?.as_object_mut()
    }

    fn set_header_id(&mut self, rid: &str) {
        if let Ok(v) = HeaderValue::from_str(rid) {
            self.headers.insert("x-request-id", v);
        }
    }

    /// Give the answer another request_id everywhere it appears (envelope, text, header).
    fn set_request_id(&mut self, rid: &str) {
        let old = self.result().and_then(request_id);
        if let Some(result) = self.result_mut() {
            let sc = &mut result["structuredContent"];
            if sc["meta"].is_object() {
                sc["meta"]["request_id"] = json!(rid);
            }
            if sc["data"]["error"].is_object() {
                sc["data"]["error"]["request_id"] = json!(rid);
            }
            if let (Some(old), Some(blocks)) = (old, result["content"].as_array_mut()) {
                for b in blocks {
                    if let Some(t) = b["text"].as_str() {
                        b["text"] = json!(t.replace(&old, rid));
                    }
                }
            }
        }
        self.set_header_id(rid);
    }

    /// Turn an error into another code, with that code's category, retryable flag and message.
    fn recode(&mut self, code: ErrorCode) {
        let rid = self.result().and_then(request_id).unwrap_or_else(new_request_id);
        if let Some(result) = self.result_mut() {
            *result = error_result(code, &rid);
        }
    }

    fn text_mut(&mut self) -> Option<&mut Value> {
        self.result_mut()?.get_mut("content")?.get_mut(0)?.get_mut("text")
    }

    fn into_response(self) -> Response {
        let body = match (&self.json, self.changed) {
            (Some(v), true) => Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
            _ => self.body,
        };
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = self.status;
        for (name, value) in &self.headers {
            if !hop_by_hop(name.as_str()) && name != header::CONTENT_LENGTH {
                response.headers_mut().append(name, value.clone());
            }
        }
        response
    }
}

fn hop_by_hop(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "connection" | "keep-alive" | "transfer-encoding" | "te" | "trailer" | "upgrade" | "proxy-connection"
    )
}

fn request_id(result: &Value) -> Option<String> {
    let meta = result.get("structuredContent")?.get("meta")?;
    meta.get("request_id")?.as_str().map(String::from)
}

fn error_code(result: &Value) -> Option<ErrorCode> {
    let code = result.get("structuredContent")?.get("data")?.get("error")?.get("code")?;
    ErrorCode::parse(code.as_str()?)
}

fn is_success(result: &Value) -> bool {
    result.get("isError") != Some(&json!(true))
        && result
            .get("structuredContent")
            .and_then(|s| s.get("data"))
            .is_some_and(|d| d.get("error").is_none())
}

/// A tool result for `code`, built the way the reference builds one.
fn error_result(code: ErrorCode, rid: &str) -> Value {
    let mut body = ErrorBody::new(code, rid);
    if matches!(code, ErrorCode::RateLimited | ErrorCode::OperationInProgress) {
        body.retry_after_ms = Some(1000);
    }
    let text = format!("{}: {} (request_id {rid})", code.as_str(), body.message);
    json!({ "content": [{ "type": "text", "text": text }], "structuredContent": envelope::error(&body), "isError": true })
}

fn success_result(data: Value, meta: Map<String, Value>, summary: &str) -> Value {
    json!({
        "content": [{ "type": "text", "text": summary }],
        "structuredContent": { "data": data, "meta": meta },
        "isError": false,
    })
}

fn fresh_meta() -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("request_id".into(), json!(new_request_id()));
    meta.insert("truncated".into(), json!(false));
    meta.insert("replayed".into(), json!(false));
    meta
}

// ---------------------------------------------------------------------------------------------
// What the proxy remembers between calls (for the stateful faults).

struct Issued {
    tool: String,
    filters: Map<String, Value>,
    limit: Option<Value>,
    auth: String,
}

struct Keyed {
    args: Map<String, Value>,
    raw_args: String,
    result: Value,
    request_id: String,
    server_ms: Option<u64>,
}

/// (auth, tool, idempotency key): where a keyed call's result is remembered.
type Slot = (String, String, String);

#[derive(Default)]
struct Memory {
    /// child → restaurant, restaurant → organization, learnt from answers
    owner: HashMap<String, String>,
    /// organizations created here → the auth of their creator
    org_creator: HashMap<String, String>,
    cursors: HashMap<String, Issued>,
    fake_cursors: HashSet<String>,
    prefetched: HashMap<Slot, Value>,
    keyed: HashMap<Slot, Keyed>,
    /// refused keyed calls: their arguments and the refusal
    refused: HashMap<Slot, (Map<String, Value>, Value)>,
    key_tool: HashMap<(String, String), String>,
    key_user: HashMap<(String, String, String), String>,
    windows: HashMap<(String, String), (Instant, u32)>,
    blocked: HashMap<String, Instant>,
    writes: Vec<(String, String, Instant, u64)>,
    seen_access: HashMap<(String, String), Instant>,
    serial: u64,
}

struct Proxy {
    fault: Fault,
    upstream: String,
    http: reqwest::Client,
    data: Dataset,
    memory: Mutex<Memory>,
    control_secret: Option<String>,
}

fn lock(m: &Mutex<Memory>) -> std::sync::MutexGuard<'_, Memory> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--list") {
        for (_, name, clause, level, what) in CATALOGUE {
            println!("{name}\t{clause}\t{}\t{what}", if *level == Level::Seed { "seed" } else { "full" });
        }
        for (clause, why) in NOT_EXPRESSIBLE {
            eprintln!("not expressible through a proxy: {clause} ({why})");
        }
        return Ok(());
    }
    let [listen, upstream, name] = args.as_slice() else {
        eprintln!("usage: fault_proxy LISTEN UPSTREAM FAULT   |   fault_proxy --list");
        std::process::exit(2);
    };
    let Some(&(fault, ..)) = CATALOGUE.iter().find(|(_, n, ..)| *n == name.as_str()) else {
        eprintln!("fault_proxy: unknown fault {name} (see --list)");
        std::process::exit(2);
    };
    let dataset = std::env::var("FAULT_DATASET").unwrap_or_else(|_| "fixtures/dataset.json".into());
    let proxy = Arc::new(Proxy {
        fault,
        upstream: format!("http://{upstream}"),
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(std::io::Error::other)?,
        data: Dataset::load(&dataset),
        memory: Mutex::default(),
        control_secret: std::env::var("FAULT_CONTROL_SECRET").ok(),
    });
    let listener = tokio::net::TcpListener::bind(listen).await?;
    eprintln!("fault_proxy: {listen} → {upstream}, fault {fault:?}");
    let app = Router::new().fallback(handle).with_state(proxy);
    axum::serve(listener, app).await
}

async fn handle(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    // No limit here: the server's own 1 MiB limit is what LIM-7 is about.
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let rpc = (parts.method == Method::POST)
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten()
        .filter(Value::is_object);
    let mut call = Call { method: parts.method, uri: parts.uri, headers: parts.headers, body, rpc };
    if let Some(answer) = proxy.before(&mut call).await {
        return answer.into_response();
    }
    let mut answer = proxy.forward(&call).await;
    proxy.learn(&call, &answer).await;
    proxy.after(&call, &mut answer).await;
    answer.into_response()
}

impl Proxy {
    async fn forward(&self, call: &Call) -> Answer {
        let path = call.uri.path_and_query().map_or("/", |p| p.as_str());
        let mut headers = call.headers.clone();
        headers.remove(header::CONTENT_LENGTH);
        let names: Vec<_> = headers.keys().filter(|n| hop_by_hop(n.as_str())).cloned().collect();
        for n in names {
            headers.remove(n);
        }
        let request = self
            .http
            .request(call.method.clone(), format!("{}{path}", self.upstream))
            .headers(headers)
            .body(call.body.clone());
        match request.send().await {
            Ok(response) => {
                let status = response.status();
                let headers = response.headers().clone();
                let body = response.bytes().await.unwrap_or_default();
                Answer::new(status, headers, body)
            }
            Err(e) => Answer::plain(StatusCode::BAD_GATEWAY, &format!("fault_proxy: upstream: {e}")),
        }
    }

    /// Who owns `id` (a restaurant for children, an organization for restaurants).
    fn owner(&self, id: &str) -> Option<String> {
        if let Some(o) = lock(&self.memory).owner.get(id) {
            return Some(o.clone());
        }
        self.data.child_restaurant.get(id).or_else(|| self.data.restaurant_org.get(id)).cloned()
    }

    fn exists(&self, id: &str) -> bool {
        self.owner(id).is_some()
            || self.data.orgs.contains(id)
            || lock(&self.memory).org_creator.contains_key(id)
    }

    /// An auth header that has access to `org`: its dataset owner, or whoever created it here.
    fn auth_for_org(&self, org: &str) -> Option<String> {
        if let Some(a) = lock(&self.memory).org_creator.get(org) {
            return Some(a.clone());
        }
        self.data.owner_of_org(org).map(token_header)
    }

    async fn server_now_ms(&self) -> Option<u64> {
        let secret = self.control_secret.as_ref()?;
        let response = self
            .http
            .get(format!("{}/control/clock", self.upstream))
            .header("x-control-secret", secret)
            .send()
            .await
            .ok()?;
        response.json::<Value>().await.ok()?.get("now_ms")?.as_u64()
    }

    async fn current_status(&self, call: &Call) -> Option<String> {
        let tool = call.tool()?;
        let rst = call.arg("restaurant_id")?;
        let (read, args, key) = match tool {
            "update_order_status" => {
                ("get_order", json!({ "restaurant_id": rst, "order_id": call.arg("order_id")? }), "order")
            }
            "set_restaurant_status" => ("get_restaurant", json!({ "restaurant_id": rst }), "restaurant"),
            _ => return None,
        };
        let a = self.forward(&tool_call(call, read, args)).await;
        a.result()?.get("structuredContent")?.get("data")?.get(key)?.get("status")?.as_str().map(String::from)
    }

    /// Bookkeeping on every forwarded answer: owners, cursors issued, keyed results.
    async fn learn(&self, call: &Call, a: &Answer) {
        let Some(tool) = call.tool() else { return };
        if !a.is_success() {
            return;
        }
        let data = &a.result().map(|r| r["structuredContent"]["data"].clone()).unwrap_or_default();
        let server_ms = if self.fault == Fault::Idem6ForgottenAfter1h && is_keyed(tool) && !a.flag("replayed")
        {
            self.server_now_ms().await
        } else {
            None
        };
        let mut m = lock(&self.memory);
        learn_owners(data, &mut m.owner);
        if tool == "create_organization"
            && let Some(org) = data["organization"]["id"].as_str()
        {
            m.org_creator.insert(org.to_owned(), call.auth());
        }
        if let Some(cursor) = a.next_cursor() {
            let issued = Issued {
                tool: tool.to_owned(),
                filters: call.filters(),
                limit: call.page_limit(),
                auth: call.auth(),
            };
            m.cursors.insert(cursor, issued);
        }
        if let Some(r) = call.arg_str("restaurant_id").or_else(|| call.arg_str("organization_id")) {
            m.seen_access.insert((call.auth(), r), Instant::now());
        }
        if is_keyed(tool)
            && !a.flag("replayed")
            && let Some(key) = call.arg_str("idempotency_key")
        {
            let keyed = Keyed {
                args: call.args(),
                raw_args: raw_arguments(&call.body),
                result: a.result().cloned().unwrap_or_default(),
                request_id: a.result().and_then(request_id).unwrap_or_default(),
                server_ms,
            };
            m.keyed.entry((call.auth(), tool.to_owned(), key)).or_insert(keyed);
        }
    }
}

fn learn_owners(v: &Value, owner: &mut HashMap<String, String>) {
    match v {
        Value::Object(o) => {
            if let Some(id) = o.get("id").and_then(Value::as_str) {
                let parent = if id.starts_with("rst_") { "organization_id" } else { "restaurant_id" };
                if let Some(p) = o.get(parent).and_then(Value::as_str) {
                    owner.insert(id.to_owned(), p.to_owned());
                }
            }
            o.values().for_each(|x| learn_owners(x, owner));
        }
        Value::Array(a) => a.iter().for_each(|x| learn_owners(x, owner)),
        _ => {}
    }
}

/// The text of `params.arguments` as sent (key order kept, unlike a parsed map).
fn raw_arguments(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Outer<'a> {
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        arguments: Option<&'a serde_json::value::RawValue>,
    }
    serde_json::from_slice::<Outer>(body)
        .ok()
        .and_then(|o| o.params)
        .and_then(|p| p.arguments)
        .map(|r| r.get().to_owned())
        .unwrap_or_default()
}

/// A tools/call of `tool` with `args`, sent with `call`'s headers.
fn tool_call(call: &Call, tool: &str, args: Value) -> Call {
    let mut c = call.clone();
    let rpc = json!({ "jsonrpc": "2.0", "id": format!("fault-{}", random_alnum(8)), "method": "tools/call",
        "params": { "name": tool, "arguments": args } });
    c.body = Bytes::from(serde_json::to_vec(&rpc).unwrap_or_default());
    c.rpc = Some(rpc);
    c
}

/// An answer made upstream for another JSON-RPC id, given back as the answer to `call`.
fn answer_as(call: &Call, mut a: Answer) -> Answer {
    if let Some(j) = a.json.as_mut() {
        j["id"] = call.rpc_id();
        a.changed = true;
    }
    a
}

fn walk_mut(v: &mut Value, f: &mut impl FnMut(&str, &mut Value)) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                f(k, x);
                walk_mut(x, f);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| walk_mut(x, f)),
        _ => {}
    }
}

fn offset_cursor(offset: usize) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("offset={offset}"))
}

fn parse_offset_cursor(cursor: &str) -> Option<usize> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(cursor).ok()?;
    String::from_utf8(bytes).ok()?.strip_prefix("offset=")?.parse().ok()
}

const STRING_ARG_CAP: usize = 200;

impl Proxy {
    /// Request-side rewrites; `Some` answers without asking the server (or after asking it
    /// something else).
    async fn before(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let method = call.rpc_method().map(String::from);
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let persona = self.data.persona(&call.token()).cloned();
        match self.fault {
            Proto1OldProtocolOnly => {
                if method.as_deref() == Some("server/discover") {
                    return Some(Answer::rpc(
                        call,
                        "error",
                        json!({ "code": -32601, "message": "Method not found" }),
                    ));
                }
                // The old version it negotiates is then sent back: the transport still works.
                if call.headers.get("mcp-protocol-version").is_some_and(|v| v == "2025-03-26") {
                    call.headers.insert("mcp-protocol-version", HeaderValue::from_static("2025-06-18"));
                }
            }
            Proto1NoDiscover if method.as_deref() == Some("server/discover") => {
                return Some(Answer::rpc(
                    call,
                    "error",
                    json!({ "code": -32601, "message": "Method not found" }),
                ));
            }
            Proto5OriginStripped => {
                call.headers.remove(header::ORIGIN);
            }
            Proto5OriginPrefix => {
                let origin =
                    call.headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()).unwrap_or_default();
                let host = origin.split_once("://").map_or("", |(_, h)| h);
                if ["localhost", "127.0.0.1"].iter().any(|p| host.starts_with(p)) {
                    call.headers.insert(header::ORIGIN, HeaderValue::from_static("http://localhost"));
                }
            }
            Proto5HostRewritten => {
                let host = self.upstream.trim_start_matches("http://").to_owned();
                if let Ok(v) = HeaderValue::from_str(&host) {
                    call.headers.insert(header::HOST, v);
                }
            }
            Pag1Default10 if list_key(t).is_some() && !call.has_arg("limit") => {
                call.set_args(|a| {
                    a.insert("limit".into(), json!(10));
                });
            }
            Pag1Default50ExceptOrders
                if list_key(t).is_some() && t != "list_orders" && !call.has_arg("limit") =>
            {
                call.set_args(|a| {
                    a.insert("limit".into(), json!(50));
                });
            }
            Pag2Clamp if call.arg("limit").and_then(|l| l.as_f64()).is_some_and(|l| l > 50.0) => {
                call.set_args(|a| {
                    a.insert("limit".into(), json!(50));
                });
            }
            Pag2ZeroAsDefault if call.arg("limit").and_then(|l| l.as_f64()).is_some_and(|l| l <= 0.0) => {
                call.set_args(|a| {
                    a.remove("limit");
                });
            }
            Pag3CursorWhenFull => {
                let cursor = call.arg_str("cursor").unwrap_or_default();
                if let Some(key) = list_key(t)
                    && lock(&self.memory).fake_cursors.contains(&cursor)
                {
                    let result = success_result(json!({ key: [] }), fresh_meta(), &format!("0 {key}"));
                    return Some(Answer::rpc(call, "result", result));
                }
            }
            Pag4OffsetCursor => {
                if let Some(key) = list_key(t)
                    && let Some(offset) = call.arg_str("cursor").as_deref().and_then(parse_offset_cursor)
                {
                    return Some(self.offset_page(call, key, offset).await);
                }
            }
            Pag5EmptyCursorFirstPage if call.arg_str("cursor").as_deref() == Some("") => {
                call.set_args(|a| {
                    a.remove("cursor");
                });
            }
            Pag5PrefixAccepted => {
                if let Some(c) = call.arg_str("cursor").filter(|c| !c.is_empty()) {
                    let m = lock(&self.memory);
                    if !m.cursors.contains_key(&c) {
                        let near = m.cursors.keys().find(|k| {
                            (k.starts_with(&c) && c.len() * 2 >= k.len()) || (c.starts_with(k.as_str()))
                        });
                        if let Some(k) = near.cloned() {
                            drop(m);
                            call.set_args(|a| {
                                a.insert("cursor".into(), json!(k));
                            });
                        }
                    }
                }
            }
            Pag6FiltersUnbound | Pag6ClientUnbound | Pag6LimitChangeRefused => {
                let c = call.arg_str("cursor")?;
                let (filters, limit, auth) = {
                    let m = lock(&self.memory);
                    let issued = m.cursors.get(&c).filter(|i| i.tool == t)?;
                    (issued.filters.clone(), issued.limit.clone(), issued.auth.clone())
                };
                match self.fault {
                    Pag6FiltersUnbound if call.filters() != filters => call.set_args(|a| {
                        a.retain(|k, _| matches!(k.as_str(), "cursor" | "limit" | "message_limit"));
                        a.extend(filters);
                    }),
                    Pag6ClientUnbound if call.auth() != auth => call.set_auth(&auth),
                    Pag6LimitChangeRefused if call.page_limit() != limit => {
                        return Some(Answer::rpc(
                            call,
                            "result",
                            error_result(ErrorCode::CursorInvalid, &new_request_id()),
                        ));
                    }
                    _ => {}
                }
            }
            Pag7PrefetchedPages => {
                if let Some(c) = call.arg_str("cursor") {
                    let cached = lock(&self.memory).prefetched.remove(&(call.auth(), t.to_owned(), c));
                    if let Some(json) = cached {
                        let a = Answer::rpc(call, "result", json["result"].clone());
                        self.prefetch(call, &a).await;
                        return Some(a);
                    }
                }
            }
            Pag8NoMessageCap
                if t == "get_conversation" && !call.has_arg("message_limit") && !call.has_arg("cursor") =>
            {
                return Some(self.all_messages(call).await);
            }
            Pag8Clamp101 if call.arg("message_limit").and_then(|l| l.as_f64()).is_some_and(|l| l > 100.0) => {
                call.set_args(|a| {
                    a.insert("message_limit".into(), json!(100));
                });
            }
            Lim1RangeClamped | Lim1NineMetricsCut | Lim1ReversedSwapped if t == "get_analytics" => {
                let from = call.arg_str("from").as_deref().and_then(chataigne_contract::time::parse_date);
                let to = call.arg_str("to").as_deref().and_then(chataigne_contract::time::parse_date);
                match (self.fault, from, to) {
                    (Lim1RangeClamped, Some(f), Some(to)) if to - f + 1 > 366 => call.set_args(|a| {
                        a.insert("from".into(), json!(chataigne_contract::time::format_date(to - 365)));
                    }),
                    (Lim1ReversedSwapped, Some(f), Some(to)) if to < f => call.set_args(|a| {
                        let (x, y) = (a.remove("from"), a.remove("to"));
                        a.insert("from".into(), y.unwrap_or_default());
                        a.insert("to".into(), x.unwrap_or_default());
                    }),
                    (Lim1NineMetricsCut, ..) => call.set_args(|a| {
                        if let Some(m) = a.get_mut("metrics").and_then(Value::as_array_mut) {
                            m.truncate(8);
                        }
                    }),
                    _ => {}
                }
            }
            Lim2ReadLimit900 if matches!(kind(t), Some(Kind::Read | Kind::Analytics)) => {
                return self.count(call, t, 900);
            }
            Lim3SharedAcrossTools if kind(t).is_some() => return self.count(call, "*", 1000),
            Lim3GlobalPerTool => {
                let until = lock(&self.memory).blocked.get(t).copied();
                if until.is_some_and(|u| u > Instant::now()) {
                    return Some(Answer::rpc(
                        call,
                        "result",
                        error_result(ErrorCode::RateLimited, &new_request_id()),
                    ));
                }
            }
            Pre1ExpectedOptional | Pre2Ignored
                if matches!(t, "update_order_status" | "set_restaurant_status")
                    && (self.fault == Pre2Ignored) == call.has_arg("expected_status") =>
            {
                if let Some(current) = self.current_status(call).await {
                    call.set_args(|a| {
                        a.insert("expected_status".into(), json!(current));
                    });
                }
            }
            Pre4LastWriterWins | Pre4LoserInternal if t == "update_order_status" => {
                let mut m = lock(&self.memory);
                m.serial += 1;
                let entry = (
                    call.arg_str("order_id").unwrap_or_default(),
                    call.arg_str("expected_status").unwrap_or_default(),
                    Instant::now(),
                    m.serial,
                );
                m.writes.retain(|w| w.2.elapsed() < Duration::from_secs(10));
                m.writes.push(entry);
                let serial = m.serial;
                drop(m);
                // The serial rides along in a header the server ignores, so `after` knows which
                // write this was.
                call.headers.insert("x-fault-serial", HeaderValue::from(serial));
            }
            Idem1KeyInvented if is_keyed(t) && !call.has_arg("idempotency_key") => {
                call.set_args(|a| {
                    a.insert("idempotency_key".into(), json!(format!("auto-{}", random_alnum(24))));
                });
            }
            Idem1SevenChars
                if is_keyed(t) && call.arg_str("idempotency_key").is_some_and(|k| k.chars().count() == 7) =>
            {
                call.set_args(|a| {
                    if let Some(k) = a.get("idempotency_key").and_then(Value::as_str) {
                        let padded = format!("{k}0");
                        a.insert("idempotency_key".into(), json!(padded));
                    }
                });
            }
            Idem2KeyOrderSensitive | Idem6CachedForever | Idem7RefusalsStored if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let slot = (call.auth(), t.to_owned(), key);
                let m = lock(&self.memory);
                match self.fault {
                    Idem2KeyOrderSensitive => {
                        let k = m.keyed.get(&slot)?;
                        if k.args == call.args() && k.raw_args != raw_arguments(&call.body) {
                            drop(m);
                            let e = error_result(ErrorCode::IdempotencyMismatch, &new_request_id());
                            return Some(Answer::rpc(call, "result", e));
                        }
                    }
                    Idem6CachedForever => {
                        let k = m.keyed.get(&slot).filter(|k| k.args == call.args())?;
                        let mut a = Answer::rpc(call, "result", k.result.clone());
                        drop(m);
                        a.set_request_id(&new_request_id());
                        if let Some(meta) = a.meta_mut() {
                            meta.insert("replayed".into(), json!(true));
                        }
                        return Some(a);
                    }
                    _ => {
                        let (args, result) = m.refused.get(&slot)?;
                        if *args == call.args() {
                            let mut a = Answer::rpc(call, "result", result.clone());
                            drop(m);
                            a.set_request_id(&new_request_id());
                            return Some(a);
                        }
                    }
                }
            }
            Idem5SharedAcrossClients if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let user = persona.as_ref()?.user.clone();
                let mut m = lock(&self.memory);
                let first =
                    m.key_user.entry((user, t.to_owned(), key)).or_insert_with(|| call.auth()).clone();
                drop(m);
                if first != call.auth() {
                    call.set_auth(&first);
                }
            }
            Idem5SharedAcrossTools if is_keyed(t) => {
                let key = call.arg_str("idempotency_key")?;
                let mut m = lock(&self.memory);
                let first = m.key_tool.entry((call.auth(), key)).or_insert_with(|| t.to_owned()).clone();
                drop(m);
                if first != t {
                    return Some(Answer::rpc(
                        call,
                        "result",
                        error_result(ErrorCode::IdempotencyMismatch, &new_request_id()),
                    ));
                }
            }
            Auth2AudienceUnchecked => {
                let p = persona.filter(|p| p.audience.is_some())?;
                let s = self.data.sibling(&p, None)?;
                call.set_auth(&token_header(s));
            }
            Auth3ReadsUnscoped if matches!(kind(t), Some(Kind::Read | Kind::Analytics)) => {
                let scope = ToolName::parse(t)?.scope();
                let p = persona.filter(|p| !p.scopes.iter().any(|s| s == scope))?;
                let s = self.data.sibling(&p, Some(scope))?;
                call.set_auth(&token_header(s));
            }
            Auth6ViewerWrites if kind(t).is_some_and(Kind::is_write) => {
                let p = persona?;
                let m = self
                    .data
                    .memberships
                    .iter()
                    .find(|m| m.user == p.user && m.role == "viewer" && !m.revoked)?;
                let owner = self.data.owner_of_org(&m.org)?;
                call.set_auth(&token_header(owner));
            }
            Auth7RevokedIgnored => {
                let p = persona?;
                let revoked = self.data.memberships.iter().find(|m| m.user == p.user && m.revoked)?;
                let other = self.data.memberships.iter().find(|m| {
                    m.org == revoked.org && m.role == revoked.role && !m.revoked && m.user != p.user
                })?;
                let stand_in = self.data.personas.iter().find(|q| {
                    q.user == other.user && q.client == p.client && q.scopes.len() >= p.scopes.len()
                })?;
                call.set_auth(&token_header(stand_in));
            }
            Auth8ScopeBeforeSchema if kind(t).is_some() => {
                let scope = ToolName::parse(t)?.scope();
                let p = persona?;
                if !p.scopes.iter().any(|s| s == scope) {
                    let mut e = error_result(ErrorCode::ScopeRequired, &new_request_id());
                    e["structuredContent"]["data"]["error"]["required_scope"] = json!(scope);
                    return Some(Answer::rpc(call, "result", e));
                }
            }
            Auth8PreconditionBeforeRole if matches!(t, "update_order_status" | "set_restaurant_status") => {
                let expected = call.arg_str("expected_status")?;
                let current = self.current_status(call).await?;
                if current != expected {
                    let e = error_result(ErrorCode::ExpectedStateMismatch, &new_request_id());
                    return Some(Answer::rpc(call, "result", e));
                }
            }
            Abs2CancelAcked
                if t == "update_order_status"
                    && matches!(call.arg_str("status").as_deref(), Some("cancelled" | "rejected")) =>
            {
                let args =
                    json!({ "restaurant_id": call.arg("restaurant_id")?, "order_id": call.arg("order_id")? });
                let read = self.forward(&tool_call(call, "get_order", args)).await;
                let mut order = read.result()?.get("structuredContent")?.get("data")?.get("order")?.clone();
                order["status"] = call.arg("status")?;
                let summary =
                    format!("Order {}: {}", order["id"].as_str().unwrap_or_default(), order["status"]);
                let result = success_result(json!({ "order": order }), fresh_meta(), &summary);
                return Some(Answer::rpc(call, "result", result));
            }
            _ => {}
        }
        None
    }

    /// One rate window per (auth, bucket) opened by its first call: the wrong limit or the wrong
    /// bucket (LIM-2, LIM-3).
    fn count(&self, call: &Call, bucket: &str, limit: u32) -> Option<Answer> {
        let mut m = lock(&self.memory);
        let w = m.windows.entry((call.auth(), bucket.to_owned())).or_insert((Instant::now(), 0));
        if w.0.elapsed() >= Duration::from_secs(60) {
            *w = (Instant::now(), 0);
        }
        w.1 += 1;
        if w.1 <= limit {
            return None;
        }
        let left = Duration::from_secs(60).saturating_sub(w.0.elapsed()).as_millis().max(1) as u64;
        drop(m);
        let mut e = error_result(ErrorCode::RateLimited, &new_request_id());
        e["structuredContent"]["data"]["error"]["retry_after_ms"] = json!(left);
        Some(Answer::rpc(call, "result", e))
    }

    /// PAG-4 as an offset server would: walk from the start and cut at the offset.
    async fn offset_page(&self, call: &Call, key: &str, offset: usize) -> Answer {
        let limit = call.arg("limit").and_then(|l| l.as_u64()).unwrap_or(20) as usize;
        let mut items: Vec<Value> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = call.with_args(|a| {
                a.remove("cursor");
                a.insert("limit".into(), json!(50));
                if let Some(c) = &cursor {
                    a.insert("cursor".into(), json!(c));
                }
            });
            let a = self.forward(&page).await;
            if !a.is_success() {
                return answer_as(call, a);
            }
            items.extend(a.items(call.tool().unwrap_or_default()).cloned().unwrap_or_default());
            cursor = a.next_cursor();
            if cursor.is_none() || items.len() > offset + limit {
                break;
            }
        }
        let more = items.len() > offset + limit;
        let page: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
        let mut meta = fresh_meta();
        if more {
            meta.insert("next_cursor".into(), json!(offset_cursor(offset + limit)));
        }
        let summary = format!("{} {key}", page.len());
        Answer::rpc(call, "result", success_result(json!({ key: page }), meta, &summary))
    }

    /// PAG-8 without a cap: every message of the conversation in one answer.
    async fn all_messages(&self, call: &Call) -> Answer {
        let mut first: Option<Answer> = None;
        let mut messages = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = call.with_args(|a| {
                a.insert("message_limit".into(), json!(100));
                if let Some(c) = &cursor {
                    a.insert("cursor".into(), json!(c));
                }
            });
            let a = self.forward(&page).await;
            if !a.is_success() {
                return first.unwrap_or(a);
            }
            messages.extend(a.items("get_conversation").cloned().unwrap_or_default());
            cursor = a.next_cursor();
            if first.is_none() {
                first = Some(a);
            }
            if cursor.is_none() {
                break;
            }
        }
        let mut a = first.expect("one page at least");
        if let Some(items) = a.items_mut("get_conversation") {
            *items = messages;
        }
        if let Some(meta) = a.meta_mut() {
            meta.remove("next_cursor");
        }
        a
    }

    async fn prefetch(&self, call: &Call, a: &Answer) {
        let Some(tool) = call.tool() else { return };
        let Some(cursor) = a.next_cursor() else { return };
        if items_key(tool).is_none() {
            return;
        }
        let next = call.with_args(|x| {
            x.insert("cursor".into(), json!(cursor));
        });
        let b = self.forward(&next).await;
        if b.is_success() {
            self.learn(&next, &b).await;
            if let Some(json) = b.json {
                lock(&self.memory).prefetched.insert((call.auth(), tool.to_owned(), cursor), json);
            }
        }
    }

    /// Was `call` (an update_order_status refused as a conflict) one side of a race: another
    /// write of the same order from the same observed state, a moment ago?
    fn raced(&self, call: &Call) -> bool {
        let serial: u64 = call
            .headers
            .get("x-fault-serial")
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let order = call.arg_str("order_id").unwrap_or_default();
        let expected = call.arg_str("expected_status").unwrap_or_default();
        lock(&self.memory).writes.iter().any(|w| {
            w.0 == order && w.1 == expected && w.3 != serial && w.2.elapsed() < Duration::from_secs(3)
        })
    }

    /// Answer-side rewrites.
    async fn after(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let method = call.rpc_method().map(String::from);
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        let persona = self.data.persona(&call.token()).cloned();
        if method.as_deref() == Some("tools/list") {
            self.rewrite_tools_list(a);
        }
        match self.fault {
            Proto1OldProtocolOnly if method.as_deref() == Some("initialize") => {
                if let Some(r) = a.result_mut() {
                    r["protocolVersion"] = json!("2025-03-26");
                }
            }
            Proto2UnknownToolResult
                if method.as_deref() == Some("tools/call")
                    && a.rpc_error_code() == Some(-32602)
                    && ToolName::parse(t).is_none() =>
            {
                let result =
                    json!({ "content": [{ "type": "text", "text": "Unknown tool" }], "isError": true });
                *a = Answer::rpc(call, "result", result);
            }
            Proto2ParseError500 if a.rpc_error_code() == Some(-32700) => {
                a.status = StatusCode::INTERNAL_SERVER_ERROR
            }
            Proto2UnknownMethodEmpty if a.rpc_error_code() == Some(-32601) => {
                *a = Answer::rpc(call, "result", json!({}));
            }
            Proto4CreatedAtEpoch if success => {
                if let Some(r) = a.result_mut() {
                    walk_mut(&mut r["structuredContent"]["data"], &mut |k, v| {
                        if k == "created_at"
                            && let Some(secs) = v.as_str().and_then(chataigne_contract::time::parse_timestamp)
                        {
                            *v = json!(secs);
                        }
                    });
                }
            }
            Proto4NullNextCursor if success && a.next_cursor().is_none() => {
                if let Some(meta) = a.meta_mut() {
                    meta.insert("next_cursor".into(), Value::Null);
                }
            }
            Env1EmptyText if success => {
                if let Some(r) = a.result_mut() {
                    r["content"] = json!([{ "type": "text", "text": "" }]);
                }
            }
            Env1ReplayedOmitted if success && !a.flag("replayed") => {
                if let Some(meta) = a.meta_mut() {
                    meta.remove("replayed");
                }
            }
            Env2UuidRequestId => {
                let u = format!("{}-{}-4{}-a{}-{}", hex(8), hex(4), hex(3), hex(3), hex(12));
                if a.result().and_then(request_id).is_some() {
                    a.set_request_id(&u);
                } else if a.headers.contains_key("x-request-id") {
                    a.set_header_id(&u);
                }
            }
            Env2GatewayHeader => a.set_header_id(&new_request_id()),
            Env2ReplayKeepsId if success && a.flag("replayed") => {
                let key = call.arg_str("idempotency_key").unwrap_or_default();
                let first = lock(&self.memory)
                    .keyed
                    .get(&(call.auth(), t.to_owned(), key))
                    .map(|k| k.request_id.clone());
                if let Some(rid) = first {
                    a.set_request_id(&rid);
                }
            }
            Env3TextIsJson if success => {
                let pretty = a
                    .result()
                    .map(|r| serde_json::to_string_pretty(&r["structuredContent"]).unwrap_or_default());
                if let (Some(text), Some(p)) = (a.text_mut(), pretty) {
                    *text = json!(p);
                }
            }
            Env3SummaryListsItems if success => {
                let lines: Vec<String> = a.items(t).into_iter().flatten().map(|i| i.to_string()).collect();
                if let Some(text) = a.text_mut()
                    && !lines.is_empty()
                {
                    *text = json!(format!("{}\n{}", text.as_str().unwrap_or_default(), lines.join("\n")));
                }
            }
            Env4IsErrorFalse if code.is_some() => {
                if let Some(r) = a.result_mut() {
                    r["isError"] = json!(false);
                }
            }
            Env4ErrorTopLevel if code.is_some() => {
                if let Some(r) = a.result_mut() {
                    let sc = &mut r["structuredContent"];
                    let error = sc["data"]["error"].take();
                    *sc = json!({ "error": error, "meta": sc["meta"].take() });
                }
            }
            Env4NoMeta if code.is_some() => {
                if let Some(r) = a.result_mut()
                    && let Some(sc) = r["structuredContent"].as_object_mut()
                {
                    sc.remove("meta");
                }
            }
            Env5ForbiddenAuthentication
                if matches!(code, Some(ErrorCode::ResourceForbidden | ErrorCode::ScopeRequired)) =>
            {
                set_error(a, "category", json!(Category::Authentication.as_str()));
            }
            Env5OutcomeUnknownRetryable if code == Some(ErrorCode::OutcomeUnknown) => {
                set_error(a, "retryable", json!(true))
            }
            Env5RateLimitedNotRetryable if code == Some(ErrorCode::RateLimited) => {
                set_error(a, "retryable", json!(false))
            }
            Env6NotFoundNamesId if code == Some(ErrorCode::ResourceNotFound) => {
                let id = ["order_id", "conversation_id", "transcript_id", "instruction_id"]
                    .iter()
                    .find_map(|k| call.arg_str(k));
                if let Some(id) = id {
                    append_message(a, &format!(" ({id})"));
                }
            }
            Env6ValidationEchoesValue if code == Some(ErrorCode::InvalidArguments) => {
                let longest =
                    call.args().values().filter_map(|v| v.as_str().map(String::from)).max_by_key(String::len);
                if let Some(v) = longest {
                    let v: String = v.chars().take(STRING_ARG_CAP).collect();
                    append_message(a, &format!(": got \"{v}\""));
                }
            }
            Env6EchoInSummary if code.is_some() => {
                let strings: Vec<String> =
                    call.args().values().filter_map(|v| v.as_str().map(String::from)).collect();
                let joined: String = strings.join(", ").chars().take(1000).collect();
                if let Some(text) = a.text_mut() {
                    *text = json!(format!("{} (arguments: {joined})", text.as_str().unwrap_or_default()));
                }
            }
            Env6ConflictEchoesStatus
                if matches!(
                    code,
                    Some(ErrorCode::ExpectedStateMismatch | ErrorCode::OrderStatusPreconditionFailed)
                ) =>
            {
                if let Some(expected) = call.arg_str("expected_status") {
                    set_error(
                        a,
                        "message",
                        json!(format!("The status is not {expected} any more; reload it")),
                    );
                }
            }
            Env7RestaurantAsItem if success => {
                if let Some(r) = a.result_mut()
                    && let Some(data) = r["structuredContent"]["data"].as_object_mut()
                    && let Some(x) = data.remove("restaurant")
                {
                    data.insert("item".into(), x);
                }
            }
            Env7MessagesInConversation if success && t == "get_conversation" => {
                if let Some(r) = a.result_mut() {
                    let data = &mut r["structuredContent"]["data"];
                    let messages = data["messages"].take();
                    if let Some(d) = data.as_object_mut() {
                        d.remove("messages");
                    }
                    data["conversation"]["messages"] = messages;
                }
            }
            Pag3CursorWhenFull if success && a.next_cursor().is_none() => {
                let limit = call.arg("limit").and_then(|l| l.as_u64()).unwrap_or(20) as usize;
                if list_key(t).is_some() && a.items(t).is_some_and(|i| i.len() == limit) {
                    let fake = format!("{}{}", random_alnum(40), "Zz");
                    lock(&self.memory).fake_cursors.insert(fake.clone());
                    if let Some(meta) = a.meta_mut() {
                        meta.insert("next_cursor".into(), json!(fake));
                    }
                }
            }
            Pag3EmptyStringCursor if success && items_key(t).is_some() && a.next_cursor().is_none() => {
                if let Some(meta) = a.meta_mut() {
                    meta.insert("next_cursor".into(), json!(""));
                }
            }
            Pag4SkipFirstOnNext if success && call.has_arg("cursor") => {
                if let Some(items) = a.items_mut(t)
                    && !items.is_empty()
                {
                    items.remove(0);
                }
            }
            Pag4OffsetCursor if success && list_key(t).is_some() => {
                let n = a.items(t).map_or(0, Vec::len);
                if a.next_cursor().is_some()
                    && let Some(meta) = a.meta_mut()
                {
                    meta.insert("next_cursor".into(), json!(offset_cursor(n)));
                }
            }
            Pag4TieOrderAsc if success && t == "list_orders" => {
                if let Some(items) = a.items_mut(t) {
                    // Stable: only orders of the same second change places.
                    let mut i = 0;
                    while i < items.len() {
                        let mut j = i + 1;
                        while j < items.len() && items[j]["created_at"] == items[i]["created_at"] {
                            j += 1;
                        }
                        items[i..j].sort_by(|x, y| x["id"].as_str().cmp(&y["id"].as_str()));
                        i = j;
                    }
                }
            }
            Pag5InvalidCursorRestarts if code == Some(ErrorCode::CursorInvalid) && call.has_arg("cursor") => {
                let again = call.with_args(|x| {
                    x.remove("cursor");
                });
                *a = self.forward(&again).await;
            }
            Pag7PrefetchedPages if success => self.prefetch(call, a).await,
            Pag7ForbiddenAsCursorInvalid
                if code == Some(ErrorCode::ResourceForbidden) && call.has_arg("cursor") =>
            {
                a.recode(ErrorCode::CursorInvalid);
            }
            Lim2NoRetryAfter if code == Some(ErrorCode::RateLimited) => remove_error(a, "retry_after_ms"),
            Lim3GlobalPerTool if code == Some(ErrorCode::RateLimited) => {
                lock(&self.memory).blocked.insert(t.to_owned(), Instant::now() + Duration::from_secs(60));
            }
            Lim4TimeoutAsInternal if code == Some(ErrorCode::ToolTimeout) => {
                a.recode(ErrorCode::InternalError)
            }
            Lim4OutcomeAsTimeout if code == Some(ErrorCode::OutcomeUnknown) => {
                a.recode(ErrorCode::ToolTimeout)
            }
            Lim5TruncatedFlagMissing if success && a.flag("truncated") => {
                if let Some(meta) = a.meta_mut() {
                    meta.insert("truncated".into(), json!(false));
                }
            }
            Lim5CursorSkipsCut if success && a.flag("truncated") => {
                let limit = call.arg("limit").and_then(|l| l.as_u64()).unwrap_or(20) as usize;
                let n = a.items(t).map_or(0, Vec::len);
                if let Some(cursor) = a.next_cursor()
                    && limit > n
                {
                    let skip = call.with_args(|x| {
                        x.insert("cursor".into(), json!(cursor));
                        x.insert("limit".into(), json!(limit - n));
                    });
                    let b = self.forward(&skip).await;
                    if b.is_success()
                        && let Some(meta) = a.meta_mut()
                    {
                        match b.next_cursor() {
                            Some(c) => meta.insert("next_cursor".into(), json!(c)),
                            None => meta.remove("next_cursor"),
                        };
                    }
                }
            }
            Lim6TooLargeAsInternal if code == Some(ErrorCode::OutputTooLarge) => {
                a.recode(ErrorCode::InternalError)
            }
            Lim6HugeItemCut if code == Some(ErrorCode::OutputTooLarge) && t == "get_transcript" => {
                let id = call.arg_str("transcript_id").unwrap_or_default();
                if let Some(mut transcript) = self.data.transcripts.get(&id).cloned() {
                    let text = transcript["text"].as_str().unwrap_or_default();
                    let mut end = text.len().min(100_000);
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    transcript["text"] = json!(text[..end].to_owned());
                    let mut meta = fresh_meta();
                    meta.insert("truncated".into(), json!(true));
                    let result = success_result(
                        json!({ "transcript": transcript }),
                        meta,
                        &format!("Transcript {id} (cut)"),
                    );
                    *a = Answer::rpc(call, "result", result);
                }
            }
            Lim7413As400 if a.status == StatusCode::PAYLOAD_TOO_LARGE => {
                *a = Answer::rpc(call, "error", json!({ "code": -32700, "message": "Parse error" }));
                a.status = StatusCode::BAD_REQUEST;
            }
            Pre1MissingAsConflict
                if code == Some(ErrorCode::InvalidArguments)
                    && matches!(t, "update_order_status" | "set_restaurant_status")
                    && !call.has_arg("expected_status") =>
            {
                a.recode(ErrorCode::ExpectedStateMismatch);
            }
            Pre2RefusedButApplied
                if matches!(
                    code,
                    Some(ErrorCode::ExpectedStateMismatch | ErrorCode::OrderStatusPreconditionFailed)
                ) =>
            {
                if let Some(current) = self.current_status(call).await {
                    let forced = call.with_args(|x| {
                        x.insert("expected_status".into(), json!(current));
                    });
                    let _ = self.forward(&forced).await;
                }
            }
            Pre3ForbiddenAcked | Pre3AsMismatch
                if code == Some(ErrorCode::OrderStatusPreconditionFailed) && t == "update_order_status" =>
            {
                let current = self.current_status(call).await;
                if current.is_some() && current == call.arg_str("expected_status") {
                    if self.fault == Pre3AsMismatch {
                        a.recode(ErrorCode::ExpectedStateMismatch);
                    } else if let Some(ok) = self.acknowledge(call).await {
                        *a = ok;
                    }
                }
            }
            Pre4LastWriterWins | Pre4LoserInternal
                if t == "update_order_status"
                    && matches!(
                        code,
                        Some(ErrorCode::ExpectedStateMismatch | ErrorCode::OrderStatusPreconditionFailed)
                    )
                    && self.raced(call) =>
            {
                if self.fault == Pre4LoserInternal {
                    a.recode(ErrorCode::InternalError);
                } else if let Some(ok) = self.acknowledge(call).await {
                    *a = ok;
                }
            }
            Idem2ReplayedFalse if success && a.flag("replayed") => {
                if let Some(meta) = a.meta_mut() {
                    meta.insert("replayed".into(), json!(false));
                }
            }
            Idem2FreshResult | Idem6ForgottenAfter1h if success && a.flag("replayed") => {
                if self.fault == Idem6ForgottenAfter1h {
                    let key = call.arg_str("idempotency_key").unwrap_or_default();
                    let first = lock(&self.memory)
                        .keyed
                        .get(&(call.auth(), t.to_owned(), key))
                        .and_then(|k| k.server_ms);
                    let now = self.server_now_ms().await;
                    let forgotten =
                        matches!((first, now), (Some(f), Some(n)) if n.saturating_sub(f) >= 3_600_000);
                    if !forgotten {
                        return;
                    }
                }
                let again = call.with_args(|x| {
                    let key = x.get("idempotency_key").and_then(Value::as_str).unwrap_or_default();
                    let key: String = key.chars().take(240).collect();
                    x.insert("idempotency_key".into(), json!(format!("{key}~{}", random_alnum(8))));
                });
                *a = self.forward(&again).await;
            }
            Idem3MismatchReplays if code == Some(ErrorCode::IdempotencyMismatch) => {
                let key = call.arg_str("idempotency_key").unwrap_or_default();
                let first =
                    lock(&self.memory).keyed.get(&(call.auth(), t.to_owned(), key)).map(|k| k.args.clone());
                if let Some(args) = first {
                    let again = call.with_args(|x| *x = args);
                    *a = self.forward(&again).await;
                }
            }
            Idem4WaitsForFirst if code == Some(ErrorCode::OperationInProgress) => {
                let started = Instant::now();
                while started.elapsed() < Duration::from_secs(30) {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let b = self.forward(call).await;
                    if b.code() != Some(ErrorCode::OperationInProgress) {
                        *a = b;
                        break;
                    }
                }
            }
            Idem4NoRetryAfter if code == Some(ErrorCode::OperationInProgress) => {
                remove_error(a, "retry_after_ms")
            }
            Idem7RefusalsStored
                if is_keyed(t)
                    && code.is_some_and(|c| {
                        matches!(
                            c.category(),
                            Category::Validation | Category::Authorization | Category::Conflict
                        ) && c != ErrorCode::OperationInProgress
                    }) =>
            {
                if let Some(key) = call.arg_str("idempotency_key") {
                    let result = a.result().cloned().unwrap_or_default();
                    lock(&self.memory)
                        .refused
                        .entry((call.auth(), t.to_owned(), key))
                        .or_insert((call.args(), result));
                }
            }
            Idem7ReplayBeforeAuth if is_keyed(t) && code == Some(ErrorCode::ResourceForbidden) => {
                let key = call.arg_str("idempotency_key").unwrap_or_default();
                let stored = lock(&self.memory)
                    .keyed
                    .get(&(call.auth(), t.to_owned(), key))
                    .filter(|k| k.args == call.args())
                    .map(|k| k.result.clone());
                if let Some(result) = stored {
                    *a = Answer::rpc(call, "result", result);
                    a.set_request_id(&new_request_id());
                    if let Some(meta) = a.meta_mut() {
                        meta.insert("replayed".into(), json!(true));
                    }
                }
            }
            Auth1401As200 if a.status == StatusCode::UNAUTHORIZED => {
                let rid = a.headers.get("x-request-id").cloned();
                *a = Answer::rpc(
                    call,
                    "error",
                    json!({ "code": -32001, "message": "Unauthorized: a valid bearer token is required" }),
                );
                if let Some(rid) = rid {
                    a.headers.insert("x-request-id", rid);
                }
            }
            Auth1NoChallenge if a.status == StatusCode::UNAUTHORIZED => {
                a.headers.remove(header::WWW_AUTHENTICATE);
            }
            Auth1InternalMetadataUrl if a.status == StatusCode::UNAUTHORIZED => {
                let challenge =
                    a.headers.get(header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).map(String::from);
                if let Some(c) = challenge {
                    let public = self.public_base(call);
                    let internal = c.replace(&public, "http://mcp-internal.svc.cluster.local:8080");
                    if let Ok(v) = HeaderValue::from_str(&internal) {
                        a.headers.insert(header::WWW_AUTHENTICATE, v);
                    }
                }
            }
            Auth2Audience403
                if a.status == StatusCode::UNAUTHORIZED
                    && persona.as_ref().is_some_and(|p| p.audience.is_some()) =>
            {
                let rid = a.headers.get("x-request-id").cloned();
                *a = Answer::plain(StatusCode::FORBIDDEN, "Forbidden: token audience");
                if let Some(rid) = rid {
                    a.headers.insert("x-request-id", rid);
                }
            }
            Auth3ScopeAsForbidden if code == Some(ErrorCode::ScopeRequired) => {
                a.recode(ErrorCode::ResourceForbidden)
            }
            Auth3NoRequiredScope if code == Some(ErrorCode::ScopeRequired) => {
                remove_error(a, "required_scope")
            }
            Auth4AbsentNotFound | Auth4AbsentMessageDiffers if code == Some(ErrorCode::ResourceForbidden) => {
                let target = call.arg_str("restaurant_id").or_else(|| call.arg_str("organization_id"));
                if target.is_some_and(|id| !self.exists(&id)) {
                    if self.fault == Auth4AbsentNotFound {
                        a.recode(ErrorCode::ResourceNotFound);
                    } else {
                        set_error(a, "message", json!("This restaurant or organization does not exist"));
                    }
                }
            }
            Auth4ForeignOrgEmpty
                if t == "list_restaurants"
                    && call.has_arg("organization_id")
                    && code == Some(ErrorCode::ResourceForbidden) =>
            {
                *a = Answer::rpc(
                    call,
                    "result",
                    success_result(json!({ "restaurants": [] }), fresh_meta(), "0 restaurants"),
                );
            }
            Auth5SiblingLookup | Auth5ForeignLookup | Auth5WriteLookup
                if code == Some(ErrorCode::ResourceNotFound) =>
            {
                let reads = matches!(t, "get_order" | "get_conversation" | "get_transcript");
                let writes = matches!(t, "update_order_status" | "send_message");
                if ((self.fault == Auth5WriteLookup && writes) || (self.fault != Auth5WriteLookup && reads))
                    && let Some(found) = self.lookup_elsewhere(call).await
                {
                    *a = found;
                }
            }
            Auth5AbsentForbidden if code == Some(ErrorCode::ResourceNotFound) => {
                a.recode(ErrorCode::ResourceForbidden)
            }
            Auth5SearchSpansOrg
                if success
                    && matches!(t, "search_transcripts" | "list_instructions")
                    && !call.has_arg("cursor") =>
            {
                let rst = call.arg_str("restaurant_id").unwrap_or_default();
                if let Some(org) = self.owner(&rst) {
                    let siblings: Vec<String> = self
                        .data
                        .restaurant_org
                        .iter()
                        .filter(|(r, o)| **o == org && **r != rst)
                        .map(|(r, _)| r.clone())
                        .collect();
                    for other in siblings {
                        let b = self
                            .forward(&call.with_args(|x| {
                                x.insert("restaurant_id".into(), json!(other));
                            }))
                            .await;
                        let extra = b.items(t).cloned().unwrap_or_default();
                        if let Some(items) = a.items_mut(t) {
                            items.extend(extra);
                        }
                    }
                }
            }
            Auth6RoleAsScope
                if code == Some(ErrorCode::ResourceForbidden) && kind(t).is_some_and(Kind::is_write) =>
            {
                let Some(p) = persona else { return };
                let rst = call.arg_str("restaurant_id");
                let org =
                    rst.as_deref().and_then(|r| self.owner(r)).or_else(|| call.arg_str("organization_id"));
                let member = org.and_then(|o| self.data.membership(&p.user, &o).cloned());
                let in_reach = member.is_some_and(|m| {
                    !m.revoked && m.restaurants.is_none_or(|rs| rst.is_none_or(|r| rs.contains(&r)))
                });
                if in_reach && let Some(scope) = ToolName::parse(t).map(ToolName::scope) {
                    a.recode(ErrorCode::ScopeRequired);
                    set_error(a, "required_scope", json!(scope));
                }
            }
            Auth7MembershipCache if code == Some(ErrorCode::ResourceForbidden) => {
                let Some(target) = call.arg_str("restaurant_id").or_else(|| call.arg_str("organization_id"))
                else {
                    return;
                };
                let recent = lock(&self.memory)
                    .seen_access
                    .get(&(call.auth(), target.clone()))
                    .is_some_and(|at| at.elapsed() < Duration::from_secs(60));
                let org = if target.starts_with("org_") { Some(target) } else { self.owner(&target) };
                if recent && let Some(auth) = org.and_then(|o| self.auth_for_org(&o)) {
                    let b = self.forward(&call.as_auth(&auth)).await;
                    if b.is_success() {
                        *a = b;
                    }
                }
            }
            Sec2StackTrace if code == Some(ErrorCode::InternalError) => append_message(
                a,
                " — thread 'tokio-runtime-worker' panicked at src/tools/orders.rs:212:9: called `Option::unwrap()` on a `None` value; 0: mock_server::pipeline::call",
            ),
            Sec2LeakInText if code == Some(ErrorCode::InternalError) => {
                if let Some(text) = a.text_mut() {
                    *text = json!(format!(
                        "{} (caused by: Connection refused (os error 111) at /srv/chataigne/src/state/redis.rs:88)",
                        text.as_str().unwrap_or_default()
                    ));
                }
            }
            Sec2LeakInField if code == Some(ErrorCode::InternalError) => {
                set_error(a, "detail", json!("ERROR: relation \"orders\" does not exist (SQLSTATE 42P01)"));
            }
            _ => {}
        }
    }

    /// The public base URL the client used (scheme and authority), as the challenge names it.
    fn public_base(&self, call: &Call) -> String {
        let host = call.headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
        format!("http://{host}")
    }

    /// A success for an update_order_status the server refused: the order as read, with the
    /// status asked for (nothing changed).
    async fn acknowledge(&self, call: &Call) -> Option<Answer> {
        let args = json!({ "restaurant_id": call.arg("restaurant_id")?, "order_id": call.arg("order_id")? });
        let read = self.forward(&tool_call(call, "get_order", args)).await;
        let mut order = read.result()?.get("structuredContent")?.get("data")?.get("order")?.clone();
        order["status"] = call.arg("status")?;
        let summary = format!("Order {}: {}", order["id"].as_str().unwrap_or_default(), order["status"]);
        Some(Answer::rpc(call, "result", success_result(json!({ "order": order }), fresh_meta(), &summary)))
    }

    /// AUTH-5 broken: find the child through the restaurant that owns it, as the caller or,
    /// across tenants, as someone of that tenant.
    async fn lookup_elsewhere(&self, call: &Call) -> Option<Answer> {
        let child = ["order_id", "conversation_id", "transcript_id"].iter().find_map(|k| call.arg_str(k))?;
        let asked = call.arg_str("restaurant_id")?;
        let real = self.owner(&child).filter(|r| *r != asked)?;
        let same_org = self.owner(&real).is_some_and(|o| Some(o) == self.owner(&asked));
        let moved = call.with_args(|x| {
            x.insert("restaurant_id".into(), json!(real));
        });
        let attempt = match self.fault {
            Fault::Auth5SiblingLookup if same_org => moved,
            Fault::Auth5ForeignLookup if !same_org => moved.as_auth(&self.auth_for_org(&self.owner(&real)?)?),
            Fault::Auth5WriteLookup => moved,
            _ => return None,
        };
        let mut b = self.forward(&attempt).await;
        if !b.is_success() && self.fault == Fault::Auth5WriteLookup {
            let auth = self.auth_for_org(&self.owner(&real)?)?;
            b = self.forward(&attempt.as_auth(&auth)).await;
        }
        b.is_success().then_some(b)
    }

    fn rewrite_tools_list(&self, a: &mut Answer) {
        use Fault::*;
        let fault = self.fault;
        let Some(tools) = a.result_mut().and_then(|r| r.get_mut("tools")).and_then(Value::as_array_mut)
        else {
            return;
        };
        for tool in tools.iter_mut() {
            let name = tool["name"].as_str().unwrap_or_default().to_owned();
            let Some(d) = tool.as_object_mut() else { continue };
            match fault {
                Proto3OpenInputSchemas => {
                    if let Some(s) = d.get_mut("inputSchema").and_then(Value::as_object_mut) {
                        s.remove("additionalProperties");
                    }
                }
                Proto3NoOutputSchema => {
                    d.remove("outputSchema");
                }
                Proto3NoDescription => {
                    d.remove("description");
                }
                Proto3KeyedNotIdempotent if is_keyed(&name) => {
                    if let Some(an) = d.get_mut("annotations").and_then(Value::as_object_mut) {
                        an.remove("idempotentHint");
                    }
                }
                Lim7NoMaxLength => {
                    if let Some(s) = d.get_mut("inputSchema") {
                        walk_mut(s, &mut |_, v| {
                            if let Some(o) = v.as_object_mut() {
                                o.remove("maxLength");
                            }
                        });
                    }
                }
                Env7RestaurantAsItem => {
                    if let Some(data) =
                        d.get_mut("outputSchema").and_then(|s| s["oneOf"][0]["properties"].get_mut("data"))
                    {
                        rename_property(data, "restaurant", "item");
                    }
                }
                Env7MessagesInConversation if name == "get_conversation" => {
                    if let Some(data) =
                        d.get_mut("outputSchema").and_then(|s| s["oneOf"][0]["properties"].get_mut("data"))
                    {
                        let messages = data["properties"]["messages"].take();
                        if let Some(p) = data["properties"].as_object_mut() {
                            p.remove("messages");
                        }
                        if let Some(r) = data["required"].as_array_mut() {
                            r.retain(|x| x != "messages");
                        }
                        data["properties"]["conversation"]["properties"]["messages"] = messages;
                        if let Some(r) = data["properties"]["conversation"]["required"].as_array_mut() {
                            r.push(json!("messages"));
                        }
                    }
                }
                Abs2CancelAcked if name == "update_order_status" => {
                    if let Some(e) = d
                        .get_mut("inputSchema")
                        .and_then(|s| s["properties"]["status"]["enum"].as_array_mut())
                    {
                        e.extend([json!("cancelled"), json!("rejected")]);
                    }
                }
                _ => {}
            }
        }
        let extra = match fault {
            Abs1RefundTool => {
                Some(("refund_order", "Refund an order's payment to the customer, in full or in part."))
            }
            Abs1ArchiveDownload => Some((
                "download_order_history",
                "Download a restaurant's whole order history as one CSV document.",
            )),
            _ => None,
        };
        if let Some((name, description)) = extra {
            let mut d = ToolName::GetOrder.descriptor();
            d["name"] = json!(name);
            d["title"] = json!(name.replace('_', " "));
            d["description"] = json!(description);
            d["annotations"] =
                json!({ "readOnlyHint": false, "destructiveHint": true, "openWorldHint": true });
            tools.push(d);
        }
    }
}

fn rename_property(schema: &mut Value, from: &str, to: &str) {
    if let Some(p) = schema["properties"].as_object_mut()
        && let Some(x) = p.remove(from)
    {
        p.insert(to.into(), x);
    }
    if let Some(r) = schema["required"].as_array_mut() {
        for x in r.iter_mut() {
            if x == from {
                *x = json!(to);
            }
        }
    }
}

fn set_error(a: &mut Answer, field: &str, value: Value) {
    if let Some(e) = a.error_mut() {
        e.insert(field.into(), value);
    }
}

fn remove_error(a: &mut Answer, field: &str) {
    if let Some(e) = a.error_mut() {
        e.remove(field);
    }
}

fn append_message(a: &mut Answer, tail: &str) {
    if let Some(e) = a.error_mut() {
        let message = e.get("message").and_then(Value::as_str).unwrap_or_default();
        let message = format!("{message}{tail}");
        e.insert("message".into(), json!(message));
    }
}

fn hex(n: usize) -> String {
    let mut rng = rand::rng();
    (0..n).map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0')).collect()
}
