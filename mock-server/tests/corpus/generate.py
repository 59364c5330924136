#!/usr/bin/env python3
"""Writes malformed.jsonl: the corpus of malformed requests the reference server must refuse
with the contract's error (never a 5xx, a panic or a hang). Rerun after editing:
    python3 mock-server/tests/corpus/generate.py
Each line: name, body (text) or body_repeat {text, times}, optional content_type / accept /
auth (false = no Authorization header), and the expectation: HTTP status, and optionally the
JSON-RPC error code or the tool error code."""
import json, os

cases = []
def case(name, body, status, rpc=None, tool=None, **extra):
    c = {"name": name, "body": body, "status": status}
    if rpc is not None: c["rpc"] = rpc
    if tool is not None: c["tool"] = tool
    c.update(extra)
    cases.append(c)

def call(tool, args, rid=1):
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": args}})

# 1. Not JSON at all (-32700).
for i, text in enumerate(["", " ", "{", "}", "[", "{\"jsonrpc\":", "nul", "tru", "{'a':1}", "{\"a\":1,}",
        "{\"a\" 1}", "\u0000", "\ufeff{}", "<html></html>", "jsonrpc=2.0", "{\"a\":\"\\x\"}",
        "{\"a\":\"\\ud800\"}x", "{\"a\":01}", "{\"a\":1e}", "{\"a\":-}", "{\"a\":NaN}", "{\"a\":Infinity}",
        "{\"a\":\"unterminated}", "{\"a\":[1,2}", "/* c */ {}", "{} {}", "\"\\u00\"", "{\"jsonrpc\":\"2.0\",}",
        "\x01\x02\x03", "{\"a\":tru}"]):
    case(f"not-json-{i}", text, 400, rpc=-32700)
# Deep nesting beyond the parser's recursion limit: valid JSON (RFC 8259), but not a JSON-RPC
# object (-32600).
for depth in [200, 1000, 10000]:
    case(f"deep-array-{depth}", "[" * depth + "]" * depth, 400, rpc=-32600)
    case(f"deep-object-{depth}", "{\"a\":" * depth + "1" + "}" * depth, 400, rpc=-32600)
# Valid JSON that serde or rmcp cannot take (rmcp answered 415 text): -32602 with the id when only
# params are at fault, else -32600 (PROTO-2).
def raw_call(args_text, rid="1", method="tools/call", name="get_order"):
    return '{"jsonrpc":"2.0","id":%s,"method":"%s","params":{"name":"%s","arguments":%s}}' % (rid, method, name, args_text)
case("unreadable-deep-arguments-130", raw_call('{"a":' + "[" * 130 + "]" * 130 + "}"), 200, rpc=-32602)
case("unreadable-deep-arguments-5000", raw_call('{"a":' + "[" * 5000 + "]" * 5000 + "}"), 200, rpc=-32602)
case("unreadable-number-1e400", raw_call('{"a":1e400}'), 200, rpc=-32602)
case("unreadable-number-minus-1e400", raw_call('{"restaurant_id":"rst_central","order_id":-1e400}'), 200, rpc=-32602)
case("unreadable-lone-surrogate-argument", raw_call('{"a":"\\ud800"}'), 200, rpc=-32602)
case("unreadable-lone-low-surrogate-argument", raw_call('{"a":"x\\udc00y"}'), 200, rpc=-32602)
case("unreadable-lone-surrogate-name", raw_call("{}", name="\\ud800"), 200, rpc=-32602)
case("unreadable-huge-id", raw_call("{}", rid="123456789012345678901234567890"), 400, rpc=-32600)
case("unreadable-huge-id-list", '{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}', 400, rpc=-32600)
case("unreadable-fractional-id", '{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', 400, rpc=-32600)
case("unreadable-lone-surrogate-id", '{"jsonrpc":"2.0","id":"\\ud800","method":"tools/list"}', 400, rpc=-32600)
case("unreadable-lone-surrogate-method", '{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', 400, rpc=-32600)
case("unreadable-notification", '{"jsonrpc":"2.0","method":"notifications/initialized","params":{"a":1e400}}', 400, rpc=-32600)
case("unreadable-list-params", '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":' + "[" * 200 + "]" * 200 + "}}", 200, rpc=-32602)

