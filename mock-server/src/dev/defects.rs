//! Deliberate defect modes (`--defect NAME`), one or more per clause, so CI can prove the suite
//! fails the right clause for each. The healthy code asks this one seam at a few named points;
//! with no defect set every answer here is the healthy one.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use chataigne_contract::dataset::{Conversation, Transcript};
use chataigne_contract::{ErrorCode, Kind, Role, ToolName};
use serde_json::Value;

use crate::auth::Principal;
use crate::error::ToolError;
use crate::output::Output;
use crate::state::idempotency::{Claim, Fingerprint, KeyHasher, Slot};
use crate::state::store::{Data, Key, OrderRef};

named_modes! {
    /// A deliberate defect: the suite must fail its clause.
    Defect {
        OldProtocolOnly = "old-protocol-only", "PROTO-1", "serves only protocol version 2025-03-26";
        VersionEchoed = "version-echoed", "PROTO-1", "initialize agrees to any protocol version a client asks for";
        VersionHeaderIgnored = "version-header-ignored", "PROTO-1", "a request whose MCP-Protocol-Version header names an unsupported version is served";
        MirrorHeadersIgnored = "mirror-headers-ignored", "PROTO-1", "2026-07-28 requests are served whatever their Mcp-Method and Mcp-Name headers say";
        NotificationAnswered = "notification-answered", "PROTO-1", "a notification is answered with HTTP 200 and a body, not 202 and none";
        AnswerMislabelled = "answer-mislabelled", "PROTO-1", "JSON answers are labelled text/plain";
        PingNonEmpty = "ping-non-empty", "PROTO-1", "ping is answered with a non-empty result";
        PromptsUnadvertised = "prompts-unadvertised", "PROTO-1", "prompts are served but initialize does not advertise the prompts capability";
        PromptGetUnserved = "prompt-get-unserved", "PROTO-1", "prompts/list lists prompts that prompts/get answers with -32601 (a handler never wired)";
        LoggingUnserved = "logging-unserved", "PROTO-1", "initialize advertises logging but logging/setLevel answers -32601 (the SDK's default handler left in place)";
        ZeroIdDropped = "zero-id-dropped", "PROTO-2", "a request with id 0 is answered with id null";
        StringIdAsNumber = "string-id-as-number", "PROTO-2", "a string id made of digits is answered as a number";
        ErrorIdNull = "error-id-null", "PROTO-2", "JSON-RPC error answers carry id null instead of the request's";
        RefusalIdNull = "refusal-id-null", "PROTO-2", "a tool call refused for its arguments is answered with id null (a validation layer that builds its own answers)";
        UnknownToolAsMethod = "unknown-tool-as-method", "PROTO-2", "an unknown tool gets -32601 instead of -32602";
        UnknownPromptInternal = "unknown-prompt-internal", "PROTO-2", "prompts/get of an unknown prompt answers -32603 (the handler's lookup error left to the generic handler), not -32602";
        UnknownPromptFirst = "unknown-prompt-first", "PROTO-2", "prompts/get of an unknown prompt falls back to the first prompt listed, with the arguments given: a result, not a JSON-RPC error";
        OpenInputSchemas = "open-input-schemas", "PROTO-3", "input schemas allow additional properties";
        OutputOffSchema = "output-off-schema", "PROTO-4", "orders carry total_cents as a string";
        OriginUnchecked = "origin-unchecked", "PROTO-5", "a foreign Origin is served (no DNS-rebinding protection)";
        HostUnchecked = "host-unchecked", "PROTO-5", "any Host is served when no Origin is sent (Origin still checked)";
        ForwardedHostTrusted = "forwarded-host-trusted", "PROTO-5", "the Host check reads X-Forwarded-Host when a request has one, whoever sent it: a foreign Host forwarded as the server's own is served";
        OriginPostOnly = "origin-post-only", "PROTO-5", "the Origin check runs for POST only: a GET or DELETE of /mcp from a foreign Origin is answered as without one";
        NoTextSummary = "no-text-summary", "ENV-1", "successes carry no text content block";
        NoRequestIdHeader = "no-request-id-header", "ENV-2", "no x-request-id header";
        ReplayFixedRequestId = "replay-fixed-request-id", "ENV-2", "every replay answers with one fixed request_id";
        LongSummary = "long-summary", "ENV-3", "the text summary exceeds 4 KiB";
        SummaryCutInChars = "summary-cut-in-chars", "ENV-3", "a write's summary quotes its text, cut at 4,096 characters rather than bytes";
        ErrorWithoutRequestId = "error-without-request-id", "ENV-4", "errors carry a different request_id in data.error";
        FailureAsRpcError = "failure-as-rpc-error", "ENV-4", "a tool's failure other than a refusal of its arguments (not found, forbidden, a deadline…) is thrown to the framework: the JSON-RPC error -32603, not a tool result with isError";
        WrongCategory = "wrong-category", "ENV-5", "MCP_CURSOR_INVALID reported with category conflict";
        ConflictAsValidation = "conflict-as-validation", "ENV-5", "conflict codes reported with category validation";
        ErrorEchoesArguments = "error-echoes-arguments", "ENV-6", "validation errors echo the arguments";
        KeyEchoed = "key-echoed", "ENV-6", "idempotency conflicts echo the idempotency key";
        ForbiddenEchoesId = "forbidden-echoes-id", "ENV-6", "MCP_RESOURCE_FORBIDDEN names the restaurant or organization asked for";
        DataShapeMoved = "data-shape-moved", "ENV-7", "list_orders answers its orders under data.items";
        DefaultPage25 = "default-page-25", "PAG-1", "lists return 25 items by default";
        LimitUnchecked = "limit-unchecked", "PAG-2", "limit up to 500 accepted";
        CursorOnLastPage = "cursor-on-last-page", "PAG-3", "the last page still has a next_cursor";
        PageOverlap = "page-overlap", "PAG-4", "each page starts at the previous page's last item (duplicates)";
        CursorUnsigned = "cursor-unsigned", "PAG-5", "a tampered cursor is accepted";
        CursorUnbound = "cursor-unbound", "PAG-6", "a cursor works with other filters, tools, clients and users";
        CursorToolUnbound = "cursor-tool-unbound", "PAG-6", "a cursor is bound to its filters, client and user but not to its tool: another list with the same filters reads it";
        CursorUnboundDates = "cursor-unbound-dates", "PAG-6", "list_orders cursors are not bound to created_from/created_to";
        MessageCursorCarriesAuthority = "message-cursor-carries-authority", "PAG-7", "a page of get_conversation's messages asked for with a cursor skips the membership check (list cursors are checked)";
        CursorCarriesAuthority = "cursor-carries-authority", "PAG-7", "a next page skips the membership check";
        MessagesUnbounded = "messages-unbounded", "PAG-8", "conversation detail returns up to 150 messages by default";
        AnalyticsUnbounded = "analytics-unbounded", "LIM-1", "analytics accepts any range and metric count";
        LeapDayRange = "leap-day-range", "LIM-1", "analytics ranges are counted in 365-day years, leap days left out: a 367-day range through 29 February is accepted";
        RangeDailyOnly = "range-daily-only", "LIM-1", "the 366-day bound is applied to daily series only: by week or by month any range is served";
        NoRateLimit = "no-rate-limit", "LIM-2", "no rate limit";
        RetryAfterWholeSeconds = "retry-after-whole-seconds", "LIM-2", "retry_after_ms is the window's rest in whole seconds rounded down (0 in its last second): a client that waits that long is refused again";
        RateLimitPerUser = "rate-limit-per-user", "LIM-3", "the rate window is shared by all clients of a user";
        RatePerRestaurant = "rate-per-restaurant", "LIM-2", "the rate window is kept per restaurant too: each restaurant a pair calls gets its own 1000 (500) calls a minute";
        ReadTimeoutAsOutcomeUnknown = "read-timeout-outcome-unknown", "LIM-4", "a read past its deadline reports MCP_OUTCOME_UNKNOWN";
        SearchDeadlineEmpty = "search-deadline-empty", "LIM-4", "search_transcripts past its deadline answers an empty success (no hits) instead of MCP_TOOL_TIMEOUT";
        AnalyticsReadDeadline = "analytics-read-deadline", "LIM-4", "get_analytics is held to the read deadline (15 s), not its own (30 s)";
        ResourceReadLate = "resource-read-late", "LIM-4", "a restaurant read as a resource past get_restaurant's deadline is served late instead of refused";
        NoTruncation = "no-truncation", "LIM-5", "pages are never shortened to fit 128 KiB";
        TruncatedWhenMore = "truncated-when-more", "LIM-5", "every page with a next_cursor says truncated: true, cut for its size or not";
        FilteredPageUncut = "filtered-page-uncut", "LIM-5", "a page filtered by status is not shortened to fit 128 KiB, so it is refused as too large (the filtered query path skips the cut)";
        HugeOutput = "huge-output", "LIM-6", "a single item over 128 KiB is returned";
        BodyUnbounded = "body-unbounded", "LIM-7", "request bodies over 1 MiB are accepted";
        BodyLimitContentLengthOnly = "body-limit-content-length-only", "LIM-7", "only a Content-Length is checked against 1 MiB: a chunked body over it is read and served";
        BodyLimitReserialized = "body-limit-reserialized", "LIM-7", "the 1 MiB limit is held to the message parsed and written again: a body over it made of whitespace is served";
        LimitWraps32 = "limit-wraps-32", "PAG-2", "limit is read as a 64-bit integer then cast to 32 bits before its bound is checked: 2^32 + 20 is served as 20";
        PreconditionOptional = "precondition-optional", "PRE-1", "expected_status may be omitted";
        ExpectedStatusIgnored = "expected-status-ignored", "PRE-2", "expected_status is not compared";
        LifecycleUnchecked = "lifecycle-unchecked", "PRE-3", "any status transition is allowed";
        TerminalOrdersMovable = "terminal-orders-movable", "PRE-3", "cancelled and rejected orders can be moved back into the lifecycle";
        CreatedInstructionUnlisted = "created-instruction-unlisted", "IDEM-2", "list_instructions leaves out the instructions created in the server's last 30 seconds (a listing index refreshed on a timer; every answer's envelope right)";
        StaleReadAfterWrite = "stale-read-after-write", "PRE-2", "get_order answers the status an order had before its last successful update (a read cache the write does not invalidate)";
        NoCompareAndSet = "no-compare-and-set", "PRE-4", "the effect does not re-check the state (racing writes all win)";
        KeyOptional = "key-optional", "IDEM-1", "idempotency_key may be omitted";
        NumericKeyAccepted = "numeric-key-accepted", "IDEM-1", "an idempotency_key given as a JSON number is taken as its decimal text: 12345678 runs";
        KeyLengthBytes = "key-length-bytes", "IDEM-1", "idempotency_key's length is counted in UTF-8 bytes: 255 \"é\" are refused, 7 are accepted";
        ReplayNotFlagged = "replay-not-flagged", "IDEM-2", "a replay says replayed: false";
        MismatchReplayed = "mismatch-replayed", "IDEM-3", "a key reused with other arguments replays";
        ArgsComparedNormalized = "args-compared-normalized", "IDEM-3", "a key's arguments are compared trimmed and lowercased: \"Close early\" then \"close early \" replays";
        DuplicatesExecuted = "duplicates-executed", "IDEM-4", "concurrent duplicates all run";
        KeyNotScopedByClient = "key-not-scoped-by-client", "IDEM-5", "keys are shared across OAuth clients";
        KeysNeverExpire = "keys-never-expire", "IDEM-6", "keys replay forever";
        FailuresStored = "failures-stored", "IDEM-7", "a failed call keeps its key";
        RawKeyLogged = "raw-key-logged", "IDEM-8", "idempotency keys are written to the log";
        TokenCheckedAtInitialize = "token-checked-at-initialize", "AUTH-1", "only initialize needs a valid token: a later request without one (it names its MCP-Protocol-Version) is served as the last principal the server authenticated";
        OtherSchemeBadRequest = "other-scheme-bad-request", "AUTH-1", "an Authorization header of another scheme than Bearer gets 400 invalid_request without a WWW-Authenticate challenge";
        NoAuthentication = "no-authentication", "AUTH-1", "a request without a token is served as the owner";
        MetadataResourceOrigin = "metadata-resource-origin", "AUTH-1", "the protected resource metadata names the server's origin as its resource, not the MCP endpoint's URL";
        AudienceUnchecked = "audience-unchecked", "AUTH-2", "tokens for another audience are accepted";
        ScopesIgnored = "scopes-ignored", "AUTH-3", "scopes are not checked";
        AnalyticsScopeIgnored = "analytics-scope-ignored", "AUTH-3", "get_analytics does not check its scope";
        CursorPageSkipsScope = "cursor-page-skips-scope", "AUTH-3", "a page asked for with a cursor skips the scope check (the first page checked it)";
        ScopeSkippedStateless = "scope-skipped-stateless", "AUTH-3", "a request of the stateless revision (2026-07-28) skips the scope check: its token is taken as holding every scope (the session path checks it)";
        ExistenceOracle = "existence-oracle", "AUTH-4", "an absent restaurant gets MCP_RESOURCE_NOT_FOUND";
        AnalyticsMembershipIgnored = "analytics-membership-ignored", "AUTH-4", "get_analytics serves any restaurant, member or not";
        ForeignResourceRead = "foreign-resource-read", "AUTH-4", "resources/read serves any restaurant's resource, member or not (the handler reads the store around the pipeline)";
        ResourcesListEveryRestaurant = "resources-list-every-restaurant", "AUTH-4", "resources/list lists every restaurant of the store by name, whoever asks (the list is not filtered by the caller's memberships)";
        ResourceStatusStale = "resource-status-stale", "PRE-2", "resources/read shows every restaurant open, as restaurants are created, whatever status its last change left (a projection the status write does not update)";
        ResourceReadOracle = "resource-read-oracle", "AUTH-4", "resources/read refuses a foreign restaurant with -32603 MCP_RESOURCE_FORBIDDEN and an absent one with -32002 (an existence oracle on the resources surface)";
        ForeignChildVisible = "foreign-child-visible", "AUTH-5", "an order, conversation or transcript is found through any restaurant";
        SiblingChildVisible = "sibling-child-visible", "AUTH-5", "an order, conversation or transcript is found (and an order moved) through any restaurant of its own organization";
        ListsSpanOrganization = "lists-span-organization", "AUTH-5", "transcript searches and instruction lists cover the restaurant's whole organization";
        RolesIgnored = "roles-ignored", "AUTH-6", "roles are not checked";
        RoleAtMinimumRefused = "role-at-minimum-refused", "AUTH-6", "a role exactly at a tool's minimum is refused (> for >=)";
        MessageRoleIgnored = "message-role-ignored", "AUTH-6", "send_message does not check the role (a viewer can send)";
        RoleHighestAnywhere = "role-highest-anywhere", "AUTH-6", "the role checked is the caller's highest in any organization: a viewer who owns another organization may write in this one";
        RevocationIgnored = "revocation-ignored", "AUTH-7", "revoked memberships still grant access";
        OwnershipBeforeScope = "ownership-before-scope", "AUTH-8", "membership is checked before scope";
        CancelToolExposed = "cancel-tool-exposed", "ABS-1", "a cancel_order tool is listed";
        ExportTemplate = "export-template", "ABS-1", "resources/templates/list offers a bulk export of a restaurant's orders (chataigne://exports/{restaurant_id}/orders.csv)";
        CancelStatusAccepted = "cancel-status-accepted", "ABS-2", "update_order_status accepts cancelled";
        ContinuationTextless = "continuation-textless", "ENV-1", "pages reached through a cursor carry no text block";
        ChannelFilterIgnored = "channel-filter-ignored", "PAG-4", "list_orders ignores its channel filter";
        AnalyticsTotalsShort = "analytics-totals-short", "LIM-1", "get_analytics' totals leave out the range's last period (summed over from..to)";
        ErrorDetailHeader = "error-detail-header", "SEC-2", "internal errors carry an x-error-detail header naming a source path and the database";
        MessageTextLogged = "message-text-logged", "SEC-1", "message texts are written to the log";
        ReportLeaksArguments = "report-leaks-arguments", "SEC-1", "error reports carry the call's arguments, unscrubbed";
        InternalErrorLeaks = "internal-error-leaks", "SEC-2", "internal errors carry a stack trace";
        BearerCaseSensitive = "bearer-case-sensitive", "AUTH-1", "the Authorization scheme is matched case-sensitively: `bearer <token>` or `BEARER <token>` is taken as no token (401 with the usual challenge)";
        FetchSiteTrusted = "fetch-site-trusted", "PROTO-5", "a request with Sec-Fetch-Site same-origin or none skips the Origin check: a foreign Origin is then served";
        EmptyExpectedStatusIgnored = "empty-expected-status-ignored", "PRE-1", "expected_status \"\" is taken as absent but allowed: update_order_status and set_restaurant_status run against the current state";
        MoveToCurrentStatusAccepted = "move-to-current-status-accepted", "PRE-2", "update_order_status to the order's current status succeeds whatever expected_status says";
        MessageBroadcast = "message-broadcast", "ABS-2", "send_message also appends its text to every other conversation of the restaurant (the answer is the one message's)";
        NamesakeReplaces = "namesake-replaces", "ABS-2", "create_restaurant with the name of a restaurant its organization already has deletes that restaurant and creates the new one";
        AnalyticsCsvBlock = "analytics-csv-block", "ENV-1", "get_analytics successes carry a second text block: the series as CSV lines, after the summary";
        DefaultPerStatus = "default-per-status", "PAG-1", "list_orders with several statuses and no limit returns up to 20 orders per status (merged, newest first, at most 50)";
        WindowCursorInclusive = "window-cursor-inclusive", "PAG-4", "list_orders under created_from or created_to starts each page reached through a cursor with the previous page's last order";
        ScopeRefusedApplied = "scope-refused-applied", "AUTH-8", "a state write (update_order_status, set_restaurant_status) refused for its scope takes effect all the same: the change is made, then MCP_SCOPE_REQUIRED is answered";
        AcceptTakesNext = "accept-takes-next", "PRE-1", "update_order_status to accepted also accepts the restaurant's oldest other received order (a queue shortcut): an order no call named changes without its expected_status";
        CursorPageErrorLeaks = "cursor-page-error-leaks", "SEC-2", "an internal error on a list_orders page asked with a cursor quotes its SQL query (first pages' errors stay clean)";
    }
}

