#!/usr/bin/env python3
"""Writes the committed seed corpus, fuzz/corpus/<target>/ (see docs/RELIABILITY.md, "Fuzzing").

Cursors are taken from a running reference server started with `--secret fuzz-secret` (the key the
fuzz harness uses, so they stay valid): pass its base URL, e.g.
    chataigne-mock --listen 127.0.0.1:18080 --secret fuzz-secret &
    python3 fuzz/seeds.py http://127.0.0.1:18080 [OUT]
Without a URL the cursor seeds are skipped. OUT (default fuzz/corpus) gets one folder per target;
files are named by content hash, as libFuzzer does.
"""

import hashlib
import json
import os
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
MALFORMED = os.path.join(HERE, "..", "mock-server", "tests", "corpus", "malformed.jsonl")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "corpus")

RID = "rst_central"
VALID = {
    "list_organizations": {},
    "list_restaurants": {"status": "open"},
    "get_restaurant": {"restaurant_id": RID},
    "list_orders": {"restaurant_id": RID, "limit": 2, "status": ["received", "accepted"]},
    "get_order": {"restaurant_id": RID, "order_id": "ord_c0001"},
    "list_conversations": {"restaurant_id": RID, "limit": 3},
    "get_conversation": {"restaurant_id": RID, "conversation_id": "cnv_long", "message_limit": 5},
    "search_transcripts": {"restaurant_id": RID, "query": "gluten-free"},
    "get_transcript": {"restaurant_id": RID, "transcript_id": "trs_c03"},
    "list_instructions": {"restaurant_id": RID},
    "get_analytics": {
        "restaurant_id": RID, "metrics": ["orders_count", "revenue_cents"],
        "from": "2026-11-01", "to": "2026-11-30", "granularity": "week",
    },
    "update_order_status": {
        "restaurant_id": RID, "order_id": "ord_c0001", "status": "ready", "expected_status": "preparing",
    },
    "set_restaurant_status": {"restaurant_id": RID, "status": "paused", "expected_status": "open"},
    "send_message": {
        "restaurant_id": RID, "conversation_id": "cnv_c01", "text": "Hello", "idempotency_key": "fuzz-key-0001",
    },
    "create_instruction": {"restaurant_id": RID, "text": "Be kind", "idempotency_key": "fuzz-key-0002"},
    "create_organization": {"name": "New Group", "idempotency_key": "fuzz-key-0003"},
    "create_restaurant": {
        "organization_id": "org_maison", "name": "Chataigne Gare", "timezone": "Europe/Paris",
        "idempotency_key": "fuzz-key-0004",
    },
}


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = os.path.join(OUT, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def rpc(method, params=None, id_=1):
    message = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":"))


def call(tool, args):
    return rpc("tools/call", {"name": tool, "arguments": args})


