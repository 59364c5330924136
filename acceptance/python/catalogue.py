"""The seventeen tools of the Chataigne contract (CONTRACT.md §10): what each one needs, and the
JSON Schemas (2020-12) that tools/list publishes and that every call is validated against."""

from __future__ import annotations

from dataclasses import dataclass

DIALECT = "https://json-schema.org/draft/2020-12/schema"

SCOPES = [
    "organizations:read", "organizations:write", "restaurants:read", "restaurants:write",
    "orders:read", "orders:write", "conversations:read", "messages:write",
    "transcripts:read", "instructions:read", "instructions:write", "analytics:read",
]
ROLES = ["viewer", "staff", "manager", "owner"]
ORDER_STATUSES = ["received", "accepted", "preparing", "ready", "completed", "cancelled", "rejected"]
LIFECYCLE = ["received", "accepted", "preparing", "ready", "completed"]
ORDER_CHANNELS = ["phone", "web", "app", "marketplace"]
RESTAURANT_STATUSES = ["open", "paused"]
CONVERSATION_STATUSES = ["open", "closed"]
CONVERSATION_CHANNELS = ["sms", "whatsapp", "webchat"]
METRICS = [
    "orders_count", "revenue_cents", "average_order_cents", "completed_orders",
    "conversations_count", "messages_received", "messages_sent", "median_first_response_s",
    "new_customers", "repeat_customers",
]
GRANULARITIES = ["day", "week", "month"]

# §9: code -> (category, retryable)
CODES = {
    "MCP_INVALID_ARGUMENTS": ("validation", False),
    "MCP_AUTHENTICATION_REQUIRED": ("authentication", False),
    "MCP_SCOPE_REQUIRED": ("authorization", False),
    "MCP_RESOURCE_FORBIDDEN": ("authorization", False),
    "MCP_RESOURCE_NOT_FOUND": ("not_found", False),
    "MCP_CURSOR_INVALID": ("validation", False),
    "MCP_EXPECTED_STATE_MISMATCH": ("conflict", False),
    "ORDER_STATUS_PRECONDITION_FAILED": ("conflict", False),
    "MCP_IDEMPOTENCY_MISMATCH": ("conflict", False),
    "MCP_OPERATION_IN_PROGRESS": ("conflict", True),
    "MCP_RATE_LIMITED": ("rate_limit", True),
    "MCP_TOOL_TIMEOUT": ("timeout", True),
    "MCP_OUTCOME_UNKNOWN": ("timeout", False),
    "MCP_OUTPUT_TOO_LARGE": ("validation", False),
    "MCP_DEPENDENCY_UNAVAILABLE": ("dependency", True),
    "MCP_INTERNAL_ERROR": ("internal", True),
}
CATEGORIES = sorted({c for c, _ in CODES.values()})


@dataclass(frozen=True)
class Tool:
    name: str
    kind: str  # "read", "analytics", "write" (expected_status) or "keyed" (idempotency_key)
    scope: str
    role: str | None  # None: any authenticated user
    description: str
    data_key: str  # the member of `data` the answer's items or item are under

    @property
    def is_write(self) -> bool:
        return self.kind in ("write", "keyed")

    @property
    def per_minute(self) -> int:
        return 500 if self.is_write else 1000

    @property
    def deadline_s(self) -> float:
        return {"read": 15.0, "analytics": 30.0}.get(self.kind, 20.0)