/// The defects switched on, and what `stale-read-after-write` remembers.
#[derive(Debug, Default, Clone)]
pub struct Defects(BTreeSet<Defect>, StaleReads, LastPrincipal, Replaced);

/// `namesake-replaces`' deletions: the restaurants a namesake replaced, by ID.
type Replaced = std::sync::Arc<std::sync::Mutex<BTreeSet<String>>>;

/// `token-checked-at-initialize`'s memory: the principal the server last authenticated.
type LastPrincipal = std::sync::Arc<std::sync::Mutex<Option<Principal>>>;

/// `stale-read-after-write`'s read cache: each order's status before its last update, by order ID.
type StaleReads = std::sync::Arc<std::sync::Mutex<HashMap<String, String>>>;

impl Defects {
    pub fn new(list: &[Defect]) -> Defects {
        Defects(
            list.iter().copied().collect(),
            StaleReads::default(),
            LastPrincipal::default(),
            Replaced::default(),
        )
    }

    pub fn has(&self, d: Defect) -> bool {
        self.0.contains(&d)
    }

    pub fn any(&self) -> bool {
        !self.0.is_empty()
    }

    // --- protocol and envelope ---

    /// The input schema to publish and validate against.
    pub fn input_schema(&self, tool: ToolName) -> Value {
        let mut s = tool.input_schema();
        let props = |s: &mut Value, f: &dyn Fn(&mut Value)| f(&mut s["properties"]);
        if self.has(Defect::OpenInputSchemas) {
            s["additionalProperties"] = Value::Bool(true);
        }
        if self.has(Defect::LimitUnchecked) && s["properties"].get("limit").is_some() {
            props(&mut s, &|p| p["limit"]["maximum"] = 500.into());
        }
        if self.has(Defect::AnalyticsUnbounded) && tool == ToolName::GetAnalytics {
            props(&mut s, &|p| {
                p["metrics"]["maxItems"] = 10.into();
                p["metrics"]["uniqueItems"] = false.into();
            });
        }
        let drop_required = |s: &mut Value, name: &str| {
            if let Some(req) = s["required"].as_array_mut() {
                req.retain(|r| r != name);
            }
        };
        if self.has(Defect::PreconditionOptional) {
            drop_required(&mut s, "expected_status");
        }
        if self.has(Defect::KeyOptional) {
            drop_required(&mut s, "idempotency_key");
        }
        if self.has(Defect::CancelStatusAccepted) && tool == ToolName::UpdateOrderStatus {
            props(&mut s, &|p| {
                if let Some(e) = p["status"]["enum"].as_array_mut() {
                    e.push("cancelled".into());
                }
            });
        }
        s
    }

