#!/usr/bin/env python3
"""Batch 5 of the outside faults, shown live (docs/OUTSIDE_FAULTS_BATCH5.md): for each `b5-` fault,
the same requests through the healthy proxy (`none`) and through the fault's proxy, each in front
of a fresh reference server started as bench/outside-faults.sh starts it; prints both observations
and whether they differ. Exit status 1 unless every fault asked for differs.

Usage (from the repository root, after `cargo build -p mock-server --bins --example fault_proxy`):
  bench/outside-faults-b5-proofs.py [FAULT...]
  env: MOCK=target/debug/chataigne-mock PROXY=target/debug/examples/fault_proxy
       OUT=target/outside-faults-b5-proofs (server and proxy logs) PORT=18700 (uses PORT..PORT+1, PORT+20..PORT+21)
"""
import json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_faults_proofs import *  # noqa: E402,F401,F403 (the harness: Pair, scenario, main, …)
configure("target/outside-faults-b5-proofs", 18700)

@scenario("b5-01-auth1")
def _(p):
    out = {}
    for label, persona in (("no token", None), ("invalid token", "nobody")):
        s, h, j, d = p.rpc(persona, "tools/list")
        out[label] = (s, re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", hdr(h, "www-authenticate") or ""))
    return out

@scenario("b5-02-idem1")
def _(p):
    out = {}
    for label, key in (("255 flags (510 code points)", "\U0001F1EB\U0001F1F7" * 255), ("4 flags (8 code points)", "\U0001F1EB\U0001F1F7" * 4), ("8 é", "é" * 8)):
        out[label] = summary(p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "x", "idempotency_key": key}))
    return out

@scenario("b5-03-pag4")
def _(p):
    a = p.tool("owner", "list_conversations", {"restaurant_id": "rst_central"})
    conv = items(a, "conversations")
    created = [c["created_at"] for c in conv]
    return {"page 1 starts": ids(a, "conversations")[:4], "created_at descending on the page": created == sorted(created, reverse=True)}

@scenario("b5-04-proto1")
def _(p):
    s, h, j, d = p.rpc("owner", "initialize", INIT)
    sid = hdr(h, "mcp-session-id")
    if not sid:
        return {"initialize gives a session": False}
    out = {"initialize gives a session": True}
    out["ping in the session"] = p.rpc("owner", "ping", headers={"mcp-session-id": sid})[0]
    out["DELETE"] = p.http("DELETE", "/mcp", None, {"authorization": "Bearer dev-token-owner", "mcp-session-id": sid})[0]
    out["ping after DELETE"] = p.rpc("owner", "ping", headers={"mcp-session-id": sid})[0]
    out["ping in a session never given"] = p.rpc("owner", "ping", headers={"mcp-session-id": "never-given-0000"})[0]
    return out