TOOLS = {t.name: t for t in [
    Tool("list_organizations", "read", "organizations:read", "viewer",
         "Organizations you currently belong to, with your role in each, oldest first.", "organizations"),
    Tool("list_restaurants", "read", "restaurants:read", "viewer",
         "Restaurants you can reach, optionally in one organization or with one status; ordered by id.",
         "restaurants"),
    Tool("get_restaurant", "read", "restaurants:read", "viewer", "One restaurant.", "restaurant"),
    Tool("list_orders", "read", "orders:read", "viewer",
         "Orders of a restaurant, newest first (created_at then id, both descending). Filters: status "
         "(any of), channel, created_from/created_to (inclusive).", "orders"),
    Tool("get_order", "read", "orders:read", "viewer", "One order of a restaurant.", "order"),
    Tool("list_conversations", "read", "conversations:read", "viewer",
         "Customer conversations of a restaurant, newest first by when they started (created_at then id, "
         "descending).", "conversations"),
    Tool("get_conversation", "read", "conversations:read", "viewer",
         "One conversation and its messages, newest first, 50 per call unless message_limit (1-100) says "
         "otherwise; older messages through meta.next_cursor.", "messages"),
    Tool("search_transcripts", "read", "transcripts:read", "viewer",
         "Call transcripts of a restaurant containing a phrase (case-insensitive), most recent call first.",
         "transcripts"),
    Tool("get_transcript", "read", "transcripts:read", "viewer", "One call transcript.", "transcript"),
    Tool("list_instructions", "read", "instructions:read", "viewer",
         "Standing instructions of a restaurant, newest first.", "instructions"),
    Tool("get_analytics", "analytics", "analytics:read", "viewer",
         "1 to 8 distinct metrics of a restaurant from `from` to `to` (inclusive, at most 366 days), per "
         "day, week (the default; weeks start on Monday) or month.", "series"),
    Tool("update_order_status", "write", "orders:write", "staff",
         "Move an order to the next step of received, accepted, preparing, ready, completed. "
         "expected_status is the status you last saw.", "order"),
    Tool("set_restaurant_status", "write", "restaurants:write", "manager",
         "Open or pause a restaurant. expected_status is the status you last saw.", "restaurant"),
    Tool("send_message", "keyed", "messages:write", "staff",
         "Send a message to the customer of a conversation. A retry with the same idempotency_key and "
         "arguments returns the first result.", "message"),
    Tool("create_instruction", "keyed", "instructions:write", "manager",
         "Add a standing instruction to a restaurant. Needs an idempotency_key.", "instruction"),
    Tool("create_organization", "keyed", "organizations:write", None,
         "Create an organization; you become its owner. Needs an idempotency_key.", "organization"),
    Tool("create_restaurant", "keyed", "restaurants:write", "owner",
         "Create a restaurant in an organization you own. Needs an idempotency_key.", "restaurant"),
]}


# --- input schemas --------------------------------------------------------------------------

def _id(prefix: str) -> dict:
    return {"type": "string", "pattern": f"^{prefix}_[A-Za-z0-9_]+$", "maxLength": 64}


def _one_of(values: list[str]) -> dict:
    return {"type": "string", "enum": list(values)}


def _text(lo: int, hi: int) -> dict:
    return {"type": "string", "minLength": lo, "maxLength": hi}


_TIMESTAMP = {"type": "string", "maxLength": 20,
              "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"}
_DATE = {"type": "string", "maxLength": 10, "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
_PAGE = {
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 20,
              "description": "Items per page (1-50, default 20)."},
    "cursor": {"type": "string", "maxLength": 2048,
               "description": "meta.next_cursor of the previous page, unchanged, with the same filters."},
}
_KEY = {"idempotency_key": {"type": "string", "minLength": 8, "maxLength": 255,
                            "description": "A fresh random value per intended effect; reuse it only to retry."}}


def _closed(props: dict, required: list[str]) -> dict:
    return {"$schema": DIALECT, "type": "object", "properties": props, "required": required,
            "additionalProperties": False}