    /// A tool call's arguments as a lenient reader leaves them before the schema sees them:
    /// `limit-wraps-32` casts a `limit` past 32 bits to them, `numeric-key-accepted` takes a
    /// numeric `idempotency_key` as its decimal text.
    pub fn read_arguments(&self, mut args: serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
        if self.has(Defect::LimitWraps32)
            && let Some(n) = args.get("limit").and_then(Value::as_u64).filter(|n| *n > u64::from(u32::MAX))
        {
            args.insert("limit".into(), (n as u32).into());
        }
        if self.has(Defect::NumericKeyAccepted)
            && let Some(n) = args.get("idempotency_key").filter(|k| k.is_number()).map(Value::to_string)
        {
            args.insert("idempotency_key".into(), n.into());
        }
        args
    }

    /// The schema the server validates against, from the one it publishes: `key-length-bytes`
    /// publishes the contract's lengths and checks its own ([`Defects::refuses_arguments`]).
    pub fn validated_schema(&self, mut schema: Value) -> Value {
        if self.has(Defect::KeyLengthBytes)
            && let Some(key) =
                schema.pointer_mut("/properties/idempotency_key").and_then(Value::as_object_mut)
        {
            key.remove("minLength");
            key.remove("maxLength");
        }
        if self.has(Defect::EmptyExpectedStatusIgnored)
            && let Some(values) =
                schema.pointer_mut("/properties/expected_status/enum").and_then(Value::as_array_mut)
        {
            values.push("".into());
        }
        schema
    }

    pub fn skips_limits(&self, tool: ToolName, args: &Value) -> bool {
        // `range-daily-only`: the bound applied to daily series alone.
        let grouped = args.get("granularity").and_then(Value::as_str).is_some_and(|g| g != "day");
        (self.has(Defect::AnalyticsUnbounded)
            || self.has(Defect::LeapDayRange)
            || (self.has(Defect::RangeDailyOnly) && grouped))
            && tool == ToolName::GetAnalytics
    }