@scenario("b5-05-lim1")
def _(p):
    metrics = ["orders_count", "revenue_cents", "average_order_cents", "completed_orders", "conversations_count", "messages_received", "messages_sent", "median_first_response_s", "new_customers"]
    return {f"{n} metrics": summary(p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": metrics[:n], "from": "2026-11-01", "to": "2026-11-30"})) for n in (7, 8, 9)}

@scenario("b5-06-auth7")
def _(p):
    before = p.tool("staff", "list_organizations", {})
    p.control("POST", "/memberships/revoke", {"user_id": "usr_staff", "organization_id": "org_maison"})
    after = p.tool("staff", "list_organizations", {})
    return {"before revoke": [(o["id"], o["role"]) for o in items(before, "organizations")],
            "after revoke": [(o["id"], o["role"]) for o in items(after, "organizations")],
            "get_restaurant after revoke": summary(p.tool("staff", "get_restaurant", {"restaurant_id": "rst_central"}))}

@scenario("b5-07-auth2")
def _(p):
    out = {}
    out["initialize"] = p.rpc("other_audience", "initialize", INIT, version=None)[0]
    out["tools/list"] = p.rpc("other_audience", "tools/list")[0]
    s, h, j, d = p.rpc("other_audience", "resources/read", {"uri": "chataigne://restaurants/rst_central"})
    out["resources/read"] = (s, "contents" if j and "result" in j else None)
    out["tools/call"] = p.rpc("other_audience", "tools/call", {"name": "get_restaurant", "arguments": {"restaurant_id": "rst_central"}})[0]
    return out

@scenario("b5-08-pag8")
def _(p):
    out = {}
    for n in (99, 100):
        r = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": n})
        out[f"message_limit {n}"] = len(items(r, "messages"))
        if n == 100:
            nxt = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": 100, "cursor": meta(r)["next_cursor"]})
            out["100: last, then next page starts"] = (ids(r, "messages")[-1], ids(nxt, "messages")[:1], len(items(nxt, "messages")))
    return out

@scenario("b5-09-pre2")
def _(p):
    w = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0002", "status": "accepted", "expected_status": "received"})
    g = sc(p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0002"}))["data"]["order"]["status"]
    l = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    listed = [o["status"] for o in items(l, "orders") if o["id"] == "ord_c0002"]
    return {"write": summary(w), "get_order": g, "list_orders shows": listed}

@scenario("b5-10-proto2")
def _(p):
    out = {}
    for rid in (7, "seven"):
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}).encode()
        s, h, j, d = p.http("POST", "/mcp", body, {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25", "authorization": "Bearer dev-token-owner"})
        out[f"ping id {json.dumps(rid)}"] = d.decode()
    return out

@scenario("b5-11-idem6")
def _(p):
    now = p.control("GET", "/clock")["now_ms"]
    target = 1806148800000  # 2027-03-27T12:00:00Z: the spring change (2027-03-28T01:00Z) comes 13 h later
    p.control("POST", "/clock/advance", {"ms": target - now})
    args = {"restaurant_id": "rst_central", "text": "Spring shift note", "idempotency_key": "b5-key-spring"}
    a = p.tool("owner", "create_instruction", args)
    p.control("POST", "/clock/advance", {"seconds": 23 * 3600 + 1800})
    b = p.tool("owner", "create_instruction", args)
    ia, ib = (sc(x)["data"]["instruction"]["id"] for x in (a, b))
    return {"first call": "2027-03-27T12:00:00Z", "again at 2027-03-28T11:30:00Z (23 h 30 min later)": {"replayed": meta(b)["replayed"], "same instruction": ia == ib}}

@scenario("b5-12-auth8")
def _(p):
    text = "Viewer's note to the guest"
    r = p.tool("viewer", "send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "text": text, "idempotency_key": "b5-key-viewer"})
    c = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_c01"})
    return {"viewer's send_message": summary(r), "messages with that text": sum(1 for m in items(c, "messages") if m["text"] == text)}

@scenario("b5-13-auth4")
def _(p):
    out = {}
    for rst in ("rst_rival", "rst_doesnotexist"):
        s, h, j, d = p.rpc("owner", "prompts/get", {"name": "work_the_order_queue", "arguments": {"restaurant_id": rst}})
        out[rst] = j["result"]["messages"][0]["content"]["text"].split("\n")[0] if "result" in j else (j["error"]["code"], j["error"]["message"])
    return out

@scenario("b5-14-lim2")
def _(p):
    codes = []
    for i in range(501):
        r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_small", "metrics": ["orders_count"], "from": "2026-11-01", "to": "2026-11-02"})
        codes.append(summary(r))
    return {"calls 1-500": sorted(set(codes[:500])), "call 501": codes[500]}

@scenario("b5-15-pre3")
def _(p):
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0006", "status": "preparing", "expected_status": "received"})
    g = sc(p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0006"}))["data"]["order"]["status"]
    return {"received → preparing": summary(r), "status after": g}

@scenario("b5-16-auth3")
def _(p):
    args = {"restaurant_id": "rst_central", "text": "Keyed note", "idempotency_key": "b5-key-noscope"}
    a = p.tool("owner", "create_instruction", args)
    b = p.tool("noscope", "create_instruction", args)
    c = p.tool("noscope", "create_instruction", {**args, "idempotency_key": "b5-key-noscope-2"})
    return {"noscope, owner's key and args": (summary(b), meta(b).get("replayed")), "noscope, a new key": summary(c)}

@scenario("b5-17-pre1")
def _(p):
    r = p.tool("owner", "set_restaurant_status", {"restaurant_id": "rst_small", "status": "open"})
    g = sc(p.tool("owner", "get_restaurant", {"restaurant_id": "rst_small"}))["data"]["restaurant"]["status"]
    o = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0007", "status": "accepted"})
    return {"set_restaurant_status without expected_status": summary(r), "rst_small now": g, "update_order_status without it": summary(o)}

@scenario("b5-18-idem2")
def _(p):
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c02", "text": "Your table is ready", "idempotency_key": "b5-key-twice"}
    a = p.tool("owner", "send_message", args)
    b = p.tool("owner", "send_message", args)
    c = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_c02"})
    return {"replay": (meta(b)["replayed"], sc(b)["data"]["message"]["id"] == sc(a)["data"]["message"]["id"]),
            "messages with that text": sum(1 for m in items(c, "messages") if m["text"] == args["text"])}

@scenario("b5-19-sec2")
def _(p):
    p.control("POST", "/faults", {"tool": "get_restaurant", "error": "internal"})
    s, h, j, d = p.rpc("owner", "resources/read", {"uri": "chataigne://restaurants/rst_central"})
    return {"code": j["error"]["code"], "message": j["error"]["message"]}

@scenario("b5-20-proto1")
def _(p):
    out = {}
    for ct in ("application/json", "application/json; charset=utf-8"):
        s, h, j, d = p.rpc("owner", "ping", headers={"content-type": ct})
        out[ct] = (s, d.decode()[:70])
    return out

@scenario("b5-21-lim5")
def _(p):
    n, seen = pages(p, "owner", "list_orders", {"restaurant_id": "rst_large", "limit": 50}, "orders")
    got = [o["id"] for o in seen]
    return {"pages": n, "items": len(got), "distinct": len(set(got)), "repeated": sorted({i for i in got if got.count(i) > 1})}

@scenario("b5-22-env4")
def _(p):
    r = None
    for i in range(501):
        r = p.tool("owner", "set_restaurant_status", {"restaurant_id": "rst_small", "status": "open", "expected_status": "open"})
    e = sc(r)["data"]["error"]
    return {"call 501": e["code"], "data.error members": sorted(e), "meta.request_id": bool(meta(r).get("request_id"))}

@scenario("b5-23-proto2")
def _(p):
    out = {}
    for rid in (9007199254740993, 12345678901234567):
        body = ('{"jsonrpc":"2.0","id":%d,"method":"ping"}' % rid).encode()
        s, h, j, d = p.http("POST", "/mcp", body, {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25", "authorization": "Bearer dev-token-owner"})
        out[str(rid)] = d.decode()
    return out

@scenario("b5-24-auth3")
def _(p):
    out = {}
    for tool, args in (("update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0010", "status": "accepted", "expected_status": "received"}),
                       ("send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "text": "x", "idempotency_key": "b5-key-scope"}),
                       ("list_orders", {"restaurant_id": "rst_central"})):
        e = sc(p.tool("noscope", tool, args))["data"]["error"]
        out[tool] = (e["code"], e.get("required_scope"))
    return out

@scenario("b5-25-abs1")
def _(p):
    s, h, j, d = p.rpc("owner", "tools/list")
    out = {"first page": len(j["result"]["tools"]), "nextCursor": j["result"].get("nextCursor")}
    if j["result"].get("nextCursor"):
        s, h, j2, d = p.rpc("owner", "tools/list", {"cursor": j["result"]["nextCursor"]})
        out["second page"] = [t["name"] for t in j2["result"]["tools"]]
    return out

@scenario("b5-26-pag5")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    c = meta(a)["next_cursor"]
    padded = ".".join(part + "=" * (-len(part) % 4) for part in c.split("."))
    flipped = c[:-1] + ("A" if c[-1] != "A" else "B")
    out = {"padded differs": padded != c}
    for label, cur in (("as given", c), ("padded with =", padded), ("one character flipped", flipped)):
        r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5, "cursor": cur})
        out[label] = summary(r) if err(r) else ids(r, "orders")[:2]
    return out

@scenario("b5-27-idem3")
def _(p):
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "text": "See you at eight", "idempotency_key": "b5-key-route"}
    a = p.tool("owner", "send_message", args)
    b = p.tool("owner", "send_message", {**args, "conversation_id": "cnv_c03"})
    c = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_c03"})
    return {"same key and text, cnv_c03": summary(b) + (" replayed" if meta(b).get("replayed") else ""),
            "cnv_c03 holds the text": any(m["text"] == args["text"] for m in items(c, "messages"))}

@scenario("b5-28-auth5")
def _(p):
    s, h, j, d = p.rpc("owner", "resources/templates/list")
    out = {"templates": [t["uriTemplate"] for t in j["result"]["resourceTemplates"]]}
    s, h, j, d = p.rpc("owner", "resources/read", {"uri": "chataigne://orders/ord_r0001"})
    if "result" in j:
        o = json.loads(j["result"]["contents"][0]["text"])["data"]["order"]
        out["owner reads the foreign ord_r0001"] = (o["id"], o["restaurant_id"], o["customer_name"])
    else:
        out["owner reads the foreign ord_r0001"] = (j["error"]["code"], j["error"]["message"])
    return out

@scenario("b5-29-lim7")
def _(p):
    out = {}
    for label, q in (("200 é (400 bytes)", "é" * 200), ("100 é (200 bytes)", "é" * 100), ("201 a", "a" * 201)):
        out[label] = summary(p.tool("owner", "search_transcripts", {"restaurant_id": "rst_central", "query": q}))
    return out

@scenario("b5-30-env2")
def _(p):
    rids, heads = [], []
    for i in range(2):
        s, h, j, d = p.rpc("owner", "tools/call", {"name": "list_orders", "arguments": {"restaurant_id": "rst_central", "limit": 0}})
        rids.append(meta(j["result"])["request_id"]); heads.append(hdr(h, "x-request-id"))
    return {"two refusals, same request_id": rids[0] == rids[1], "header = envelope": heads == rids}

main()