INPUT_SCHEMAS = {
    "list_organizations": _closed({**_PAGE}, []),
    "list_restaurants": _closed({"organization_id": _id("org"), "status": _one_of(RESTAURANT_STATUSES),
                                 **_PAGE}, []),
    "get_restaurant": _closed({"restaurant_id": _id("rst")}, ["restaurant_id"]),
    "list_orders": _closed({
        "restaurant_id": _id("rst"),
        "status": {"type": "array", "items": _one_of(ORDER_STATUSES), "minItems": 1, "maxItems": 7,
                   "uniqueItems": True},
        "channel": _one_of(ORDER_CHANNELS),
        "created_from": _TIMESTAMP,
        "created_to": _TIMESTAMP,
        **_PAGE,
    }, ["restaurant_id"]),
    "get_order": _closed({"restaurant_id": _id("rst"), "order_id": _id("ord")}, ["restaurant_id", "order_id"]),
    "list_conversations": _closed({"restaurant_id": _id("rst"), "status": _one_of(CONVERSATION_STATUSES),
                                   "channel": _one_of(CONVERSATION_CHANNELS), **_PAGE}, ["restaurant_id"]),
    "get_conversation": _closed({
        "restaurant_id": _id("rst"), "conversation_id": _id("cnv"),
        "message_limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50},
        "cursor": _PAGE["cursor"],
    }, ["restaurant_id", "conversation_id"]),
    "search_transcripts": _closed({"restaurant_id": _id("rst"), "query": _text(1, 200), **_PAGE},
                                  ["restaurant_id", "query"]),
    "get_transcript": _closed({"restaurant_id": _id("rst"), "transcript_id": _id("trs")},
                              ["restaurant_id", "transcript_id"]),
    "list_instructions": _closed({"restaurant_id": _id("rst"), **_PAGE}, ["restaurant_id"]),
    "get_analytics": _closed({
        "restaurant_id": _id("rst"),
        "metrics": {"type": "array", "items": _one_of(METRICS), "minItems": 1, "maxItems": 8,
                    "uniqueItems": True},
        "from": _DATE, "to": _DATE,
        "granularity": _one_of(GRANULARITIES),
    }, ["restaurant_id", "metrics", "from", "to"]),
    "update_order_status": _closed({
        "restaurant_id": _id("rst"), "order_id": _id("ord"),
        "status": _one_of(LIFECYCLE[1:]),
        "expected_status": _one_of(ORDER_STATUSES),
    }, ["restaurant_id", "order_id", "status", "expected_status"]),
    "set_restaurant_status": _closed({
        "restaurant_id": _id("rst"), "status": _one_of(RESTAURANT_STATUSES),
        "expected_status": _one_of(RESTAURANT_STATUSES),
    }, ["restaurant_id", "status", "expected_status"]),
    "send_message": _closed({"restaurant_id": _id("rst"), "conversation_id": _id("cnv"),
                             "text": _text(1, 2000), **_KEY},
                            ["restaurant_id", "conversation_id", "text", "idempotency_key"]),
    "create_instruction": _closed({"restaurant_id": _id("rst"), "text": _text(1, 2000), **_KEY},
                                  ["restaurant_id", "text", "idempotency_key"]),
    "create_organization": _closed({"name": _text(1, 120), **_KEY}, ["name", "idempotency_key"]),
    "create_restaurant": _closed({
        "organization_id": _id("org"), "name": _text(1, 120),
        "timezone": {"type": "string", "minLength": 1, "maxLength": 64,
                     "description": "An IANA time zone name, e.g. Europe/Paris."},
        **_KEY,
    }, ["organization_id", "name", "timezone", "idempotency_key"]),
}


# --- output schemas -------------------------------------------------------------------------

def _obj(props: dict, required: list[str] | None = None) -> dict:
    return {"type": "object", "properties": props,
            "required": list(props) if required is None else required}


_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_ORGANIZATION = _obj({"id": _STR, "name": _STR, "role": _one_of(ROLES), "created_at": _STR})
_RESTAURANT = _obj({"id": _STR, "organization_id": _STR, "name": _STR,
                    "status": _one_of(RESTAURANT_STATUSES), "timezone": _STR, "created_at": _STR})
_ORDER = _obj({
    "id": _STR, "restaurant_id": _STR, "status": _one_of(ORDER_STATUSES), "channel": _one_of(ORDER_CHANNELS),
    "customer_name": _STR,
    "items": {"type": "array", "items": _obj({"name": _STR, "quantity": _INT, "unit_price_cents": _INT})},
    "total_cents": _INT, "currency": _STR, "notes": _STR, "created_at": _STR, "updated_at": _STR,
})
_CONVERSATION = _obj({"id": _STR, "restaurant_id": _STR, "status": _one_of(CONVERSATION_STATUSES),
                      "channel": _one_of(CONVERSATION_CHANNELS), "customer_name": _STR,
                      "message_count": _INT, "last_message_at": _STR, "created_at": _STR})