# 2. JSON, but not a JSON-RPC 2.0 object (-32600).
for i, value in enumerate([None, True, 1, "text", [], [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], {},
        {"x": 1}, {"jsonrpc": "1.0", "id": 1, "method": "ping"}, {"jsonrpc": 2.0, "id": 1, "method": "ping"},
        {"id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 1}, {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": 1, "method": None}, {"jsonrpc": "2.0", "id": 1, "method": ["tools/list"]},
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, {"jsonrpc": "2.0", "id": [1], "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"}, {"jsonrpc": "2.0 ", "id": 1, "method": "ping"},
        {"jsonrpc": "", "id": 1, "method": "ping"}]):
    case(f"not-jsonrpc-{i}", json.dumps(value), 400, rpc=-32600)

# 3. Unknown methods (-32601).
for i, m in enumerate(["foo", "tools/cal", "TOOLS/LIST", "tools/list/", "", "resources/unknown", "x" * 300, "é", "tools\u0000list"]):
    case(f"unknown-method-{i}", json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": m}), 200, rpc=-32601)

# 4. tools/call with a malformed shape (-32602).
for i, params in enumerate([None, {}, [], "list_orders", {"name": 5}, {"name": None}, {"name": ["list_orders"]},
        {"name": {"a": 1}}, {"arguments": {}}, {"name": "list_orders", "arguments": []},
        {"name": "list_orders", "arguments": "x"}, {"name": "list_orders", "arguments": 5},
        {"name": "nope"}, {"name": ""}, {"name": "list_orders "}, {"name": "LIST_ORDERS"},
        {"name": "cancel_order", "arguments": {}}, {"name": "refund_order"}, {"name": "x" * 5000},
        {"name": "list_orders\u0000"}]):
    body = {"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call"}
    if params is not None: body["params"] = params
    case(f"bad-call-shape-{i}", json.dumps(body), 200, rpc=-32602)

# 5. Tool arguments of the wrong type, size or value (MCP_INVALID_ARGUMENTS).
R = "rst_central"
bad_args = [
    ("list_orders", {}), ("list_orders", {"restaurant_id": 5}), ("list_orders", {"restaurant_id": None}),
    ("list_orders", {"restaurant_id": ["rst_central"]}), ("list_orders", {"restaurant_id": "central"}),
    ("list_orders", {"restaurant_id": "rst_" + "a" * 300}), ("list_orders", {"restaurant_id": "rst_é"}),
    ("list_orders", {"restaurant_id": "rst_a b"}), ("list_orders", {"restaurant_id": "rst_\u0000"}),
    ("list_orders", {"restaurant_id": R, "limit": 0}), ("list_orders", {"restaurant_id": R, "limit": -1}),
    ("list_orders", {"restaurant_id": R, "limit": 51}), ("list_orders", {"restaurant_id": R, "limit": 1.5}),
    ("list_orders", {"restaurant_id": R, "limit": "7"}), ("list_orders", {"restaurant_id": R, "limit": True}),
    ("list_orders", {"restaurant_id": R, "limit": 1e300}), ("list_orders", {"restaurant_id": R, "limit": -1e300}),
    ("list_orders", {"restaurant_id": R, "limit": 18446744073709551616}),
    ("list_orders", {"restaurant_id": R, "status": "received"}), ("list_orders", {"restaurant_id": R, "status": []}),
    ("list_orders", {"restaurant_id": R, "status": ["bogus"]}), ("list_orders", {"restaurant_id": R, "status": ["received", "received"]}),
    ("list_orders", {"restaurant_id": R, "channel": "fax"}), ("list_orders", {"restaurant_id": R, "created_from": "yesterday"}),
    ("list_orders", {"restaurant_id": R, "created_from": "2026-02-30T00:00:00Z"}),
    ("list_orders", {"restaurant_id": R, "created_from": "2026-11-02T00:00:00Z", "created_to": "2026-11-01T00:00:00Z"}),
    ("list_orders", {"restaurant_id": R, "cursor": 5}), ("list_orders", {"restaurant_id": R, "cursor": "x" * 5000}),
    ("list_orders", {"restaurant_id": R, "extra": 1}), ("list_orders", {"restaurant_id": R, "__proto__": {}}),
    ("get_order", {"restaurant_id": R}), ("get_order", {"restaurant_id": R, "order_id": "rst_central"}),
    ("get_order", {"restaurant_id": R, "order_id": 12}), ("get_restaurant", {}), ("get_restaurant", {"restaurant_id": ""}),
    ("list_restaurants", {"status": "closed"}), ("list_restaurants", {"organization_id": "rst_central"}),
    ("get_conversation", {"restaurant_id": R, "conversation_id": "cnv_long", "message_limit": 0}),
    ("get_conversation", {"restaurant_id": R, "conversation_id": "cnv_long", "message_limit": 101}),
    ("get_conversation", {"restaurant_id": R, "conversation_id": "cnv_long", "message_limit": "50"}),
    ("search_transcripts", {"restaurant_id": R}), ("search_transcripts", {"restaurant_id": R, "query": ""}),
    ("search_transcripts", {"restaurant_id": R, "query": "q" * 201}), ("search_transcripts", {"restaurant_id": R, "query": "é" * 201}),
    ("search_transcripts", {"restaurant_id": R, "query": "\U0001F600" * 201}), ("search_transcripts", {"restaurant_id": R, "query": 5}),
    ("get_transcript", {"restaurant_id": R, "transcript_id": "ord_c0001"}),
    ("get_analytics", {"restaurant_id": R, "metrics": [], "from": "2026-01-01", "to": "2026-01-31"}),
    ("get_analytics", {"restaurant_id": R, "metrics": ["orders_count"] * 2, "from": "2026-01-01", "to": "2026-01-31"}),
    ("get_analytics", {"restaurant_id": R, "metrics": ["orders_count", "revenue_cents", "average_order_cents", "completed_orders",
        "conversations_count", "messages_received", "messages_sent", "median_first_response_s", "new_customers"], "from": "2026-01-01", "to": "2026-01-31"}),
    ("get_analytics", {"restaurant_id": R, "metrics": ["bogus"], "from": "2026-01-01", "to": "2026-01-31"}),
    ("get_analytics", {"restaurant_id": R, "metrics": ["orders_count"], "from": "2026-01-01", "to": "2027-01-02"}),
    ("get_analytics", {"restaurant_id": R, "metrics": ["orders_count"], "from": "2026-02-01", "to": "2026-01-01"}),
    ("get_analytics", {"restaurant_id": R, "metrics": ["orders_count"], "from": "2026-13-01", "to": "2026-12-01"}),
    ("get_analytics", {"restaurant_id": R, "metrics": ["orders_count"], "from": "01/01/2026", "to": "2026-12-01"}),
    ("get_analytics", {"restaurant_id": R, "metrics": ["orders_count"], "from": "2026-01-01", "to": "2026-01-31", "granularity": "year"}),
    ("get_analytics", {"restaurant_id": R, "metrics": "orders_count", "from": "2026-01-01", "to": "2026-01-31"}),
    ("update_order_status", {"restaurant_id": R, "order_id": "ord_c0001", "status": "accepted"}),
    ("update_order_status", {"restaurant_id": R, "order_id": "ord_c0001", "status": "cancelled", "expected_status": "received"}),
    ("update_order_status", {"restaurant_id": R, "order_id": "ord_c0001", "status": "rejected", "expected_status": "received"}),
    ("update_order_status", {"restaurant_id": R, "order_id": "ord_c0001", "status": "received", "expected_status": "received"}),
    ("update_order_status", {"restaurant_id": R, "order_id": "ord_c0001", "status": "accepted", "expected_status": "bogus"}),
    ("set_restaurant_status", {"restaurant_id": R, "status": "closed", "expected_status": "open"}),
    ("set_restaurant_status", {"restaurant_id": R, "status": "paused"}),
    ("send_message", {"restaurant_id": R, "conversation_id": "cnv_long", "text": "hi"}),
    ("send_message", {"restaurant_id": R, "conversation_id": "cnv_long", "text": "hi", "idempotency_key": "short"}),
    ("send_message", {"restaurant_id": R, "conversation_id": "cnv_long", "text": "hi", "idempotency_key": "k" * 256}),
    ("send_message", {"restaurant_id": R, "conversation_id": "cnv_long", "text": "", "idempotency_key": "key-00000001"}),
    ("send_message", {"restaurant_id": R, "conversation_id": "cnv_long", "text": "t" * 2001, "idempotency_key": "key-00000001"}),
    ("send_message", {"restaurant_id": R, "conversation_id": "cnv_long", "text": "\U0001F600" * 2001, "idempotency_key": "key-00000001"}),
    ("send_message", {"restaurant_id": R, "conversation_id": "cnv_long", "text": 5, "idempotency_key": "key-00000001"}),
    ("send_message", {"restaurant_id": R, "conversation_id": "cnv_long", "text": "hi", "idempotency_key": 12345678}),
    ("create_instruction", {"restaurant_id": R, "text": "x" * 100000, "idempotency_key": "key-00000002"}),
    ("create_organization", {"name": "", "idempotency_key": "key-00000003"}),
    ("create_organization", {"name": "n" * 121, "idempotency_key": "key-00000003"}),
    ("create_organization", {"idempotency_key": "key-00000003"}),
    ("create_restaurant", {"organization_id": "org_maison", "name": "N", "timezone": "Mars/Olympus Mons", "idempotency_key": "key-00000004"}),
    ("create_restaurant", {"organization_id": "org_maison", "name": "N", "timezone": "paris", "idempotency_key": "key-00000004"}),
    ("create_restaurant", {"organization_id": "org_maison", "name": "N", "idempotency_key": "key-00000004"}),
]
# Every tool refuses a property its schema does not declare (additionalProperties: false).
for tool in ["list_organizations", "list_restaurants", "get_restaurant", "list_orders", "get_order",
        "list_conversations", "get_conversation", "search_transcripts", "get_transcript", "list_instructions",
        "get_analytics", "update_order_status", "set_restaurant_status", "send_message", "create_instruction",
        "create_organization", "create_restaurant"]:
    bad_args.append((tool, {"unexpected_property": "x"}))
for i, (tool, args) in enumerate(bad_args):
    case(f"bad-args-{i}-{tool}", call(tool, args, 1000 + i), 200, tool="MCP_INVALID_ARGUMENTS")

# 6. Unicode edge cases that are valid input: served, never a 5xx.
for i, text in enumerate(["é", "\U0001F600", "\u200b", "\u202e", "ﷺ", "a\u0301", "\u0000", "\ud7ff", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\\u0000"]):
    case(f"unicode-query-{i}", call("search_transcripts", {"restaurant_id": R, "query": text}, 2000 + i), 200, tool="ok")

# 7. Transport-level mistakes.
ok_body = call("list_orders", {"restaurant_id": R}, 3000)
case("no-authorization", ok_body, 401, auth=False)
case("wrong-scheme", ok_body, 401, authorization="Basic ZGV2OmRldg==")
case("empty-bearer", ok_body, 401, authorization="Bearer ")
case("bearer-unknown", ok_body, 401, authorization="Bearer not-a-token")
case("bearer-huge", ok_body, 401, authorization="Bearer " + "t" * 8000)
case("other-audience", ok_body, 401, authorization="Bearer dev-token-other_audience")
case("text-plain", ok_body, 415, content_type="text/plain")
case("form-encoded", ok_body, 415, content_type="application/x-www-form-urlencoded")
case("no-content-type", ok_body, 415, content_type="")
case("accept-html", ok_body, 406, accept="text/html")
case("foreign-origin", ok_body, 403, origin="https://evil.example")
case("null-origin", ok_body, 403, origin="null")
case("lookalike-origin", ok_body, 403, origin="http://localhost.evil.example")
for size in [1024 * 1024 + 1, 2 * 1024 * 1024, 8 * 1024 * 1024]:
    case(f"oversize-{size}", None, 413, body_repeat={"text": " ", "times": size})
case("oversize-string-arg", None, 413, body_repeat={"text": "a", "times": 1100000}, body_prefix='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_transcripts","arguments":{"restaurant_id":"rst_central","query":"', body_suffix='"}}}')

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "malformed.jsonl"), "w") as f:
    for c in cases:
        f.write(json.dumps(c, ensure_ascii=False) + "\n")
print(len(cases), "cases")