    /// The defects' own checks of the arguments, after the schema: a key's length in bytes, a
    /// range in 365-day years.
    pub fn refuses_arguments(&self, tool: ToolName, args: &Value) -> Option<ToolError> {
        let min_max =
            chataigne_contract::tools::IDEMPOTENCY_KEY_MIN..=chataigne_contract::tools::IDEMPOTENCY_KEY_MAX;
        if self.has(Defect::KeyLengthBytes)
            && let Some(key) = args.get("idempotency_key").and_then(Value::as_str)
            && !min_max.contains(&key.len())
        {
            return Some(ToolError::invalid("/idempotency_key has the wrong length"));
        }
        if self.has(Defect::LeapDayRange) && tool == ToolName::GetAnalytics {
            // Day numbers of 365-day years: 29 February is 1 March's number.
            let day = |name: &str| {
                let text = args.get(name)?.as_str()?;
                let (y, rest) = text.split_once('-')?;
                let (m, d) = rest.split_once('-')?;
                let (y, m, d): (i64, usize, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
                const BEFORE: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
                Some(y * 365 + BEFORE.get(m.checked_sub(1)?)? + d - 1)
            };
            let (Some(from), Some(to)) = (day("from"), day("to")) else {
                return Some(ToolError::invalid("/from or /to is not a calendar date"));
            };
            if to < from || to - from + 1 > chataigne_contract::MAX_RANGE_DAYS {
                return Some(ToolError::invalid("the range is out of bounds"));
            }
        }
        None
    }

    /// LIM-4: a resource read past the tool's deadline is served anyway.
    pub fn resource_read_late(&self) -> bool {
        self.has(Defect::ResourceReadLate)
    }

    /// ABS-1: a resource template for a bulk export is listed.
    pub fn export_template(&self) -> bool {
        self.has(Defect::ExportTemplate)
    }

    /// Extra tools/list entries (ABS-1's defect).
    pub fn extra_tools(&self) -> Vec<Value> {
        if !self.has(Defect::CancelToolExposed) {
            return Vec::new();
        }
        vec![serde_json::json!({
            "name": "cancel_order", "description": "Cancel an order.",
            "inputSchema": { "type": "object", "properties": {}, "additionalProperties": false },
        })]
    }

    pub fn replayed(&self, mut out: Output) -> Output {
        if self.has(Defect::ReplayNotFlagged) {
            out.replayed = false;
        }
        out
    }

    /// Rewrites a finished envelope (the envelope-level defects).
    pub fn envelope(&self, structured: &mut Value, summary: &mut Option<String>, args: &Value) {
        if self.has(Defect::NoTextSummary) {
            *summary = None;
        }
        if self.has(Defect::LongSummary)
            && let Some(s) = summary
        {
            s.push_str(&" (details)".repeat(500));
        }
        if self.has(Defect::SummaryCutInChars)
            && let (Some(s), Some(text)) = (summary.as_mut(), args.get("text").and_then(Value::as_str))
        {
            *s = format!("{s}: \"{text}\"").chars().take(chataigne_contract::MAX_SUMMARY_BYTES).collect();
        }
        if let Some(err) = structured.pointer_mut("/data/error") {
            if self.has(Defect::ErrorWithoutRequestId) {
                err["request_id"] = "req_0000000000000000".into();
            }
            if self.has(Defect::WrongCategory) && err["code"] == "MCP_CURSOR_INVALID" {
                err["category"] = "conflict".into();
            }
            if self.has(Defect::ErrorEchoesArguments) && err["code"] == "MCP_INVALID_ARGUMENTS" {
                err["message"] =
                    format!("invalid arguments: {}", args.to_string().chars().take(400).collect::<String>())
                        .into();
            }
            let conflict = chataigne_contract::Category::Conflict.as_str();
            if self.has(Defect::ConflictAsValidation) && err["category"] == conflict {
                err["category"] = "validation".into();
            }
            let code = err["code"].as_str().unwrap_or_default().to_owned();
            if self.has(Defect::KeyEchoed)
                && matches!(code.as_str(), "MCP_IDEMPOTENCY_MISMATCH" | "MCP_OPERATION_IN_PROGRESS")
                && let Some(key) = args.get("idempotency_key").and_then(Value::as_str)
            {
                err["message"] = format!("idempotency key {key} is in use").into();
            }
            if self.has(Defect::ForbiddenEchoesId) && code == "MCP_RESOURCE_FORBIDDEN" {
                let target = ["restaurant_id", "organization_id"].iter().find_map(|k| args.get(*k)?.as_str());
                if let Some(target) = target {
                    err["message"] = format!("{target} is unavailable to you").into();
                }
            }
            if self.has(Defect::InternalErrorLeaks) && err["code"] == "MCP_INTERNAL_ERROR" {
                err["message"] = "thread 'tokio-runtime-worker' panicked at src/store.rs:88: called `Result::unwrap()` on an `Err` value: Io(\"/var/lib/chataigne/db.sqlite\")".into();
            }
        }
        if self.has(Defect::ReplayFixedRequestId)
            && structured.pointer("/meta/replayed") == Some(&Value::Bool(true))
        {
            structured["meta"]["request_id"] = "req_replayreplayreplay00".into();
        }
        if self.has(Defect::DataShapeMoved)
            && let Some(data) = structured.get_mut("data").and_then(Value::as_object_mut)
            && let Some(orders) = data.remove("orders")
        {
            data.insert("items".to_owned(), orders);
        }
        if self.has(Defect::OutputOffSchema)
            && let Some(orders) = structured.pointer_mut("/data/orders").and_then(Value::as_array_mut)
        {
            for o in orders {
                o["total_cents"] = o["total_cents"].to_string().into();
            }
        }
    }

    /// PROTO-1, capability negotiation: the prompts capability left out of `initialize`.
    pub fn hides_prompts_capability(&self) -> bool {
        self.has(Defect::PromptsUnadvertised)
    }

    /// PROTO-1, capability negotiation: `prompts/get` missing behind a served `prompts/list`.
    pub fn prompt_get_unserved(&self) -> bool {
        self.has(Defect::PromptGetUnserved)
    }

    /// PROTO-1, capability negotiation: `logging/setLevel` missing behind the logging capability.
    pub fn logging_unserved(&self) -> bool {
        self.has(Defect::LoggingUnserved)
    }

    // --- authentication and authorization ---

    pub fn ignores_roles(&self, tool: ToolName) -> bool {
        self.has(Defect::RolesIgnored)
            || (self.has(Defect::MessageRoleIgnored) && tool == ToolName::SendMessage)
    }

    /// AUTH-6 the other way: the comparison that lets a role through is strict.
    pub fn refuses_role_at_minimum(&self) -> bool {
        self.has(Defect::RoleAtMinimumRefused)
    }

    /// AUTH-3 on one transport path: a request whose MCP-Protocol-Version is the stateless
    /// revision's is served as if its token held every scope.
    pub fn skips_scopes_for(&self, protocol_version: Option<&str>) -> bool {
        self.has(Defect::ScopeSkippedStateless) && protocol_version == Some("2026-07-28")
    }

    /// `scope-refused-applied`: a state write refused for its scope is carried out all the same.
    pub fn applies_scope_refused(&self, tool: ToolName) -> bool {
        self.has(Defect::ScopeRefusedApplied)
            && matches!(tool, ToolName::UpdateOrderStatus | ToolName::SetRestaurantStatus)
    }

    pub fn ignores_scopes(&self, tool: ToolName, args: &Value) -> bool {
        self.has(Defect::ScopesIgnored)
            || (self.has(Defect::AnalyticsScopeIgnored) && tool == ToolName::GetAnalytics)
            || (self.has(Defect::CursorPageSkipsScope) && args.get("cursor").is_some())
    }

    /// AUTH-1: the protected resource metadata's `resource` is the origin, not the endpoint.
    pub fn metadata_names_origin(&self) -> bool {
        self.has(Defect::MetadataResourceOrigin)
    }

    /// AUTH-4 on the resources surface: a restaurant's resource read without the pipeline.
    pub fn resource_read_unchecked(&self) -> bool {
        self.has(Defect::ForeignResourceRead)
    }

    /// AUTH-4 on `resources/list`: every restaurant listed, whatever the caller may see.
    pub fn lists_every_restaurant(&self) -> bool {
        self.has(Defect::ResourcesListEveryRestaurant)
    }

    /// PRE-2 on `resources/read`: the status a restaurant read as a resource shows instead of its
    /// own, if a defect says so.
    pub fn resource_status(&self) -> Option<&'static str> {
        self.has(Defect::ResourceStatusStale).then_some("open")
    }

    /// AUTH-4 on `resources/read`: a forbidden restaurant told apart from an absent one.
    pub fn resource_read_oracle(&self) -> bool {
        self.has(Defect::ResourceReadOracle)
    }