_MESSAGE = _obj({"id": _STR, "conversation_id": _STR, "direction": _one_of(["inbound", "outbound"]),
                 "text": _STR, "sent_at": _STR})
_HIT = _obj({"id": _STR, "restaurant_id": _STR, "call_started_at": _STR, "duration_s": _INT,
             "snippet": _STR})
_TRANSCRIPT = _obj({"id": _STR, "restaurant_id": _STR, "call_started_at": _STR, "duration_s": _INT,
                    "language": _STR, "text": _STR})
_INSTRUCTION = _obj({"id": _STR, "restaurant_id": _STR, "text": _STR, "created_by": _STR, "created_at": _STR})
_NUMBERS = {"type": "object", "additionalProperties": {"type": "number"}}
_ANALYTICS = _obj({
    "restaurant_id": _STR, "from": _STR, "to": _STR, "granularity": _one_of(GRANULARITIES),
    "metrics": {"type": "array", "items": _one_of(METRICS)},
    "series": {"type": "array", "items": _obj({"period_start": _STR, "values": _NUMBERS})},
    "totals": _NUMBERS,
})


def _list(key: str, item: dict) -> dict:
    return _obj({key: {"type": "array", "items": item}})


def _single(key: str, item: dict) -> dict:
    return _obj({key: item})


DATA_SCHEMAS = {
    "list_organizations": _list("organizations", _ORGANIZATION),
    "list_restaurants": _list("restaurants", _RESTAURANT),
    "get_restaurant": _single("restaurant", _RESTAURANT),
    "list_orders": _list("orders", _ORDER),
    "get_order": _single("order", _ORDER),
    "list_conversations": _list("conversations", _CONVERSATION),
    "get_conversation": _obj({"conversation": _CONVERSATION, "messages": {"type": "array", "items": _MESSAGE}}),
    "search_transcripts": _list("transcripts", _HIT),
    "get_transcript": _single("transcript", _TRANSCRIPT),
    "list_instructions": _list("instructions", _INSTRUCTION),
    "get_analytics": _ANALYTICS,
    "update_order_status": _single("order", _ORDER),
    "set_restaurant_status": _single("restaurant", _RESTAURANT),
    "send_message": _single("message", _MESSAGE),
    "create_instruction": _single("instruction", _INSTRUCTION),
    "create_organization": _single("organization", _ORGANIZATION),
    "create_restaurant": _single("restaurant", _RESTAURANT),
}

_SUCCESS_META = _obj({"request_id": _STR, "next_cursor": {"type": "string", "minLength": 1},
                      "truncated": {"type": "boolean"}, "replayed": {"type": "boolean"}},
                     ["request_id", "truncated", "replayed"])
_ERROR = {
    "type": "object",
    "properties": {"data": _obj({"error": _obj({
        "code": _one_of(list(CODES)),
        "category": _one_of(CATEGORIES),
        "retryable": {"type": "boolean"},
        "message": _STR,
        "request_id": _STR,
        "retry_after_ms": {"type": "integer", "minimum": 1},
        "required_scope": _one_of(SCOPES),
    }, ["code", "category", "retryable", "message", "request_id"])}),
        "meta": _obj({"request_id": _STR})},
    "required": ["data", "meta"],
}


def output_schema(tool: str) -> dict:
    success = {"type": "object", "properties": {"data": DATA_SCHEMAS[tool], "meta": _SUCCESS_META},
               "required": ["data", "meta"]}
    # A success's data never holds `error` and an error's meta never holds `truncated`, so exactly
    # one branch matches any answer.
    success["properties"]["data"] = {**DATA_SCHEMAS[tool], "not": {"required": ["error"]}}
    return {"$schema": DIALECT, "type": "object", "oneOf": [success, _ERROR]}


def annotations(tool: Tool) -> dict:
    if not tool.is_write:
        return {"readOnlyHint": True, "openWorldHint": False}
    hints = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}
    if tool.kind == "keyed":
        hints["idempotentHint"] = True
    return hints
