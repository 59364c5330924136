//! The catalogue of faults: name, clause, level and what each breaks (`fault_proxy --list`),
//! and the clauses no proxy can break.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Level {
    /// The seed text requires it: `status` of the clause in the report.
    Seed,
    /// An ext clause or a reference choice: `full_status`.
    Full,
}

macro_rules! faults {
    ($($variant:ident = $name:literal, $clause:literal, $level:ident, $what:literal;)*) => {
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        pub(crate) enum Fault { Healthy, $($variant,)* }
        pub(crate) const CATALOGUE: &[(Fault, &str, &str, Level, &str)] = &[
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
    // Batch 4 (`batch4.rs`): surfaces other than a first-page tools/call.
    B4Auth4ResourceForeignOracle = "b4-auth4-resource-foreign-oracle", "AUTH-4", Seed, "resources/read of an existing foreign restaurant is -32603 MCP_RESOURCE_FORBIDDEN, of an absent one -32002 (an existence oracle)";
    B4Auth3CursorPageUnscoped = "b4-auth3-cursor-page-unscoped", "AUTH-3", Seed, "a page reached through a cursor is served to a token of the same user and client that lacks the tool's scope";
    B4Proto1PingStatus = "b4-proto1-ping-status", "PROTO-1", Seed, "ping is answered {\"status\": \"ok\"} instead of an empty result";
    B4Proto1NotificationAnswered = "b4-proto1-notification-answered", "PROTO-1", Seed, "a notification gets HTTP 200 and a JSON-RPC result instead of 202 with no body";
    B4Auth1MetadataNoAuthServer = "b4-auth1-metadata-no-auth-server", "AUTH-1", Seed, "the protected-resource metadata names no authorization server (authorization_servers: [])";
    B4Pag7MessageCursorAuthority = "b4-pag7-message-cursor-authority", "PAG-7", Seed, "get_conversation's message pages reached through a cursor are served after access ended";
    B4Env4ValidationIdDiffers = "b4-env4-validation-id-differs", "ENV-4", Seed, "MCP_INVALID_ARGUMENTS errors carry an error.request_id other than meta.request_id";
    B4Env1ReplayMetaPartial = "b4-env1-replay-meta-partial", "ENV-1", Seed, "replays' meta has no truncated";
    B4Pre2ResourceReadStale = "b4-pre2-resource-read-stale", "PRE-2", Seed, "resources/read of a restaurant shows its status before a set_restaurant_status of the last 30 s";
    B4Env5MismatchValidation = "b4-env5-mismatch-validation", "ENV-5", Seed, "MCP_IDEMPOTENCY_MISMATCH says category validation";
    // Batch 4: edges (units, chunked bodies, calendar, bounds off by one, one tool's check).
    B4Idem1KeyUtf8Bytes = "b4-idem1-key-utf8-bytes", "IDEM-1", Seed, "idempotency keys are measured in UTF-8 bytes: 255 \"é\" are refused, 7 \"é\" accepted";
    B4Env3SummaryCutChars = "b4-env3-summary-cut-chars", "ENV-3", Seed, "send_message and create_instruction summaries quote the text, cut at 4096 characters, not bytes";
    B4Lim1CalendarYear = "b4-lim1-calendar-year", "LIM-1", Seed, "an analytics range must end before from + 1 calendar year: 366 days without a 29 February are refused";
    B4Pag8Limit100Refused = "b4-pag8-limit-100-refused", "PAG-8", Seed, "message_limit 100 is refused (bound checked with <)";
    B4Lim4AnalyticsReadDeadline = "b4-lim4-analytics-read-deadline", "LIM-4", Seed, "get_analytics is held to the read deadline (15 s), not its own 30 s";
    B4Lim7ChunkedUnlimited = "b4-lim7-chunked-unlimited", "LIM-7", Full, "a body over 1 MiB sent chunked (no Content-Length) is read and answered, not 413";
    B4Pag2SearchLimitClamped = "b4-pag2-search-limit-clamped", "PAG-2", Full, "search_transcripts clamps a limit over 50 and takes 0 or less as the default (other lists refuse)";
    B4Auth6StaffSetsStatus = "b4-auth6-staff-sets-status", "AUTH-6", Seed, "set_restaurant_status needs staff, not manager (role bound off by one)";
    B4Idem6ForgottenAtMidnight = "b4-idem6-forgotten-at-midnight", "IDEM-6", Seed, "keys live in a daily partition: forgotten at the next UTC midnight, not after 24 h";
    B4Lim2Write500thRefused = "b4-lim2-write-500th-refused", "LIM-2", Seed, "the 500th write of a minute is refused (>= instead of >)";
    // Batch 4: wrong data in a right envelope.
    B4Pag4TieSkippedAtBoundary = "b4-pag4-tie-skipped-at-boundary", "PAG-4", Seed, "list_orders' cursor keeps created_at only: orders tied with a page's last item are skipped";
    B4Pag1SentinelRow = "b4-pag1-sentinel-row", "PAG-1", Seed, "a full page keeps its last row back as the more-follow sentinel: limit - 1 items (19 by default)";
    B4Idem2ReplayLatestResult = "b4-idem2-replay-latest-result", "IDEM-2", Seed, "a replay returns the caller's latest result of that tool, not the one stored under its key";
    B4Pre2WriteReturnsOldRow = "b4-pre2-write-returns-old-row", "PRE-2", Seed, "update_order_status answers the order as it was before the change (the change is applied)";
    B4Pag4FiltersDroppedLater = "b4-pag4-filters-dropped-later", "PAG-4", Seed, "list_orders pages reached through a cursor ignore status, channel and date filters";
    B4Idem2SentMessageUnseen = "b4-idem2-sent-message-unseen", "IDEM-2", Seed, "get_conversation omits messages sent in the last 30 s (a lagging replica)";
    B4Proto1VersionEcho = "b4-proto1-version-echo", "PROTO-1", Seed, "initialize echoes a protocol version the server does not serve";
    B4Idem3NormalizedArgs = "b4-idem3-normalized-args", "IDEM-3", Seed, "arguments are compared trimmed and lowercased: \"Hello\" then \"hello \" under one key is a replay";
    B4Idem5SharedAcrossUsers = "b4-idem5-shared-across-users", "IDEM-5", Seed, "keys are scoped by OAuth client and tool, not user: another user's same key replays or mismatches";
    B4Proto4AnalyticsStringCents = "b4-proto4-analytics-string-cents", "PROTO-4", Seed, "get_analytics sends its *_cents values as strings";
    // Batch 5 (`batch5.rs`): opaque names (`b5-NN-<clause>`), surfaces, edges and wrong data mixed.
    B501Auth1 = "b5-01-auth1", "AUTH-1", Seed, "a 401 for a token that was sent (invalid, expired) challenges with Bearer error=\"invalid_token\" and no resource_metadata (a missing token still gets it)";
    B502Idem1 = "b5-02-idem1", "IDEM-1", Seed, "idempotency keys are measured in grapheme clusters: 255 flag emoji (510 code points) are accepted, 4 flags (8 code points) refused";
    B503Pag4 = "b5-03-pag4", "PAG-4", Seed, "list_conversations sorts each page by last activity while its cursor walks by created_at (pages not monotone in either)";
    B504Proto1 = "b5-04-proto1", "PROTO-1", Seed, "initialize hands out an Mcp-Session-Id; DELETE answers 204 but the session stays usable (never 404 after it)";
    B505Lim1 = "b5-05-lim1", "LIM-1", Seed, "get_analytics refuses 8 metrics (bound checked with <)";
    B506Auth7 = "b5-06-auth7", "AUTH-7", Seed, "list_organizations reads memberships from the token as issued: a membership revoked since is still listed with its role";
    B507Auth2 = "b5-07-auth2", "AUTH-2", Seed, "a token for another audience is refused on tools/call only: initialize, lists, resources, prompts and ping are served";
    B508Pag8 = "b5-08-pag8", "PAG-8", Seed, "message_limit 100 keeps its look-ahead message: 101 messages (the cursor continues after the 101st)";
    B509Pre2 = "b5-09-pre2", "PRE-2", Seed, "list_orders shows an order's status before its last update for 30 s (a row cache the write does not invalidate; get_order is fresh)";
    B510Proto2 = "b5-10-proto2", "PROTO-2", Seed, "ping answers carry a numeric id as a string";
    B511Idem6 = "b5-11-idem6", "IDEM-6", Seed, "keys expire at the same wall-clock time the next day in Europe/Paris: forgotten after 23 h across the spring change, kept 25 h across the autumn one";
    B512Auth8 = "b5-12-auth8", "AUTH-8", Seed, "send_message checks the role after sending: a viewer is refused MCP_RESOURCE_FORBIDDEN and the message is sent";
    B513Auth4 = "b5-13-auth4", "AUTH-4", Seed, "prompts/get names the restaurant, looked up without a membership check: a foreign one's name is shown, an absent one is -32602";
    B514Lim2 = "b5-14-lim2", "LIM-2", Seed, "get_analytics is rate limited at the write rate: its 501st call of a minute is refused";
    B515Pre3 = "b5-15-pre3", "PRE-3", Seed, "a move that skips lifecycle steps is applied one step at a time: refused, after moving the order one step";
    B516Auth3 = "b5-16-auth3", "AUTH-3", Seed, "a keyed call's replay is served to a token of the same user and client that lacks the tool's scope";
    B517Pre1 = "b5-17-pre1", "PRE-1", Seed, "set_restaurant_status without expected_status reads it from the store and runs (update_order_status still refuses)";
    B518Idem2 = "b5-18-idem2", "IDEM-2", Seed, "a replay answers the stored result but runs the effect again (a second message, instruction, organization or restaurant)";
    B519Sec2 = "b5-19-sec2", "SEC-2", Seed, "an internal error on resources/read names a panic, the database URL and a source path in the JSON-RPC message";
    B520Proto1 = "b5-20-proto1", "PROTO-1", Seed, "Content-Type with a parameter (application/json; charset=utf-8) is refused with 415";
    B521Lim5 = "b5-21-lim5", "LIM-5", Seed, "the cursor of a page cut for size continues at its last item, not after it: the next page repeats it";
    B522Env4 = "b5-22-env4", "ENV-4", Seed, "MCP_RATE_LIMITED errors carry no data.error.request_id (meta has it)";
    B523Proto2 = "b5-23-proto2", "PROTO-2", Seed, "integer ids past 2^53 come back rounded through a double";
    B524Auth3 = "b5-24-auth3", "AUTH-3", Seed, "MCP_SCOPE_REQUIRED of a write names the family's read scope as required_scope";
    B525Abs1 = "b5-25-abs1", "ABS-1", Seed, "tools/list has a second page (nextCursor) offering export_orders, a bulk export";
    B526Pag5 = "b5-26-pag5", "PAG-5", Seed, "a cursor re-encoded in standard base64 or with = padding decodes to the same position and is served";
    B527Idem3 = "b5-27-idem3", "IDEM-3", Seed, "the arguments' fingerprint leaves out restaurant, conversation and organization IDs: the same key and text to another conversation replays the first";
    B528Auth5 = "b5-28-auth5", "AUTH-5", Seed, "resources/templates/list adds chataigne://orders/{order_id}, whose read serves any order by ID, whatever the caller's tenant";
    B529Lim7 = "b5-29-lim7", "LIM-7", Full, "search_transcripts' query is measured in UTF-8 bytes: 101 to 200 characters of \"é\" are refused";
    B530Env2 = "b5-30-env2", "ENV-2", Full, "refusals (invalid arguments, forbidden, not found, scope, cursor) carry one fixed request_id per code";
    // Batch 6 (`batch6.rs`): opaque names (`b6-NN-<clause>`), surfaces, edges and wrong data mixed.
    B601Proto1 = "b6-01-proto1", "PROTO-1", Seed, "GET /mcp (Accept: text/event-stream) answers 200 with a JSON health document, neither an event stream nor 405";
    B602Lim1 = "b6-02-lim1", "LIM-1", Seed, "the analytics range is measured as to - from: 367 days (inclusive) are accepted and computed";
    B603Idem4 = "b6-03-idem4", "IDEM-4", Seed, "the in-progress marker is read before it is written: a duplicate arriving while the first call runs runs too (two effects, no MCP_OPERATION_IN_PROGRESS)";
    B604Auth1 = "b6-04-auth1", "AUTH-1", Seed, "the metadata URL the 401 challenge names (/.well-known/oauth-protected-resource/mcp) is 404; only the root document is routed";
    B605Pag5 = "b6-05-pag5", "PAG-5", Seed, "cursors are looked up case-insensitively (a cursor table with a case-insensitive collation): a cursor with a character's case flipped is served";
    B606Pre2 = "b6-06-pre2", "PRE-2", Seed, "list_orders' status filter reads an index refreshed every 30 s: an order moved since is missing under its new status";
    B607Proto2 = "b6-07-proto2", "PROTO-2", Seed, "-32601 (method not found) answers carry id null with HTTP 200";
    B608Pre1 = "b6-08-pre1", "PRE-1", Seed, "expected_status: null is taken as no precondition: the write runs against the current state (a missing one is still refused)";
    B609Idem3 = "b6-09-idem3", "IDEM-3", Seed, "the key's slot includes the restaurant (or organization): the same key sent for another restaurant with other arguments runs as a new call";
    B610Auth7 = "b6-10-auth7", "AUTH-7", Seed, "resources/read checks membership against a per-token snapshot taken at its first read: a revoked membership's restaurant stays readable";
    B611Idem6 = "b6-11-idem6", "IDEM-6", Seed, "each replay renews the key's 24 h: a key replayed at 23 h still replays at 25 h";
    B612Pre3 = "b6-12-pre3", "PRE-3", Seed, "a move one step back (ready to preparing, preparing to accepted) is accepted, as a kitchen's undo";
    B613Abs1 = "b6-13-abs1", "ABS-1", Seed, "tools/list for protocol version 2025-06-18 still lists cancel_order, which cancels";
    B614Proto5 = "b6-14-proto5", "PROTO-5", Seed, "Origin: null (an opaque origin) is taken for no Origin and served";
    B615Lim3 = "b6-15-lim3", "LIM-3", Seed, "rate windows are kept per (user, tool), not per (client, user, tool): another client of a limited user is refused";
    B616Pag1 = "b6-16-pag1", "PAG-1", Seed, "pages reached through a cursor without limit hold 50 items, not 20";
    B617Abs2 = "b6-17-abs2", "ABS-2", Seed, "update_order_status takes status \"canceled\" (US spelling) as an alias and cancels the order";
    B618Auth4 = "b6-18-auth4", "AUTH-4", Seed, "a membership limited to some restaurants is applied to writes only: reads of the organization's other restaurants are served";
    B619Pag3 = "b6-19-pag3", "PAG-3", Seed, "get_conversation's last page of messages carries a next_cursor, which leads to an empty page";
    B620Proto4 = "b6-20-proto4", "PROTO-4", Seed, "instants the server writes itself (updated_at, sent_at, created_at of new records) carry milliseconds, off the output schema's pattern";
    B621Idem7 = "b6-21-idem7", "IDEM-7", Seed, "a keyed call refused forbidden or not found keeps its key claimed with its arguments: a corrected retry under that key is MCP_IDEMPOTENCY_MISMATCH";
    B622Env1 = "b6-22-env1", "ENV-1", Seed, "pages reached through a cursor carry no text block (content: [])";
    B623Proto3 = "b6-23-proto3", "PROTO-3", Seed, "limit and message_limit written as strings of digits (\"20\") are accepted as numbers";
    B624Auth6 = "b6-24-auth6", "AUTH-6", Seed, "create_restaurant asks for manager, not owner";
    B625Sec2 = "b6-25-sec2", "SEC-2", Seed, "internal errors carry an x-error-detail HTTP header naming the database URL and a source path";
    B626Proto1 = "b6-26-proto1", "PROTO-1", Seed, "an MCP-Protocol-Version header naming a version the server does not serve is served as 2025-11-25, not refused with 400";
    B627Lim4 = "b6-27-lim4", "LIM-4", Seed, "a keyed write that timed out (MCP_OUTCOME_UNKNOWN) releases its key: the retry with the same key runs again (a second effect)";
    B628Env6 = "b6-28-env6", "ENV-6", Full, "MCP_IDEMPOTENCY_MISMATCH quotes the idempotency key";
    B629Lim7 = "b6-29-lim7", "LIM-7", Full, "the body limit is 1 MB (1,000,000 bytes), not 1 MiB: bodies of 1,000,001 to 1,048,576 bytes get 413";
    B630Lim1 = "b6-30-lim1", "LIM-1", Seed, "get_analytics' totals leave out the range's last day (summed over from..to) while the series covers from..=to";
    // Batch 7 (`batch7.rs`): opaque names (`b7-NN-<clause>`), surfaces, edges and wrong data mixed.
    B701Proto1 = "b7-01-proto1", "PROTO-1", Seed, "logging/setLevel is -32601 (method not found) though initialize advertises the logging capability";
    B702Proto2 = "b7-02-proto2", "PROTO-2", Seed, "a request whose id is 0 is taken for a notification: HTTP 202 with no body, never answered";
    B703Auth4 = "b7-03-auth4", "AUTH-4", Seed, "get_analytics skips the membership check: a foreign restaurant's analytics are served (an absent one is still refused)";
    B704Auth3 = "b7-04-auth3", "AUTH-3", Seed, "resources/read of a restaurant checks membership, not scopes: a token without restaurants:read is served";
    B705Pag5 = "b7-05-pag5", "PAG-5", Seed, "cursors are percent-decoded before they are looked up: a cursor with a character written %XX is served as the original";
    B706Pre2 = "b7-06-pre2", "PRE-2", Seed, "list_restaurants shows a restaurant's status before its last set_restaurant_status for 30 s (get_restaurant is fresh)";
    B707Proto2 = "b7-07-proto2", "PROTO-2", Seed, "prompts/get of an unknown prompt is -32603 (internal error) instead of -32602";
    B708Proto3 = "b7-08-proto3", "PROTO-3", Seed, "limit and message_limit with a fractional part (20.5) are truncated and served instead of refused";
    B709Auth6 = "b7-09-auth6", "AUTH-6", Seed, "create_instruction asks for staff, not manager";
    B710Pag8 = "b7-10-pag8", "PAG-8", Seed, "a page of messages reached through a cursor returns every message left (over 100), with no next_cursor";
    B711Idem6 = "b7-11-idem6", "IDEM-6", Seed, "the key's time to live is 86,400 written in milliseconds: keys are forgotten after 86.4 s";
    B712Idem7 = "b7-12-idem7", "IDEM-7", Full, "a keyed call that failed with MCP_DEPENDENCY_UNAVAILABLE is stored: its retry with the same key replays the failure";
    B713Auth1 = "b7-13-auth1", "AUTH-1", Seed, "the protected-resource metadata's resource is the endpoint URL with a trailing slash (/mcp/)";
    B714Proto5 = "b7-14-proto5", "PROTO-5", Seed, "the Origin allow-list is matched with ends_with(\"localhost\"): http://evil-localhost is served";
    B715Env5 = "b7-15-env5", "ENV-5", Seed, "MCP_CURSOR_INVALID says category not_found";
    B716Env1 = "b7-16-env1", "ENV-1", Seed, "replays of keyed calls carry no text block (content: [])";
    B717Idem1 = "b7-17-idem1", "IDEM-1", Seed, "idempotency keys are NFC-normalized before their length is checked: 255 \"é\" written decomposed (510 code points) are accepted";
    B718Idem3 = "b7-18-idem3", "IDEM-3", Seed, "idempotency keys are compared case-insensitively: a key differing only in case with other arguments is MCP_IDEMPOTENCY_MISMATCH";
    B719Env4 = "b7-19-env4", "ENV-4", Seed, "errors that are not retryable leave retryable out (serialized only when true)";
    B720Auth2 = "b7-20-auth2", "AUTH-2", Seed, "the token's audience is checked with ends_with(\"/mcp\"): a token for https://other.example.com/mcp is served";
    B721Pag6 = "b7-21-pag6", "PAG-6", Seed, "a cursor issued by another list tool is accepted (the list starts again) instead of MCP_CURSOR_INVALID";
    B722Env6 = "b7-22-env6", "ENV-6", Full, "MCP_CURSOR_INVALID's message quotes the cursor's first 12 characters";
    B723Lim2 = "b7-23-lim2", "LIM-2", Full, "retry_after_ms is whole seconds rounded down: 0 in the window's last second";
    B724Pag4 = "b7-24-pag4", "PAG-4", Seed, "search_transcripts joins each transcript of a page to the query's occurrences after the page is cut: one that holds it twice is listed twice";
    B725Proto1 = "b7-25-proto1", "PROTO-1", Seed, "a JSON-RPC response posted by the client gets HTTP 200 with a -32600 error body, neither 202 nor a 4xx";
    B726Env2 = "b7-26-env2", "ENV-2", Full, "error answers' request_id has 15 characters after req_ (one short of the pattern)";
    B727Abs1 = "b7-27-abs1", "ABS-1", Seed, "tools/list offers void_order, whose description says it cancels the order and refunds the customer";
    B728Auth7 = "b7-28-auth7", "AUTH-7", Seed, "list_restaurants without organization_id reads memberships without their revocation: a revoked organization's restaurants are listed";
    B729Lim7 = "b7-29-lim7", "LIM-7", Full, "a body of exactly 1 MiB gets 413 (the limit checked with >=)";
    B730Idem4 = "b7-30-idem4", "IDEM-4", Seed, "MCP_OPERATION_IN_PROGRESS says retryable: false";
    // Batch 8 (`batch8.rs`): opaque names (`b8-NN-<clause>`), surfaces, edges and wrong data mixed.
    B801Proto2 = "b8-01-proto2", "PROTO-2", Seed, "a JSON array body is taken for a batch: HTTP 200 with an array of answers, each member run, instead of a 4xx that runs nothing";
    B802Proto5 = "b8-02-proto5", "PROTO-5", Seed, "the Origin check lives in the POST handler: GET and DELETE /mcp with a foreign Origin are answered as without one, not 403";
    B803Auth1 = "b8-03-auth1", "AUTH-1", Seed, "GET and DELETE /mcp without a token get a bare 401, with no WWW-Authenticate challenge (POST still has it)";
    B804Env4 = "b8-04-env4", "ENV-4", Seed, "a read past its deadline is answered by the framework's request timeout: a JSON-RPC error -32001, not a tool result with isError";
    B805Env2 = "b8-05-env2", "ENV-2", Full, "tool errors carry no x-request-id header (the success path sets it)";
    B806Pag7 = "b8-06-pag7", "PAG-7", Seed, "a page reached through a cursor after access ended is an empty success with no next_cursor, not MCP_RESOURCE_FORBIDDEN";
    B807Auth4 = "b8-07-auth4", "AUTH-4", Seed, "resources/read of a restaurant the tool refuses (foreign, absent, any refusal) is a result with no contents, not a JSON-RPC error";
    B808Proto1 = "b8-08-proto1", "PROTO-1", Seed, "on revision 2026-07-28, Mcp-Name is compared with the body on tools/call only: a prompts/get or resources/read whose Mcp-Name names something else is served, not 400";
    B809Sec2 = "b8-09-sec2", "SEC-2", Seed, "an internal error is answered HTTP 500 with the framework's HTML debug page: panic message, database URL, source path and backtrace";
    B810Auth1 = "b8-10-auth1", "AUTH-1", Seed, "the protected-resource metadata's scopes_supported lists the read scopes only (a list written before the write tools)";
    B811Proto2 = "b8-11-proto2", "PROTO-2", Seed, "method names are lower-cased before routing: Tools/List or PING are served instead of -32601";
    B812Proto3 = "b8-12-proto3", "PROTO-3", Seed, "arguments given null are dropped before validation (channel: null, limit: null… are served as absent) instead of refused";
    B813Pag1 = "b8-13-pag1", "PAG-1", Seed, "lists without limit return 21 items (the look-ahead row of LIMIT 21 is returned with the page)";
    B814Pag5 = "b8-14-pag5", "PAG-5", Seed, "cursors are trimmed like every string argument: a cursor with a blank or newline around it is served";
    B815Pag8 = "b8-15-pag8", "PAG-8", Seed, "message_limit 0 is taken as absent (message_limit || 50): 50 messages instead of a refusal";
    B816Lim1 = "b8-16-lim1", "LIM-1", Seed, "the range is checked as to - from >= 0 days: a to one day before from is served as an empty range";
    B817Lim7 = "b8-17-lim7", "LIM-7", Full, "message and instruction texts are measured after CRLF is normalized to LF: over 2000 characters with CRLF line endings are accepted";
    B818Idem1 = "b8-18-idem1", "IDEM-1", Seed, "idempotency keys over 255 characters are cut to 255 (a VARCHAR(255) column) and accepted";
    B819Idem4 = "b8-19-idem4", "IDEM-4", Seed, "the in-progress marker is removed 5 s after the call answered: an identical retry in those 5 s gets MCP_OPERATION_IN_PROGRESS instead of the replay";
    B820Pag3 = "b8-20-pag3", "PAG-3", Seed, "next_cursor is given only when a full page follows (has_more = next page's length >= page size): a shorter last page is never reached";
    B821Env5 = "b8-21-env5", "ENV-5", Seed, "ORDER_STATUS_PRECONDITION_FAILED says retryable: true";
    B822Pag4 = "b8-22-pag4", "PAG-4", Seed, "list_orders with two or more statuses sorts each page by status (in the filter's order), then newest first: the walk is not monotone in created_at";
    B823Lim5 = "b8-23-lim5", "LIM-5", Seed, "every page that has a next_cursor says truncated: true, cut for size or not";
    B824Pre2 = "b8-24-pre2", "PRE-2", Seed, "update_order_status reads the precondition from a replica 30 s behind: right after a move, the next move with the status reads show is MCP_EXPECTED_STATE_MISMATCH";
    B825Pre4 = "b8-25-pre4", "PRE-4", Seed, "two moves of one order within 300 ms deadlock and both are refused ORDER_STATUS_PRECONDITION_FAILED: neither succeeds";
    B826Idem2 = "b8-26-idem2", "IDEM-2", Seed, "a replay of create_organization inserts its creator's membership again: the organization is listed once more per replay";
    B827Auth3 = "b8-27-auth3", "AUTH-3", Seed, "create_organization checks no scope (its role \"any\" read as no requirement): a token without organizations:write creates one";
    B828Auth6 = "b8-28-auth6", "AUTH-6", Seed, "update_order_status asks for manager, not staff: staff are refused MCP_RESOURCE_FORBIDDEN";
    B829Idem3 = "b8-29-idem3", "IDEM-3", Seed, "the arguments' fingerprint keeps a text's first 100 characters: the same key with a text differing after them replays the first result";
    B830Auth7 = "b8-30-auth7", "AUTH-7", Seed, "access refusals are cached 60 s per token and restaurant: a membership restored meanwhile is still refused";
    // Batch 9 (`batch9.rs`): opaque names (`b9-NN-<clause>`), surfaces, edges and wrong data mixed.
    B901Proto1 = "b9-01-proto1", "PROTO-1", Seed, "initialize asking for a protocol version the server does not serve is refused with JSON-RPC -32602 (Unsupported protocol version), instead of answered with a version it serves";
    B902Proto2 = "b9-02-proto2", "PROTO-2", Seed, "prompts/get of a prompt the server does not have falls back to the first prompt it lists (a result, with the arguments given), instead of a JSON-RPC error";
    B903Env2 = "b9-03-env2", "ENV-2", Full, "pages reached through a cursor carry the request_id of their walk's first page (kept with the cursor), in the envelope and the x-request-id header";
    B904Env4 = "b9-04-env4", "ENV-4", Seed, "on protocol revision 2025-06-18 tool errors carry no structuredContent (only isError and the text block): structured output is sent for later revisions only";
    B905Lim4 = "b9-05-lim4", "LIM-4", Seed, "resources/read of a restaurant runs outside the tool's deadline: past it the read waits and answers the restaurant, instead of an error carrying MCP_TOOL_TIMEOUT";
    B906Idem2 = "b9-06-idem2", "IDEM-2", Seed, "on revision 2026-07-28 (no session) keyed calls are never replayed: the key's slot includes the session, new for every stateless request, so a retry runs again";
    B907Auth1 = "b9-07-auth1", "AUTH-1", Seed, "the protected-resource metadata's authorization_servers names the authorization endpoint (<issuer>/oauth/authorize) instead of the issuer";
    B908Abs1 = "b9-08-abs1", "ABS-1", Seed, "resources/templates/list adds chataigne://exports/{restaurant_id}/orders.csv, whose read returns every order of the restaurant as CSV (a bulk export)";
    B909Sec2 = "b9-09-sec2", "SEC-2", Seed, "an internal error is answered as an event stream whose first event is a notifications/message log (level error) carrying the panic, the database URL and a backtrace, then the tool result";
    B910Proto4 = "b9-10-proto4", "PROTO-4", Seed, "tool errors without a retry delay say retry_after_ms: 0 (a field with a default, always serialized), below the output schema's minimum of 1";
    B911Proto5 = "b9-11-proto5", "PROTO-5", Seed, "the Host check reads X-Forwarded-Host when a request has one: a foreign Host with X-Forwarded-Host: localhost is served";
    B912Env5 = "b9-12-env5", "ENV-5", Seed, "MCP_RATE_LIMITED says category \"rate_limited\" (its enum name), which is none of the nine categories";
    B913Pag2 = "b9-13-pag2", "PAG-2", Full, "limit is read as a 64-bit integer then cast to 32 bits: 4294967316 (2^32 + 20) is served as 20, 2^32 + 50 as 50, instead of refused";
    B914Pag5 = "b9-14-pag5", "PAG-5", Seed, "the cursor's MAC covers its binding, not its position: a cursor whose position was re-encoded (another created_at and id, tag kept) is served from there";
    B915Lim1 = "b9-15-lim1", "LIM-1", Seed, "the 366-day bound is applied to daily series only: with granularity week or month a range of up to 10 years is computed and served";
    B916Lim7 = "b9-16-lim7", "LIM-7", Full, "the 1 MiB body limit is checked on the message re-serialized after parsing: a body over 1 MiB padded with whitespace is served";
    B917Pre3 = "b9-17-pre3", "PRE-3", Seed, "the lifecycle's steps are walked one window short: ready → completed is refused ORDER_STATUS_PRECONDITION_FAILED, so no order can be completed";
    B918Idem1 = "b9-18-idem1", "IDEM-1", Seed, "an idempotency_key given as a JSON number is accepted as its decimal text (12345678 runs as \"12345678\")";
    B919Auth1 = "b9-19-auth1", "AUTH-1", Seed, "an Authorization header with another scheme than Bearer (Basic, Token…) gets 400 invalid_request with no WWW-Authenticate challenge, instead of 401";
    B920Auth3 = "b9-20-auth3", "AUTH-3", Seed, "a token whose scope list is empty is taken as unrestricted (like a token without a scope claim): it is served every tool";
    B921Env5 = "b9-21-env5", "ENV-5", Seed, "MCP_RESOURCE_NOT_FOUND raised by writes (update_order_status, send_message…) says category validation, while reads say not_found";
    B922Pag4 = "b9-22-pag4", "PAG-4", Seed, "cursors hold a page number: a page starts at page × the limit it is asked with, so a walk that changes limit between pages skips or repeats items (pages cut for size keep their offset)";
    B923Pag8 = "b9-23-pag8", "PAG-8", Seed, "get_conversation's next_cursor continues after a default page of 50 messages whatever message_limit was: 20 skips 30 messages, 100 repeats 50";
    B924Lim2 = "b9-24-lim2", "LIM-2", Seed, "rate windows are kept per (client, user, tool, restaurant): each restaurant gets its own 1000 reads (500 writes) a minute";
    B925Pre2 = "b9-25-pre2", "PRE-2", Seed, "get_order answers are cached 30 s per user and a write invalidates its writer's entry only: another user who read the order before a move still reads the old status";
    B926Pre3 = "b9-26-pre3", "PRE-3", Seed, "a cancelled or rejected order can be moved to accepted (states outside the lifecycle get the first step's index), then along the lifecycle";
    B927Idem2 = "b9-27-idem2", "IDEM-2", Seed, "a replay renders the stored result again with a freshly minted ID for the record it created (no second record: the ID names nothing)";
    B928Idem6 = "b9-28-idem6", "IDEM-6", Seed, "stored results expire after 24 h but their claim does not: the same key after 24 h gets MCP_OPERATION_IN_PROGRESS instead of running as a new call";
    B929Auth6 = "b9-29-auth6", "AUTH-6", Seed, "the role checked is the caller's highest over all their memberships: a viewer or staff who owns another organization may move orders, send messages, pause restaurants and create restaurants";
    B930Abs2 = "b9-30-abs2", "ABS-2", Seed, "set_restaurant_status from open to paused also rejects the restaurant's received orders: reads show them rejected and they can no longer be accepted";
    // Batch 10 (`batch10.rs`, on `common.rs`): opaque names (`b10-NN-<clause>`), surfaces, edges and wrong data mixed.
    B1001Proto2 = "b10-01-proto2", "PROTO-2", Seed, "JSON-RPC error answers to a request whose id is a string of digits (\"42\") carry the id as a number (42); results keep the string";
    B1002Pag2 = "b10-02-pag2", "PAG-2", Full, "a list's limit of exactly 50 is refused MCP_INVALID_ARGUMENTS (the maximum checked with <): 1 to 49 are served";
    B1003Abs2 = "b10-03-abs2", "ABS-2", Seed, "create_restaurant with the name of a restaurant the organization already has replaces it: the old restaurant is deleted (gone from list_restaurants, refused MCP_RESOURCE_FORBIDDEN everywhere)";
    B1004Proto1 = "b10-04-proto1", "PROTO-1", Seed, "on revision 2025-06-18, tools/call answers are sent as text/event-stream whose one event is never ended (no blank line after its data line)";
    B1005Lim7 = "b10-05-lim7", "LIM-7", Full, "send_message and create_instruction texts are measured in UTF-16 code units: 1001 to 2000 characters outside the BMP (emoji) are refused";
    B1006Pag4 = "b10-06-pag4", "PAG-4", Seed, "list_orders with created_from or created_to continues a page with >= on the cursor's position: every page reached through a cursor starts with the previous page's last order again";
    B1007Env1 = "b10-07-env1", "ENV-1", Seed, "get_analytics successes carry two text blocks: the summary, then the series as a CSV table";
    B1008Auth1 = "b10-08-auth1", "AUTH-1", Seed, "the Authorization scheme is matched case-sensitively: a valid token sent as \"bearer <token>\" or \"BEARER <token>\" is taken for no token (401)";
    B1009Pre2 = "b10-09-pre2", "PRE-2", Seed, "update_order_status whose target is already the order's status succeeds whatever expected_status says: a stale expected_status (received, for an order already accepted) is acknowledged, not refused";
    B1010Pag6 = "b10-10-pag6", "PAG-6", Seed, "get_conversation's message cursor is bound to the restaurant, not the conversation: used with another conversation_id it continues the first conversation's messages";
    B1011Env5 = "b10-11-env5", "ENV-5", Seed, "MCP_RESOURCE_NOT_FOUND for a child that exists in another organization says category authorization (an absent child says not_found)";
    B1012Idem3 = "b10-12-idem3", "IDEM-3", Seed, "create_restaurant's arguments' fingerprint leaves out timezone: the same key with another timezone replays the first restaurant instead of MCP_IDEMPOTENCY_MISMATCH";
    B1013Env5 = "b10-13-env5", "ENV-5", Seed, "MCP_OUTPUT_TOO_LARGE says category internal";
    B1014Lim1 = "b10-14-lim1", "LIM-1", Seed, "get_analytics refuses a one-day range (from equal to to) as empty, MCP_INVALID_ARGUMENTS: the range is checked as to > from";
    B1015Pag1 = "b10-15-pag1", "PAG-1", Seed, "list_orders with several statuses and no limit returns 20 orders per status asked (40 for two, at most 50)";
    B1016Auth4 = "b10-16-auth4", "AUTH-4", Seed, "set_restaurant_status compares expected_status before checking membership: on a foreign restaurant a wrong expected_status is MCP_EXPECTED_STATE_MISMATCH (a right one MCP_RESOURCE_FORBIDDEN), telling its status";
    B1017Idem1 = "b10-17-idem1", "IDEM-1", Seed, "an idempotency_key of exactly 8 characters is refused MCP_INVALID_ARGUMENTS (the minimum checked with >)";
    B1018Pre3 = "b10-18-pre3", "PRE-3", Full, "update_order_status skipping lifecycle steps forward (received to ready) is applied, walking the steps in between";
    B1019Auth7 = "b10-19-auth7", "AUTH-7", Seed, "search_transcripts reads memberships without their revocation: a revoked member still searches the organization's transcripts (other tools refuse them)";
    B1020Proto5 = "b10-20-proto5", "PROTO-5", Seed, "a request carrying Sec-Fetch-Site: same-origin skips the Origin check: a foreign Origin with that header is served";
    B1021Auth4 = "b10-21-auth4", "AUTH-4", Seed, "a membership limited to some restaurants is applied to reads only: its staff move orders and send messages in the organization's other restaurants";
    B1022Sec2 = "b10-22-sec2", "SEC-2", Seed, "an internal error on a page reached through a cursor quotes the keyset query in its message: SQL with the decoded cursor's created_at and id";
    B1023Lim5 = "b10-23-lim5", "LIM-5", Seed, "a page cut for size has no next_cursor when the uncut page would have been the last: the orders after the cut are never reached";
    B1024Idem6 = "b10-24-idem6", "IDEM-6", Seed, "expired keys are removed by an hourly sweep, not at read time: for the hour after its 24 h a key is still replayed (the same key runs as a new call only from 25 h)";
    B1025Abs1 = "b10-25-abs1", "ABS-1", Seed, "tools/list answered to a caller who owns an organization adds reset_staff_password (credentials); other callers see the plain list";
    B1026Env2 = "b10-26-env2", "ENV-2", Full, "request_ids are req_ then 15 random bytes in base64url: about half hold - or _, off ^req_[0-9A-Za-z]{16,}$";
    B1027Proto3 = "b10-27-proto3", "PROTO-3", Seed, "read tools drop arguments their input schema does not know before validation (the schemas still say additionalProperties: false); writes refuse them";
    B1028Idem2 = "b10-28-idem2", "IDEM-2", Seed, "keyed arguments are compared as sent: a retry whose text writes a non-ASCII character as a \\u escape (or the first did) is MCP_IDEMPOTENCY_MISMATCH instead of the replay";
    B1029Pre1 = "b10-29-pre1", "PRE-1", Seed, "expected_status \"\" (empty string) is taken as no precondition: the write runs against the current state";
    B1030Abs2 = "b10-30-abs2", "ABS-2", Seed, "send_message also sends its text to every other open conversation of the restaurant (a broadcast: a campaign through an exposed tool)";
    // Batch 11 (`batch11.rs`, on `common.rs`): opaque names (`b11-NN-<clause>`), surfaces, edges and wrong data mixed.
    B1101Proto2 = "b11-01-proto2", "PROTO-2", Seed, "resources/read of a URI the server does not have (no handler matches it) falls through to the first resource listed: the contract document is answered, not a JSON-RPC error";
    B1102Pag4 = "b11-02-pag4", "PAG-4", Seed, "list_orders pages reached through a cursor without a status filter leave out cancelled and rejected orders (the continuation query carries the kitchen view's active-orders default): a walk misses them";
    B1103Idem1 = "b11-03-idem1", "IDEM-1", Seed, "an idempotency_key given as the empty string is taken as missing and one is made up: the keyed write runs (and can never be replayed) instead of MCP_INVALID_ARGUMENTS";
    B1104Auth1 = "b11-04-auth1", "AUTH-1", Seed, "notifications are accepted before the authentication middleware: a notification with no token gets 202, not 401 with the challenge";
    B1105Lim5 = "b11-05-lim5", "LIM-5", Seed, "a page cut for size drops its largest items to fit (not its tail) while its next_cursor continues after the last item returned: the dropped orders are never reached";
    B1106Proto2 = "b11-06-proto2", "PROTO-2", Seed, "a request whose id is the empty string \"\" is answered with id null (the id taken as absent when falsy)";
    B1107Env4 = "b11-07-env4", "ENV-4", Seed, "MCP_CURSOR_INVALID errors carry an error.request_id of their own, other than meta.request_id";
    B1108Pre1 = "b11-08-pre1", "PRE-1", Seed, "update_order_status to accepted also accepts the restaurant's next received order (a queue shortcut): another order changes state without any expected_status";
    B1109Lim1 = "b11-09-lim1", "LIM-1", Seed, "get_analytics with granularity month bounds the range at 12 monthly buckets: a range within 366 days that touches 13 calendar months is refused MCP_INVALID_ARGUMENTS";
    B1110Auth5 = "b11-10-auth5", "AUTH-5", Seed, "prompts/get answer_a_guest quotes the conversation's latest message, read by conversation ID alone: another tenant's conversation's message is shown";
    B1111Env2 = "b11-11-env2", "ENV-2", Full, "get_* reads are answered from a 2-second cache of whole answers: the same read by the same caller within 2 s repeats the first answer's request_id";
    B1112Proto1 = "b11-12-proto1", "PROTO-1", Seed, "initialize hands out an Mcp-Session-Id holding a space (\"chataigne <hex>\"), outside visible ASCII";
    B1113Pag1 = "b11-13-pag1", "PAG-1", Seed, "on protocol revision 2025-06-18 lists without limit (and without cursor) return 50 items, not 20 (the older handler's default)";
    B1114Abs2 = "b11-14-abs2", "ABS-2", Seed, "create_instruction whose text asks to cancel an order it names (cancel/annuler ord_…) cancels it: reads show it cancelled and it can no longer be moved";
    B1115Idem3 = "b11-15-idem3", "IDEM-3", Seed, "the arguments' fingerprint composes accents first: the same key with a text written decomposed (e + U+0301) where the first was precomposed (é) replays instead of MCP_IDEMPOTENCY_MISMATCH";
    B1116Lim7 = "b11-16-lim7", "LIM-7", Full, "a notification body over 1 MiB is acknowledged 202 before the body limit is applied, instead of 413";
    B1117Pre2 = "b11-17-pre2", "PRE-2", Seed, "list_orders' status filter keeps a moved order under its old status for 30 s (the row shows its new status): an order just accepted is still listed under received";
    B1118Env1 = "b11-18-env1", "ENV-1", Seed, "a list answer with no items carries no text block (content: [])";
    B1119Sec2 = "b11-19-sec2", "SEC-2", Seed, "internal errors of keyed writes quote the idempotency store's failure: a redis URL with its password and a source path";
    B1120Auth8 = "b11-20-auth8", "AUTH-8", Seed, "set_restaurant_status applies the change before checking the scope: a token without restaurants:write is refused MCP_SCOPE_REQUIRED, but the restaurant's status changed";
    B1121Auth4 = "b11-21-auth4", "AUTH-4", Seed, "restaurant and organization IDs are looked up case-insensitively: rst_CENTRAL (which does not exist) is served as rst_central instead of MCP_RESOURCE_FORBIDDEN";
    B1122Idem4 = "b11-22-idem4", "IDEM-4", Seed, "create_organization takes no in-progress claim (the claim locks a restaurant row): an identical call while the first runs runs too, two organizations";
    B1123Pre3 = "b11-23-pre3", "PRE-3", Seed, "a completed order can be reopened: completed to accepted is applied (reads show it accepted) instead of refused";
    B1124Proto4 = "b11-24-proto4", "PROTO-4", Seed, "retry_after_ms is sent as computed in float milliseconds (e.g. 999.5), off the output schema's integer";
    B1125Abs1 = "b11-25-abs1", "ABS-1", Seed, "tools/list answered to a caller on any OAuth client but the first adds sync_orders_to_provider (provider synchronization)";
    B1126Idem2 = "b11-26-idem2", "IDEM-2", Seed, "a keyed result reaches the store 1 s after its answer (write-behind): a retry with the same key and arguments within that second runs again (a second effect, replayed false)";
    B1127Sec2 = "b11-27-sec2", "SEC-2", Seed, "an internal error caused by a panic carries the panic's message and source location (other internal errors stay clean)";
    B1128Env3 = "b11-28-env3", "ENV-3", Seed, "MCP_INVALID_ARGUMENTS errors' text block carries the tool's whole descriptor pretty-printed, far over 4 KiB";
    B1129Pag3 = "b11-29-pag3", "PAG-3", Seed, "lists filtered by channel compute has_more before the filter: their last page carries a next_cursor, which leads to an empty page";
    B1130Lim6 = "b11-30-lim6", "LIM-6", Seed, "on protocol revision 2025-06-18 get_transcript never measures its output: a transcript over 128 KiB is served whole instead of MCP_OUTPUT_TOO_LARGE";
    // Batch 12 (`batch12.rs`, on `common.rs`): opaque names (`b12-NN-<clause>`), surfaces, edges and wrong data mixed.
    B1201Proto1 = "b12-01-proto1", "PROTO-1", Seed, "only POST /mcp is routed: an authenticated GET /mcp (Accept: text/event-stream) answers 404 with an HTML \"Cannot GET /mcp\" page, neither an event stream nor 405";
    B1202Idem2 = "b12-02-idem2", "IDEM-2", Seed, "keyed calls are also deduplicated by their arguments for 24 h (a double-send guard): a new key with the same arguments as a call that ran (the same text to the same conversation) replays its result instead of running";
    B1203Pag5 = "b12-03-pag5", "PAG-5", Seed, "cursors are decoded by a lenient base64 decoder that ignores the last character's unused bits: a cursor whose last character is changed within them is served as the original";
    B1204Auth1 = "b12-04-auth1", "AUTH-1", Seed, "static content is served before the authentication middleware: prompts/list, prompts/get, resources/list, resources/templates/list and the contract's resources/read answer without a token instead of 401";
    B1205Pre2 = "b12-05-pre2", "PRE-2", Seed, "update_order_status writes the order cache before the store's compare-and-set and keeps it when refused: after MCP_EXPECTED_STATE_MISMATCH, get_order and list_orders show the refused target";
    B1206Lim1 = "b12-06-lim1", "LIM-1", Seed, "get_analytics measures the range between local midnights in Europe/Paris (floor of seconds / 86,400, plus one): a 367-day range from winter to summer time (2025-03-29..=2026-03-30) counts 366 and is served";
    B1207Env5 = "b12-07-env5", "ENV-5", Seed, "MCP_TOOL_TIMEOUT says retryable: false (timeouts filed like a write's MCP_OUTCOME_UNKNOWN)";
    B1208Auth5 = "b12-08-auth5", "AUTH-5", Seed, "list_conversations' first page with a channel filter reads the channel index, which has no restaurant column: that channel's conversations of every restaurant, the other tenant's included, are listed";
    B1209Proto3 = "b12-09-proto3", "PROTO-3", Seed, "list_orders takes a status given as a single string (\"received\") for a one-item array, though its published schema says array";
    B1210Idem5 = "b12-10-idem5", "IDEM-5", Seed, "the in-progress marker is keyed by OAuth client, tool and key, without the user: another user of the same client sending the same key while the first call runs gets MCP_OPERATION_IN_PROGRESS";
    B1211Pag4 = "b12-11-pag4", "PAG-4", Seed, "list_restaurants' cursor keeps the page's last name (the console's sort) while pages come newest first: a page reached through a cursor drops every restaurant whose name sorts after it (a walk at limit 1 skips rst_large)";
    B1212Lim7 = "b12-12-lim7", "LIM-7", Full, "create_organization and create_restaurant refuse a name of exactly 120 characters (the maximum checked with <)";
    B1213Proto5 = "b12-13-proto5", "PROTO-5", Seed, "the Origin check runs for requests (with an id) only: a notification with a foreign Origin gets 202, not 403";
    B1214Abs2 = "b12-14-abs2", "ABS-2", Seed, "accepting an order of a paused restaurant rejects it (the closed-shop rule): the answer and later reads show it rejected, and it can no longer be moved";
    B1215Env2 = "b12-15-env2", "ENV-2", Full, "a request carrying its own x-request-id gets it back in the x-request-id header (the tracing middleware's), while the envelope has the server's request_id";
    B1216Pre4 = "b12-16-pre4", "PRE-4", Seed, "set_restaurant_status takes no compare-and-set: of two racing pauses of one restaurant with the same expected_status, the loser is told it succeeded";
    B1217Idem3 = "b12-17-idem3", "IDEM-3", Seed, "the fingerprint is compared when the result is stored, after the effect: the same key with other arguments is refused MCP_IDEMPOTENCY_MISMATCH, but the second effect happened (a second message or instruction)";
    B1218Lim2 = "b12-18-lim2", "LIM-2", Seed, "keyed writes count twice against the write rate (the claim and the commit each hit the limiter): the 251st keyed call of a minute is refused MCP_RATE_LIMITED";
    B1219Env1 = "b12-19-env1", "ENV-1", Seed, "update_order_status and set_restaurant_status successes carry no meta.replayed (set by the idempotency layer, which unkeyed writes skip)";
    B1220Pag3 = "b12-20-pag3", "PAG-3", Seed, "list_instructions never gives a next_cursor (its query has a LIMIT and no look-ahead row): with limit 2 of rst_central's 5 instructions, the rest cannot be reached";
    B1221Idem1 = "b12-21-idem1", "IDEM-1", Seed, "the idempotency_key's length is checked after trimming: a key of 8 to 255 characters with blanks around it, under 8 once trimmed, is refused MCP_INVALID_ARGUMENTS";
    B1222Auth2 = "b12-22-auth2", "AUTH-2", Seed, "the token's audience is checked by the JSON-RPC handler: GET and DELETE /mcp with a token issued for another resource are answered as with a valid one (405), not 401";
    B1223Pre1 = "b12-23-pre1", "PRE-1", Seed, "pausing a restaurant pauses every open restaurant of its organization (the console's pause-all): other restaurants change state without any expected_status";
    B1224Proto4 = "b12-24-proto4", "PROTO-4", Seed, "get_analytics with granularity week or month writes period_start as a midnight timestamp (2026-01-01T00:00:00Z), off the output schema's date pattern; daily series keep dates";
    B1225Sec2 = "b12-25-sec2", "SEC-2", Seed, "internal errors carry the developer console's debug metadata in the result's _meta (outside structuredContent): a database URL with its password, a SQL statement and a source path";
    B1226Env7 = "b12-26-env7", "ENV-7", Full, "create_instruction answers the insert's RETURNING list, data.instruction with id, text and created_at only (no restaurant_id, no created_by); its published output schema says so";
    B1227Pag8 = "b12-27-pag8", "PAG-8", Full, "get_conversation without message_limit returns 100 messages, the largest page, instead of 50";
    B1228Lim7 = "b12-28-lim7", "LIM-7", Full, "the 1 MiB body limit lives in the tools/call handler: other requests over 1 MiB (a ping or initialize padded in _meta) are read whole and answered, not 413";
    B1229Auth8 = "b12-29-auth8", "AUTH-8", Seed, "update_order_status runs the store's update before the tenant check: a caller with no membership in the restaurant's organization is refused MCP_RESOURCE_FORBIDDEN, but the order moved";
    B1230Pre1 = "b12-30-pre1", "PRE-1", Seed, "on protocol revision 2025-06-18 update_order_status takes expected_status as optional (the older schema): without it the move runs against the store's status instead of MCP_INVALID_ARGUMENTS";
}

/// Clauses no rewrite of the wire can break: what the server writes to its own log or store.
pub(crate) const NOT_EXPRESSIBLE: &[(&str, &str)] = &[
    ("SEC-1", "log contents are the server's own"),
    ("IDEM-8", "key storage and the log are the server's own"),
];

impl Fault {
    /// The contract area of the clause it breaks (`PAG-4` → `PAG`); `-` for `none`.
    pub(crate) fn area(self) -> &'static str {
        let clause = CATALOGUE.iter().find(|(f, ..)| *f == self).map_or("-", |(_, _, clause, ..)| *clause);
        clause.split('-').next().unwrap_or("-")
    }
}