    /// AUTH-4's narrow defect: a tool that skips the membership check, as if its caller owned
    /// every restaurant.
    pub fn skips_membership(&self, tool: ToolName) -> bool {
        self.has(Defect::AnalyticsMembershipIgnored) && tool == ToolName::GetAnalytics
    }

    pub fn role_for_restaurant(&self, data: &Data, user: &str, rid: &str) -> Option<Role> {
        if self.has(Defect::RevocationIgnored) {
            let r = data.restaurant(rid)?;
            return data
                .memberships
                .iter()
                .filter(|m| m.user_id == user && m.organization_id == r.organization_id)
                .map(|m| m.role)
                .max();
        }
        data.role_for_restaurant(user, rid)
    }

    /// AUTH-4's defect: absent and foreign told apart.
    pub fn absent_target(&self, data: &Data, rid: &str) -> Option<ToolError> {
        (self.has(Defect::ExistenceOracle) && data.restaurant(rid).is_none())
            .then(|| ErrorCode::ResourceNotFound.into())
    }

    /// Finds a child (order, conversation, transcript) with `find` in the restaurant asked, or
    /// under AUTH-5's defects in every restaurant of its organization, or of the server. The
    /// healthy path asks `find` once, with nothing allocated.
    fn find_child<'a, T>(
        &self,
        data: &'a Data,
        rid: &'a str,
        find: impl Fn(&'a str) -> Option<T>,
    ) -> Option<T> {
        let all = data.restaurants.values();
        if self.has(Defect::ForeignChildVisible) {
            return all.map(|r| r.id.as_str()).find_map(find);
        }
        if self.has(Defect::SiblingChildVisible)
            && let Some(org) = data.restaurant(rid).map(|r| &r.organization_id)
        {
            return all.filter(|r| &r.organization_id == org).map(|r| r.id.as_str()).find_map(find);
        }
        find(rid)
    }

    pub fn order<'a>(&self, data: &'a Data, rid: &'a str, oid: &str) -> Option<OrderRef<'a>> {
        self.find_child(data, rid, |owner| data.order(owner, oid))
    }

    /// An update moved order `oid` out of `before`: under `stale-read-after-write` the read cache
    /// keeps that status and is not invalidated.
    pub fn order_updated(&self, oid: &str, before: &str) {
        if self.has(Defect::StaleReadAfterWrite) {
            let mut cache = self.1.lock().unwrap_or_else(|e| e.into_inner());
            cache.insert(oid.to_owned(), before.to_owned());
        }
    }

    /// Whether `list_instructions` leaves out a record created at `created_at` (seconds of the
    /// server's clock `now_s`): under `created-instruction-unlisted`, the last 30 seconds'.
    pub fn unlisted(&self, created_at: &str, now_s: i64) -> bool {
        self.has(Defect::CreatedInstructionUnlisted)
            && chataigne_contract::time::parse_timestamp(created_at).is_some_and(|t| now_s - t < 30)
    }

    /// The order `get_order` answers: under `stale-read-after-write`, the status it had before
    /// its last update (every field and the envelope otherwise valid).
    pub fn order_read(&self, oid: &str, mut order: Value) -> Value {
        if self.has(Defect::StaleReadAfterWrite)
            && let Some(before) = self.1.lock().unwrap_or_else(|e| e.into_inner()).get(oid)
        {
            order["status"] = Value::String(before.clone());
        }
        order
    }

    /// The restaurant whose order `oid` a write through `rid` moves, if any.
    pub fn order_owner(&self, data: &Data, rid: &str, oid: &str) -> Option<String> {
        self.find_child(data, rid, |owner| data.order(owner, oid).map(|_| owner.to_owned()))
    }

    pub fn conversation<'a>(&self, data: &'a Data, rid: &'a str, id: &str) -> Option<&'a Conversation> {
        self.find_child(data, rid, |owner| data.conversation(owner, id))
    }

    pub fn transcript<'a>(&self, data: &'a Data, rid: &'a str, id: &str) -> Option<&'a Transcript> {
        self.find_child(data, rid, |owner| data.transcript(owner, id))
    }