def malformed_bodies(limit):
    """Small, plain bodies of the committed malformed corpus (headers as a client sends them)."""
    bodies = []
    with open(MALFORMED) as f:
        for line in f:
            case = json.loads(line)
            body = case.get("body")
            plain = not any(k in case for k in ("auth", "authorization", "content_type", "accept", "origin"))
            if isinstance(body, str) and plain and len(body) < 600:
                bodies.append(body)
    step = max(1, len(bodies) // limit)
    return bodies[::step][:limit]


def cursors(base):
    """(tool, arguments, next_cursor) of a few first pages, from a server keyed with fuzz-secret."""
    found = []
    for tool, args in [
        ("list_orders", {"restaurant_id": RID, "limit": 1}),
        ("list_orders", {"restaurant_id": RID, "limit": 2, "status": ["completed"]}),
        ("list_conversations", {"restaurant_id": RID, "limit": 1}),
        ("get_conversation", {"restaurant_id": RID, "conversation_id": "cnv_long", "message_limit": 3}),
        ("list_restaurants", {"limit": 1}),
        ("search_transcripts", {"restaurant_id": RID, "query": "the", "limit": 1}),
    ]:
        request = urllib.request.Request(
            base + "/mcp", data=call(tool, args).encode(), method="POST",
            headers={
                "content-type": "application/json", "accept": "application/json, text/event-stream",
                "authorization": "Bearer dev-token-owner", "mcp-protocol-version": "2025-06-18",
            },
        )
        with urllib.request.urlopen(request) as resp:
            answer = json.load(resp)
        cursor = answer["result"]["structuredContent"]["meta"].get("next_cursor")
        if cursor:
            found.append((tool, args, cursor))
    return found


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else None
    found = cursors(base) if base else []

    # jsonrpc_http: R<raw body>, T<tool>\n<arguments>, M<method>\n<params>.
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}
    for body in [rpc("initialize", init), rpc("tools/list"), rpc("ping"), rpc("tools/list", {"cursor": "x"}),
                 json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                 json.dumps({"jsonrpc": "2.0", "id": 3, "result": {}})]:
        write("jsonrpc_http", "R" + body)
    for tool in ["get_restaurant", "list_orders", "get_analytics", "send_message", "update_order_status",
                 "create_restaurant", "search_transcripts"]:
        write("jsonrpc_http", "R" + call(tool, VALID[tool]))
        write("jsonrpc_http", "T" + tool + "\n" + json.dumps(VALID[tool]))
    for tool, args, cursor in found[:2]:
        write("jsonrpc_http", "T" + tool + "\n" + json.dumps(dict(args, cursor=cursor)))
    write("jsonrpc_http", "Tno_such_tool\n{}")
    write("jsonrpc_http", "Tget_order\nnot json")
    write("jsonrpc_http", "Minitialize\n" + json.dumps(init))
    write("jsonrpc_http", "Mresources/list\n{}")
    for body in malformed_bodies(20):
        write("jsonrpc_http", "R" + body)

    # tool_args: #<tool>#<persona>#<arguments>, and a few bytes for the structure-aware form.
    for tool, args in VALID.items():
        write("tool_args", f"#{tool}#owner#{json.dumps(args)}")
    for tool, persona in [("update_order_status", "viewer"), ("get_restaurant", "outsider"),
                          ("list_orders", "noscope"), ("create_restaurant", "manager"), ("send_message", "revoked")]:
        write("tool_args", f"#{tool}#{persona}#{json.dumps(VALID[tool])}")
    write("tool_args", '#get_analytics#owner#{"restaurant_id":"rst_central","metrics":["orders_count"],'
                       '"from":"2026-02-31","to":"0000-00-00"}')
    write("tool_args", '#list_orders#owner#{"restaurant_id":"rst_central","created_from":"9999-99-99T99:99:99Z"}')
    for tool, args, cursor in found:
        write("tool_args", f"#{tool}#owner#{json.dumps(dict(args, cursor=cursor))}")
        write("tool_args", f"#{tool}#viewer#{json.dumps(dict(args, cursor=cursor))}")
    for n in range(4):
        write("tool_args", bytes((i * 37 + n * 11) % 256 for i in range(48 + n * 16)))

    # cursor_decode: <text>\n<bytes for the key, binding and changes>.
    tail = bytes(range(0, 160, 3))
    for _, _, cursor in found:
        write("cursor_decode", cursor.encode() + b"\n" + tail)
        tampered = cursor[:-1] + ("A" if cursor[-1] != "A" else "B")
        write("cursor_decode", tampered.encode() + b"\n" + tail)
        body, tag = cursor.split(".", 1)
        write("cursor_decode", (tag + "." + body).encode() + b"\n" + tail)
        write("cursor_decode", cursor[: len(cursor) // 2].encode() + b"\n" + tail)
    for text in ["", ".", "..", "e30.", "eyJ2IjoxfQ.AAAA", "!!!.???", "a" * 300 + "." + "b" * 43, "\u00e9.\u00e9"]:
        write("cursor_decode", text.encode() + b"\n" + tail)

    # runner_parse: <content type><awaited id + 1><status> then the body.
    ok = {"jsonrpc": "2.0", "id": 1, "result": {
        "content": [{"type": "text", "text": "get_restaurant: ok"}],
        "structuredContent": {"data": {"restaurant": {"id": RID}},
                              "meta": {"request_id": "req_0123456789abcdef", "truncated": False, "replayed": False}},
        "isError": False}}
    err_body = {"code": "MCP_NOT_FOUND", "category": "not_found", "retryable": False,
                "message": "Not found", "request_id": "req_0123456789abcdef"}
    err = {"jsonrpc": "2.0", "id": 1, "result": {
        "content": [{"type": "text", "text": "MCP_NOT_FOUND"}],
        "structuredContent": {"data": {"error": err_body}, "meta": {"request_id": "req_0123456789abcdef"}},
        "isError": True}}
    rpc_err = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    for ct, id_, status, body in [
        (0, 2, 0, json.dumps(ok)), (0, 2, 0, json.dumps(err)), (0, 2, 2, json.dumps(rpc_err)),
        (0, 5, 0, json.dumps(ok)), (2, 0, 0, json.dumps(ok)), (0, 2, 0, '{"not":"jsonrpc"}'),
        (0, 2, 0, "{"), (4, 2, 6, "<html><body>Bad gateway</body></html>"), (5, 2, 1, ""),
        (1, 2, 0, "event: message\ndata: " + json.dumps(ok) + "\n\n"),
        (1, 4, 0, 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'
                  'id: 2\ndata: {"jsonrpc":"2.0","id":3,"result":{}}\n\n'
                  'data: {"jsonrpc":"2.0","id":4,\r\ndata: "result":{"ok":true}}\r\n\r\n'),
        (3, 2, 0, "data:" + json.dumps(err) + "\r\n\r\n"),
        (1, 0, 0, ": keep-alive\n\nretry: 100\n\n"), (1, 2, 0, "data: {\ndata: }\n\n"),
        (6, 2, 0, json.dumps(ok)), (7, 2, 3, "Unauthorized"),
    ]:
        write("runner_parse", bytes([ct, id_, status]) + body.encode())


main()