    /// A restaurant's keyed list (transcripts to search, instructions) as the tool reads it: its
    /// own, or under `lists-span-organization` those of its whole organization merged.
    pub fn listed<'a, T: Clone>(
        &self,
        data: &'a Data,
        rid: &str,
        lists: impl Fn(&'a Data) -> &'a HashMap<String, BTreeMap<Key, T>>,
    ) -> Option<Cow<'a, BTreeMap<Key, T>>> {
        let lists = lists(data);
        if self.has(Defect::ListsSpanOrganization)
            && let Some(org) = data.restaurant(rid).map(|r| &r.organization_id)
        {
            let siblings = data.restaurants.values().filter(|r| &r.organization_id == org);
            let merged =
                siblings.filter_map(|r| lists.get(&r.id)).flatten().map(|(k, v)| (k.clone(), v.clone()));
            return Some(Cow::Owned(merged.collect()));
        }
        lists.get(rid).map(Cow::Borrowed)
    }

    // --- pagination ---

    pub fn default_limit(&self, healthy: usize) -> usize {
        if self.has(Defect::DefaultPage25) { 25 } else { healthy }
    }

    pub fn default_message_limit(&self, healthy: usize) -> usize {
        if self.has(Defect::MessagesUnbounded) { 150 } else { healthy }
    }

    pub fn no_truncation(&self) -> bool {
        self.has(Defect::NoTruncation) || self.has(Defect::HugeOutput)
    }

    /// Whether a page is left whole past 128 KiB; `filtered`: the call filters by status.
    pub fn page_uncut(&self, filtered: bool) -> bool {
        self.no_truncation() || (filtered && self.has(Defect::FilteredPageUncut))
    }

    /// Arguments a cursor is not bound to, besides the page size and the cursor itself.
    pub fn unbound_arguments(&self) -> &'static [&'static str] {
        if self.has(Defect::CursorUnboundDates) { &["created_from", "created_to"] } else { &[] }
    }

    /// The tool a cursor is bound to: none under `cursor-tool-unbound`.
    pub fn cursor_tool<'a>(&self, tool: &'a str) -> &'a str {
        if self.has(Defect::CursorToolUnbound) { "" } else { tool }
    }

    pub fn filters_digest(&self, healthy: [u8; 32]) -> [u8; 32] {
        if self.has(Defect::CursorUnbound) { [0; 32] } else { healthy }
    }

    /// PAG-5's and PAG-6's defects: a cursor that fails the MAC or binding is still read.
    pub fn accept_any_cursor(&self, cursor: &str) -> Option<Key> {
        if !(self.has(Defect::CursorUnsigned) || self.has(Defect::CursorUnbound)) {
            return None;
        }
        use base64::Engine;
        let body = cursor.split('.').next()?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(body).ok();
        let parsed: Option<Value> = bytes.and_then(|b| serde_json::from_slice(&b).ok());
        match parsed {
            Some(p) => Some((p["ts"].as_str()?.to_owned(), p["id"].as_str()?.to_owned())),
            // An unreadable cursor restarts from the top instead of being refused.
            None => Some(("9999".into(), String::new())),
        }
    }

    pub fn page_start(&self, key: Key) -> Bound<Key> {
        if self.has(Defect::PageOverlap) { Bound::Included(key) } else { Bound::Excluded(key) }
    }

    /// The channel filter of `list_orders` as `channel-filter-ignored` leaves it (none).
    pub fn channel_filter<'a>(&self, asked: Option<&'a str>) -> Option<&'a str> {
        asked.filter(|_| !self.has(Defect::ChannelFilterIgnored))
    }

    /// `default-per-status`: list_orders' page under several statuses and no limit, as (per
    /// status, in all).
    pub fn per_status_page(&self, limit_given: bool, statuses: usize) -> Option<(usize, usize)> {
        (self.has(Defect::DefaultPerStatus) && !limit_given && statuses > 1)
            .then_some((chataigne_contract::DEFAULT_LIMIT, 50))
    }

    /// `window-cursor-inclusive`: a page of list_orders under a creation window starts at the
    /// cursor's own order.
    pub fn window_page_start(&self, windowed: bool, start: Bound<Key>) -> Bound<Key> {
        match start {
            Bound::Excluded(key) if windowed && self.has(Defect::WindowCursorInclusive) => {
                Bound::Included(key)
            }
            other => other,
        }
    }

    pub fn cursor_on_last_page(&self) -> bool {
        self.has(Defect::CursorOnLastPage)
    }

    /// PAG-7's defects: a page reached with a cursor skips the membership check (every tool's,
    /// or only the messages of `get_conversation`).
    pub fn cursor_skips_access(&self, tool: ToolName) -> bool {
        self.has(Defect::CursorCarriesAuthority)
            || (self.has(Defect::MessageCursorCarriesAuthority) && tool == ToolName::GetConversation)
    }

    // --- limits ---

    /// AUTH-6: the role checked is the caller's highest over all their memberships.
    pub fn role_highest_anywhere(&self) -> bool {
        self.has(Defect::RoleHighestAnywhere)
    }

    pub fn rate_disabled(&self) -> bool {
        self.has(Defect::NoRateLimit)
    }

    /// LIM-2: the wait a rate-limit refusal asks for, as the server computed it.
    pub fn retry_after_ms(&self, ms: u64) -> u64 {
        if self.has(Defect::RetryAfterWholeSeconds) { ms / 1000 * 1000 } else { ms }
    }

    /// PROTO-2: a prompts/get that names no prompt the server has answers the first one.
    pub fn unknown_prompt_first(&self) -> bool {
        self.has(Defect::UnknownPromptFirst)
    }

    /// PROTO-2: the error of a prompts/get that names no prompt the server has.
    pub fn unknown_prompt_internal(&self) -> bool {
        self.has(Defect::UnknownPromptInternal)
    }

    /// What the rate window's client part is: the client, none (`rate-limit-per-user`), or the
    /// client and the restaurant the call names (`rate-per-restaurant`).
    pub fn rate_client(&self, client: &str, args: &Value) -> String {
        if self.has(Defect::RateLimitPerUser) {
            return String::new();
        }
        match args.get("restaurant_id").and_then(Value::as_str) {
            Some(restaurant) if self.has(Defect::RatePerRestaurant) => format!("{client}/{restaurant}"),
            _ => client.to_owned(),
        }
    }

    pub fn read_timeout_code(&self) -> ErrorCode {
        if self.has(Defect::ReadTimeoutAsOutcomeUnknown) {
            ErrorCode::OutcomeUnknown
        } else {
            ErrorCode::ToolTimeout
        }
    }

    /// The body limit of the transport under the gate (rmcp's).
    pub fn body_limit(&self) -> usize {
        if self.has(Defect::BodyUnbounded) || self.has(Defect::BodyLimitContentLengthOnly) {
            64 * 1024 * 1024
        } else {
            chataigne_contract::MAX_BODY_BYTES
        }
    }

    /// The gate's body limit for a request with these headers: `body-limit-content-length-only`
    /// holds a body to 1 MiB only when it says its length; `body-limit-reserialized` reads any
    /// body and holds the message to it ([`Defects::reserialized_body`]).
    pub fn body_limit_of(&self, headers: &HeaderMap) -> usize {
        if self.has(Defect::BodyLimitContentLengthOnly) && headers.contains_key(header::CONTENT_LENGTH) {
            chataigne_contract::MAX_BODY_BYTES
        } else if self.has(Defect::BodyLimitReserialized) {
            64 * 1024 * 1024
        } else {
            self.body_limit()
        }
    }

    /// `body-limit-reserialized`: a body over 1 MiB that is JSON is measured once written again
    /// (compact): `None` if that is still over the limit (or no JSON), else the compact message
    /// goes on.
    pub fn reserialized_body(&self, body: axum::body::Bytes) -> Option<axum::body::Bytes> {
        if !self.has(Defect::BodyLimitReserialized) || body.len() <= chataigne_contract::MAX_BODY_BYTES {
            return Some(body);
        }
        let compact = serde_json::from_slice::<Value>(&body).ok()?.to_string();
        (compact.len() <= chataigne_contract::MAX_BODY_BYTES).then(|| compact.into())
    }

    /// The kind whose deadline a tool of `kind` is held to.
    pub fn deadline_kind(&self, kind: Kind) -> Kind {
        if self.has(Defect::AnalyticsReadDeadline) && kind == Kind::Analytics { Kind::Read } else { kind }
    }

    /// What a read past its deadline answers instead of its timeout, if a defect says so.
    pub fn past_deadline(&self, tool: ToolName) -> Option<Output> {
        (self.has(Defect::SearchDeadlineEmpty) && tool == ToolName::SearchTranscripts)
            .then(|| Output::new(serde_json::json!({ "transcripts": [] }), "no matching transcripts"))
    }

    // --- preconditions ---

    pub fn ignores_expected_status(&self) -> bool {
        self.has(Defect::ExpectedStatusIgnored) || self.has(Defect::PreconditionOptional)
    }

    /// PRE-1 and PRE-2's narrow defects: whether `expected` is not held against the `current`
    /// status of a move to `target` (`None` for a restaurant): an empty one
    /// (`empty-expected-status-ignored`), or any when an order is already in its target
    /// (`move-to-current-status-accepted`, which lets the move past the lifecycle too).
    pub fn waives_expected_status(&self, expected: &str, current: &str, target: Option<&str>) -> bool {
        (self.has(Defect::EmptyExpectedStatusIgnored) && expected.is_empty())
            || self.moves_to_current(current, target)
    }

    /// `move-to-current-status-accepted`: an order moved to the status it has.
    pub fn moves_to_current(&self, current: &str, target: Option<&str>) -> bool {
        self.has(Defect::MoveToCurrentStatusAccepted) && target == Some(current)
    }

    pub fn ignores_lifecycle(&self, from: &str) -> bool {
        self.has(Defect::LifecycleUnchecked)
            || self.has(Defect::CancelStatusAccepted)
            || (self.has(Defect::TerminalOrdersMovable) && matches!(from, "cancelled" | "rejected"))
    }

    pub fn no_compare_and_set(&self) -> bool {
        self.has(Defect::NoCompareAndSet)
            || self.has(Defect::ExpectedStatusIgnored)
            || self.has(Defect::PreconditionOptional)
    }

    // --- idempotency ---

    pub fn idempotency_slot(&self, keys: &KeyHasher, p: &Principal, tool: &str, key: &str) -> Slot {
        let client = if self.has(Defect::KeyNotScopedByClient) { "" } else { p.client_id.as_str() };
        keys.slot(client, &p.user_id, tool, key)
    }

    /// The arguments a key's fingerprint is taken of: every string trimmed and lowercased under
    /// `args-compared-normalized`.
    pub fn compared_args<'a>(&self, args: &'a Value) -> Cow<'a, Value> {
        fn normalize(v: &Value) -> Value {
            match v {
                Value::String(s) => Value::String(s.trim().to_lowercase()),
                Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
                Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), normalize(v))).collect()),
                other => other.clone(),
            }
        }
        if self.has(Defect::ArgsComparedNormalized) {
            Cow::Owned(normalize(args))
        } else {
            Cow::Borrowed(args)
        }
    }

    pub fn fingerprint(&self, healthy: Fingerprint) -> Fingerprint {
        if self.has(Defect::MismatchReplayed) { [0; 32] } else { healthy }
    }

    pub fn adjust_claim(&self, claim: Claim) -> Claim {
        match claim {
            Claim::InProgress { .. } if self.has(Defect::DuplicatesExecuted) => Claim::Fresh,
            other => other,
        }
    }

    /// The clock the idempotency store sees.
    pub fn idempotency_now(&self, healthy: i64) -> i64 {
        if self.has(Defect::KeysNeverExpire) { 0 } else { healthy }
    }

    pub fn keeps_failed_keys(&self) -> bool {
        self.has(Defect::FailuresStored)
    }

    // --- error reporting ---

    /// SEC-1's error-report defect: events carry the arguments and nothing is scrubbed.
    pub fn reports_arguments(&self) -> bool {
        self.has(Defect::ReportLeaksArguments)
    }

    /// The error an injected fault raises: under `cursor-page-error-leaks` an internal error on
    /// a list_orders page asked with a cursor quotes its SQL query.
    pub fn fault_error(&self, tool: ToolName, args: &Value, code: ErrorCode) -> ToolError {
        let cursor_page = tool == ToolName::ListOrders && args.get("cursor").is_some();
        if !(self.has(Defect::CursorPageErrorLeaks) && cursor_page && code == ErrorCode::InternalError) {
            return ToolError::new(code);
        }
        let rid = args.get("restaurant_id").and_then(Value::as_str).unwrap_or_default();
        let limit =
            args.get("limit").and_then(Value::as_u64).unwrap_or(chataigne_contract::DEFAULT_LIMIT as u64);
        ToolError {
            detail: Some(format!(
                "select * from orders where restaurant_id = '{rid}' and (created_at, id) < ($1, $2) \
                 order by created_at desc limit {limit}"
            )),
            ..ToolError::new(code)
        }
    }

    // --- writes that reach too far (ABS-2, PRE-1) ---

    /// `accept-takes-next`: the received order of restaurant `rid` accepted along with `oid`.
    pub fn next_received(&self, data: &Data, rid: &str, oid: &str, target: &str) -> Option<String> {
        if !self.has(Defect::AcceptTakesNext) || target != "accepted" {
            return None;
        }
        data.orders_of(rid).find(|o| *o.row.status == *"received" && o.id() != oid).map(|o| o.id().to_owned())
    }

    /// `message-broadcast`: the other conversations of restaurant `rid` a message sent in `cid`
    /// is appended to as well.
    pub fn broadcast_to(&self, data: &Data, rid: &str, cid: &str) -> Vec<String> {
        if !self.has(Defect::MessageBroadcast) {
            return Vec::new();
        }
        let all = data.conversations.get(rid).into_iter().flat_map(|m| m.values());
        all.filter(|c| c.id != cid).map(|c| c.id.clone()).collect()
    }

    /// `namesake-replaces`: the restaurants of `org` named `name` that a new one replaces,
    /// deleted now.
    pub fn replace_namesakes(&self, data: &Data, org: &str, name: &str) {
        if !self.has(Defect::NamesakeReplaces) {
            return;
        }
        let namesakes = data.restaurants.values().filter(|r| r.organization_id == org && r.name == name);
        let mut replaced = self.3.lock().unwrap_or_else(|e| e.into_inner());
        replaced.extend(namesakes.map(|r| r.id.clone()));
    }

    /// The data was reset: the restaurants `namesake-replaces` deleted are back.
    pub fn data_reset(&self) {
        self.3.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Whether restaurant `rid` was deleted by `namesake-replaces` (never, healthy).
    pub fn deleted(&self, rid: &str) -> bool {
        self.has(Defect::NamesakeReplaces) && self.3.lock().unwrap_or_else(|e| e.into_inner()).contains(rid)
    }

    /// ENV-1: `analytics-csv-block`'s second text block, the series of a get_analytics success
    /// as CSV lines.
    pub fn extra_text(&self, structured: &Value, is_error: bool) -> Option<String> {
        if !self.has(Defect::AnalyticsCsvBlock) || is_error {
            return None;
        }
        let data = structured.get("data")?;
        let series = data.get("series")?.as_array()?;
        let metrics: Vec<&str> = data.get("metrics")?.as_array()?.iter().filter_map(Value::as_str).collect();
        let mut csv = format!("period_start,{}", metrics.join(","));
        for row in series {
            let cells = metrics
                .iter()
                .map(|m| row.pointer(&format!("/values/{m}")).map_or(String::new(), Value::to_string));
            let start = row.get("period_start").and_then(Value::as_str).unwrap_or_default();
            csv.push_str(&format!("\n{start},{}", cells.collect::<Vec<_>>().join(",")));
        }
        Some(csv)
    }

    // --- transport and pipeline: what the healthy layers ask, by name ---

    /// PROTO-2: an unknown tool answered as an unknown method.
    pub fn unknown_tool_as_method(&self) -> bool {
        self.has(Defect::UnknownToolAsMethod)
    }

    /// PROTO-5: the Origin check for POST only.
    pub fn origin_checked_for(&self, method: &axum::http::Method) -> bool {
        !self.has(Defect::OriginPostOnly) || method == axum::http::Method::POST
    }

    /// ENV-4: a tool's failure answered as a JSON-RPC error rather than a tool result.
    pub fn failure_as_rpc_error(&self, code: ErrorCode) -> bool {
        self.has(Defect::FailureAsRpcError) && code != ErrorCode::InvalidArguments
    }

    /// LIM-5: `truncated` as a page's, or (`truncated-when-more`) whenever more follow.
    pub fn truncated(&self, cut: bool, more: bool) -> bool {
        cut || (more && self.has(Defect::TruncatedWhenMore))
    }

    /// PROTO-5: rmcp's Host check switched off.
    pub fn host_unchecked(&self) -> bool {
        self.has(Defect::HostUnchecked)
    }

    /// PROTO-5 under `fetch-site-trusted`: a request whose Sec-Fetch-Site says `same-origin` or
    /// `none` is taken as the browser's word that its Origin is fine.
    pub fn trusts_fetch_site(&self, headers: &HeaderMap) -> bool {
        self.has(Defect::FetchSiteTrusted)
            && headers
                .get("sec-fetch-site")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "same-origin" | "none"))
    }

    /// AUTH-1: the bearer token of an Authorization header; under `bearer-case-sensitive` the
    /// scheme must be spelled `Bearer` exactly.
    pub fn bearer<'a>(&self, header: &'a str) -> Option<&'a str> {
        if self.has(Defect::BearerCaseSensitive) && !header.starts_with("Bearer ") {
            return None;
        }
        crate::auth::bearer(header)
    }

    /// PROTO-5: the gate's Origin check switched off.
    pub fn origin_unchecked(&self) -> bool {
        self.has(Defect::OriginUnchecked)
    }

    /// ENV-2: no `x-request-id` header.
    pub fn hides_request_id_header(&self) -> bool {
        self.has(Defect::NoRequestIdHeader)
    }

    /// AUTH-1: a request without a token is served as the owner.
    pub fn serves_anonymous_as_owner(&self) -> bool {
        self.has(Defect::NoAuthentication)
    }

    /// AUTH-1 under `token-checked-at-initialize`: the principal a request was authenticated as.
    pub fn authenticated(&self, principal: &Principal) {
        if self.has(Defect::TokenCheckedAtInitialize) {
            *self.2.lock().unwrap_or_else(|e| e.into_inner()) = Some(principal.clone());
        }
    }

    /// AUTH-1 under `token-checked-at-initialize`: who a request without a valid token is
    /// served as, when it is not the handshake (it names its MCP-Protocol-Version).
    /// `other-scheme-bad-request`: the refusal of credentials of another scheme than Bearer.
    pub fn other_scheme_refusal(&self, headers: &HeaderMap) -> Option<Response> {
        let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
        let bearer = value.split_once(' ').is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"));
        (self.has(Defect::OtherSchemeBadRequest) && !bearer).then(|| {
            let body = serde_json::json!({ "error": "invalid_request" });
            (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
        })
    }

    /// `forwarded-host-trusted`: the Host rmcp checks becomes the request's X-Forwarded-Host.
    pub fn forwarded_host(&self, headers: &mut HeaderMap) {
        if !self.has(Defect::ForwardedHostTrusted) {
            return;
        }
        let forwarded = headers.get("x-forwarded-host").and_then(|v| v.to_str().ok());
        let first = forwarded.and_then(|v| v.split(',').next()).map(str::trim);
        if let Some(host) = first.and_then(|h| HeaderValue::from_str(h).ok()) {
            headers.insert(header::HOST, host);
        }
    }

    pub fn unauthenticated_principal(&self, headers: &HeaderMap) -> Option<Principal> {
        let later = headers.contains_key("mcp-protocol-version");
        (self.has(Defect::TokenCheckedAtInitialize) && later)
            .then(|| self.2.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .flatten()
    }

    /// AUTH-8: membership and role before scope.
    pub fn access_before_scope(&self) -> bool {
        self.has(Defect::OwnershipBeforeScope)
    }

    /// IDEM-8 and SEC-1: what the call log leaks on purpose, as (field, argument) pairs.
    pub fn leaked_to_log(&self) -> &'static [(&'static str, &'static str)] {
        match (self.has(Defect::RawKeyLogged), self.has(Defect::MessageTextLogged)) {
            (true, true) => &[("idempotency_key", "idempotency_key"), ("text", "text"), ("query", "query")],
            (true, false) => &[("idempotency_key", "idempotency_key")],
            (false, true) => &[("text", "text"), ("query", "query")],
            (false, false) => &[],
        }
    }

    // --- protocol ---

    pub fn protocol_versions(&self) -> Vec<rmcp::model::ProtocolVersion> {
        use rmcp::model::ProtocolVersion as V;
        if self.has(Defect::OldProtocolOnly) {
            return vec![V::V_2025_03_26];
        }
        vec![V::V_2025_06_18, V::V_2025_11_25, V::V_2026_07_28]
    }

    /// The headers of a posted `body` as rmcp will read them, as a defect leaves them:
    /// `version-header-ignored` drops an `MCP-Protocol-Version` naming a version the server
    /// does not serve; `mirror-headers-ignored` makes `Mcp-Method` and `Mcp-Name` say what the
    /// body says, so rmcp never sees them disagree.
    pub fn request_headers(&self, headers: &mut HeaderMap, body: &[u8]) {
        if self.has(Defect::MirrorHeadersIgnored)
            && let Ok(message) = serde_json::from_slice::<Value>(body)
        {
            let method =
                message.get("method").and_then(Value::as_str).and_then(|m| HeaderValue::from_str(m).ok());
            if let Some(method) = method {
                headers.insert("mcp-method", method);
            }
            let name = message.pointer("/params/name").and_then(Value::as_str);
            if let Some(name) = name.and_then(|n| HeaderValue::from_str(n).ok()) {
                headers.insert("mcp-name", name);
            }
        }
        if !self.has(Defect::VersionHeaderIgnored) {
            return;
        }
        let served = self.protocol_versions();
        let unsupported = headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| !served.iter().any(|s| s.as_str() == v));
        if unsupported {
            headers.remove("mcp-protocol-version");
        }
    }

    /// Whether [`Self::answer`] may change answers: the gate then keeps the request's body.
    pub fn rewrites_answers(&self) -> bool {
        [
            Defect::VersionEchoed,
            Defect::NotificationAnswered,
            Defect::AnswerMislabelled,
            Defect::PingNonEmpty,
            Defect::ZeroIdDropped,
            Defect::StringIdAsNumber,
            Defect::ErrorIdNull,
            Defect::RefusalIdNull,
            Defect::ContinuationTextless,
            Defect::AnalyticsTotalsShort,
            Defect::ErrorDetailHeader,
        ]
        .into_iter()
        .any(|d| self.has(d))
    }

    /// The answer to `request` (the posted JSON) as the JSON-RPC defects spoil it.
    pub async fn answer(&self, request: &[u8], response: Response) -> Response {
        let Ok(request) = serde_json::from_slice::<Value>(request) else { return response };
        let notification = request.get("method").is_some() && request.get("id").is_none();
        if notification && self.has(Defect::NotificationAnswered) && response.status() == StatusCode::ACCEPTED
        {
            let body = serde_json::json!({ "jsonrpc": "2.0", "id": null, "result": {} }).to_string();
            return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
        }
        let json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
        if !json {
            return response;
        }
        let (mut parts, body) = response.into_parts();
        // Answers of the reference server stay far below this; a defect need not be clever.
        let Ok(bytes) = axum::body::to_bytes(body, 16 << 20).await else {
            return (StatusCode::INTERNAL_SERVER_ERROR, "answer too large").into_response();
        };
        let mut bytes = bytes.to_vec();
        if let Ok(mut answer) = serde_json::from_slice::<Value>(&bytes) {
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            if self.has(Defect::VersionEchoed)
                && request.get("method").and_then(Value::as_str) == Some("initialize")
                && let (Some(asked), Some(result)) =
                    (request.pointer("/params/protocolVersion"), answer.get_mut("result"))
            {
                result["protocolVersion"] = asked.clone();
            }
            if self.has(Defect::PingNonEmpty)
                && request.get("method").and_then(Value::as_str) == Some("ping")
                && let Some(result) = answer.get_mut("result")
            {
                *result = serde_json::json!({ "pong": true });
            }
            if self.has(Defect::ZeroIdDropped) && id == serde_json::json!(0) {
                answer["id"] = Value::Null;
            }
            if self.has(Defect::StringIdAsNumber)
                && let Some(n) = id.as_str().and_then(|s| s.parse::<u64>().ok())
            {
                answer["id"] = n.into();
            }
            if self.has(Defect::ErrorIdNull) && answer.get("error").is_some() {
                answer["id"] = Value::Null;
            }
            let category = answer
                .pointer("/result/structuredContent/data/error/category")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if self.has(Defect::RefusalIdNull) && category.as_deref() == Some("validation") {
                answer["id"] = Value::Null;
            }
            let internal = category.as_deref() == Some("internal");
            if self.has(Defect::ErrorDetailHeader) && internal {
                parts.headers.insert(
                    "x-error-detail",
                    HeaderValue::from_static("postgres://db/chataigne at src/store.rs:42"),
                );
            }
            let tool = request.pointer("/params/name").and_then(Value::as_str);
            if self.has(Defect::ContinuationTextless)
                && request.pointer("/params/arguments/cursor").is_some()
                && let Some(result) = answer.get_mut("result")
            {
                result["content"] = Value::Array(Vec::new());
            }
            if self.has(Defect::AnalyticsTotalsShort)
                && tool == Some("get_analytics")
                && let Some(data) = answer.pointer_mut("/result/structuredContent/data")
            {
                totals_without_last_period(data);
            }
            bytes = answer.to_string().into_bytes();
        }
        parts.headers.remove(header::CONTENT_LENGTH);
        if self.has(Defect::AnswerMislabelled) {
            parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        }
        Response::from_parts(parts, axum::body::Body::from(bytes))
    }
}

/// `analytics-totals-short`: each numeric total less the series' last period.
fn totals_without_last_period(data: &mut Value) {
    let last = data.pointer("/series").and_then(Value::as_array).and_then(|s| s.last()).cloned();
    let (Some(last), Some(totals)) = (last, data.get_mut("totals").and_then(Value::as_object_mut)) else {
        return;
    };
    for (metric, total) in totals.iter_mut() {
        if let (Some(t), Some(l)) =
            (total.as_u64(), last.pointer(&format!("/values/{metric}")).and_then(Value::as_u64))
        {
            *total = t.saturating_sub(l).into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Defect;

    /// One defect or more per clause, each documented for implementers.
    #[test]
    fn every_clause_has_a_documented_defect() {
        let doc = include_str!("../../../docs/DEFECTS.md");
        for clause in chataigne_contract::clauses::CLAUSES {
            assert!(Defect::ALL.iter().any(|d| d.clause() == clause.id), "no defect breaks {}", clause.id);
        }
        for d in Defect::ALL {
            assert!(chataigne_contract::clauses::find(d.clause()).is_some(), "{} names no clause", d.name());
            assert!(
                doc.contains(&format!("| `{}` | {} |", d.name(), d.clause())),
                "{} is not in docs/DEFECTS.md",
                d.name()
            );
            assert_eq!(Defect::parse(d.name()), Some(*d));
        }
    }
}
