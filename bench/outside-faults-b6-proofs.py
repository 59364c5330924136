#!/usr/bin/env python3
"""Batch 6 of the outside faults, shown live (docs/OUTSIDE_FAULTS_BATCH6.md): for each `b6-` fault,
the same requests through the healthy proxy (`none`) and through the fault's proxy, each in front
of a fresh reference server started as bench/outside-faults.sh starts it; prints both observations
and whether they differ. Exit status 1 unless every fault asked for differs.

Usage (from the repository root, after `cargo build -p mock-server --bins --example fault_proxy`):
  bench/outside-faults-b6-proofs.py [FAULT...]
  env: MOCK=target/debug/chataigne-mock PROXY=target/debug/examples/fault_proxy
       OUT=target/outside-faults-b6-proofs (server and proxy logs) PORT=18800 (uses PORT..PORT+1, PORT+20..PORT+21)
"""
import json, os, re, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_faults_proofs import *  # noqa: E402,F401,F403 (the harness: Pair, scenario, main, …)
configure("target/outside-faults-b6-proofs", 18800)

INSTANT = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")

def status_of(p, order):
    return sc(p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": order}))["data"]["order"]["status"]

def texts(p, conversation, text, restaurant="rst_central"):
    c = p.tool("owner", "get_conversation", {"restaurant_id": restaurant, "conversation_id": conversation})
    return sum(1 for m in items(c, "messages") if m["text"] == text)

@scenario("b6-01-proto1")
def _(p):
    s, h, j, d = p.http("GET", "/mcp", None, {"accept": "text/event-stream", "authorization": "Bearer dev-token-owner",
        "mcp-protocol-version": "2025-11-25"})
    return {"GET /mcp": (s, (hdr(h, "content-type") or "").split(";")[0])}

@scenario("b6-02-lim1")
def _(p):
    out = {}
    for label, frm in (("366 days", "2025-11-30"), ("367 days", "2025-11-29")):
        r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count"], "from": frm, "to": "2026-11-30"})
        out[label] = summary(r) if err(r) else (len(sc(r)["data"]["series"]), sc(r)["data"]["totals"])
    return out

@scenario("b6-03-idem4")
def _(p):
    p.control("POST", "/faults", {"tool": "send_message", "latency_ms": 1500})
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c04", "text": "Your order is on its way", "idempotency_key": "b6-key-dup-0001"}
    codes = [None, None]
    def send(i):
        codes[i] = summary(p.tool("owner", "send_message", args))
    threads = [threading.Thread(target=send, args=(0,))]
    threads[0].start(); time.sleep(0.4)
    threads.append(threading.Thread(target=send, args=(1,))); threads[1].start()
    for t in threads: t.join()
    p.control("DELETE", "/faults")
    return {"first, duplicate": codes, "messages with that text": texts(p, "cnv_c04", args["text"])}

@scenario("b6-04-auth1")
def _(p):
    s, h, j, d = p.rpc(None, "tools/list")
    url = re.search(r'resource_metadata="([^"]+)"', hdr(h, "www-authenticate") or "")
    path = re.sub(r"^https?://[^/]+", "", url.group(1)) if url else None
    out = {"challenge names": path}
    for pth in (path, "/.well-known/oauth-protected-resource"):
        s, h, j, d = p.http("GET", pth)
        out[pth] = (s, (j or {}).get("resource", "").replace(f"127.0.0.1:{p.pport}", "127.0.0.1:PORT") if isinstance(j, dict) else None)
    return out

@scenario("b6-05-pag5")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    c = meta(a)["next_cursor"]
    i = next(k for k, ch in enumerate(c) if ch.isalpha())
    flipped = c[:i] + c[i].swapcase() + c[i + 1:]
    out = {}
    for label, cur in (("as given", c), ("one letter's case flipped", flipped)):
        r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5, "cursor": cur})
        out[label] = summary(r) if err(r) else ids(r, "orders")[:2]
    return out

@scenario("b6-06-pre2")
def _(p):
    w = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0002", "status": "accepted", "expected_status": "received"})
    l = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "status": ["accepted"], "limit": 50})
    r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "status": ["received"], "limit": 50})
    return {"write": summary(w), "get_order": status_of(p, "ord_c0002"),
            "listed under accepted": "ord_c0002" in ids(l, "orders"), "listed under received": "ord_c0002" in ids(r, "orders")}

@scenario("b6-07-proto2")
def _(p):
    out = {}
    for rid in (41, "forty-two"):
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "orders/frobnicate"}).encode()
        s, h, j, d = p.http("POST", "/mcp", body, {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25", "authorization": "Bearer dev-token-owner"})
        out[f"id {json.dumps(rid)}"] = (s, j.get("id") if j else None, (j or {}).get("error", {}).get("code"))
    return out

@scenario("b6-08-pre1")
def _(p):
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0006", "status": "accepted", "expected_status": None})
    m = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0007", "status": "accepted"})
    return {"expected_status null": summary(r), "ord_c0006 now": status_of(p, "ord_c0006"), "expected_status missing": summary(m)}

@scenario("b6-09-idem3")
def _(p):
    key = "b6-key-route-0001"
    a = p.tool("owner", "send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "text": "Table for two at eight", "idempotency_key": key})
    b = p.tool("owner", "send_message", {"restaurant_id": "rst_small", "conversation_id": "cnv_s01", "text": "We open at noon", "idempotency_key": key})
    return {"first (rst_central)": summary(a), "same key, rst_small, other text": summary(b),
            "cnv_s01 holds the text": texts(p, "cnv_s01", "We open at noon", "rst_small")}

@scenario("b6-10-auth7")
def _(p):
    def read():
        s, h, j, d = p.rpc("staff", "resources/read", {"uri": "chataigne://restaurants/rst_central"})
        return "contents" if j and "result" in j else (j or {}).get("error", {}).get("code")
    before = read()
    p.control("POST", "/memberships/revoke", {"user_id": "usr_staff", "organization_id": "org_maison"})
    after = read()
    tool = summary(p.tool("staff", "get_restaurant", {"restaurant_id": "rst_central"}))
    return {"read before revoke": before, "read after revoke": after, "get_restaurant after revoke": tool}

@scenario("b6-11-idem6")
def _(p):
    args = {"restaurant_id": "rst_central", "text": "Check the fridge at closing", "idempotency_key": "b6-key-slide-0001"}
    a = p.tool("owner", "create_instruction", args)
    p.control("POST", "/clock/advance", {"seconds": 23 * 3600})
    b = p.tool("owner", "create_instruction", args)
    p.control("POST", "/clock/advance", {"seconds": 2 * 3600})
    c = p.tool("owner", "create_instruction", args)
    ia = sc(a)["data"]["instruction"]["id"]
    return {"at 23 h": (meta(b)["replayed"], sc(b)["data"]["instruction"]["id"] == ia),
            "at 25 h (replayed at 23 h)": (meta(c)["replayed"], sc(c)["data"]["instruction"]["id"] == ia)}

@scenario("b6-12-pre3")
def _(p):
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0008", "status": "preparing", "expected_status": "ready"})
    l = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 10})
    return {"ready → preparing": summary(r), "get_order": status_of(p, "ord_c0008"),
            "list_orders shows": [o["status"] for o in items(l, "orders") if o["id"] == "ord_c0008"]}

@scenario("b6-13-abs1")
def _(p):
    out = {}
    for v in ("2025-06-18", "2025-11-25"):
        s, h, j, d = p.rpc("owner", "tools/list", version=v)
        names = [t["name"] for t in j["result"]["tools"]]
        out[v] = (len(names), [n for n in names if "cancel" in n])
    s, h, j, d = p.rpc("owner", "tools/call", {"name": "cancel_order", "arguments": {"restaurant_id": "rst_central", "order_id": "ord_c0024"}},
        version="2025-06-18")
    out["cancel_order ord_c0024"] = summary(j["result"]) if "result" in j else j["error"]["code"]
    out["ord_c0024 now"] = status_of(p, "ord_c0024")
    return out

@scenario("b6-14-proto5")
def _(p):
    out = {}
    for origin in ("null", "http://evil.example", "http://localhost:6274"):
        out[f"Origin: {origin}"] = p.rpc("owner", "ping", headers={"origin": origin})[0]
    return out

@scenario("b6-15-lim3")
def _(p):
    args = {"restaurant_id": "rst_central", "status": "open", "expected_status": "open"}
    codes = [summary(p.tool("owner", "set_restaurant_status", args)) for _ in range(500)]
    second = summary(p.tool("owner_second_client", "set_restaurant_status", args))
    own = summary(p.tool("owner", "set_restaurant_status", args))
    return {"owner, calls 1-500": sorted(set(codes)), "same user, second client, call 1": second, "owner, call 501": own}

@scenario("b6-16-pag1")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central"})
    b = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "cursor": meta(a)["next_cursor"]})
    return {"first page": len(items(a, "orders")), "next page, no limit": len(items(b, "orders"))}

@scenario("b6-17-abs2")
def _(p):
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0010", "status": "canceled", "expected_status": "received"})
    return {"status \"canceled\"": summary(r), "ord_c0010 now": status_of(p, "ord_c0010")}

@scenario("b6-18-auth4")
def _(p):
    out = {}
    for tool, args in (("get_restaurant", {"restaurant_id": "rst_small"}), ("list_orders", {"restaurant_id": "rst_small"}),
                       ("get_restaurant", {"restaurant_id": "rst_central"})):
        r = p.tool("staff", tool, args)
        out[f"staff {tool} {args['restaurant_id']}"] = summary(r)
    return out

@scenario("b6-19-pag3")
def _(p):
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c01"}
    a = p.tool("owner", "get_conversation", args)
    out = {"messages": len(items(a, "messages")), "next_cursor": bool(meta(a).get("next_cursor"))}
    if meta(a).get("next_cursor"):
        b = p.tool("owner", "get_conversation", {**args, "cursor": meta(a)["next_cursor"]})
        out["next page"] = summary(b) if err(b) else len(items(b, "messages"))
    return out

@scenario("b6-20-proto4")
def _(p):
    w = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0017", "status": "accepted", "expected_status": "received"})
    g = p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0017"})
    i = p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "Stack the chairs", "idempotency_key": "b6-key-ms-000001"})
    return {"write's updated_at fits the schema": bool(INSTANT.match(sc(w)["data"]["order"]["updated_at"])),
            "get_order's updated_at fits": bool(INSTANT.match(sc(g)["data"]["order"]["updated_at"])),
            "new instruction's created_at fits": bool(INSTANT.match(sc(i)["data"]["instruction"]["created_at"]))}

@scenario("b6-21-idem7")
def _(p):
    key = "b6-key-claim-0001"
    a = p.tool("staff", "send_message", {"restaurant_id": "rst_small", "conversation_id": "cnv_s01", "text": "Hello", "idempotency_key": key})
    b = p.tool("staff", "send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_c03", "text": "Hello from Central", "idempotency_key": key})
    return {"staff, rst_small (not theirs)": summary(a), "same key, rst_central": summary(b)}

@scenario("b6-22-env1")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    b = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5, "cursor": meta(a)["next_cursor"]})
    return {"first page text blocks": len(a["content"]), "next page text blocks": len(b["content"])}

@scenario("b6-23-proto3")
def _(p):
    out = {}
    r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": "5"})
    out["limit \"5\""] = summary(r) if err(r) else len(items(r, "orders"))
    r = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": "3"})
    out["message_limit \"3\""] = summary(r) if err(r) else len(items(r, "messages"))
    return out

@scenario("b6-24-auth6")
def _(p):
    args = {"organization_id": "org_maison", "name": "Chataigne Annexe", "timezone": "Europe/Paris"}
    m = p.tool("manager", "create_restaurant", {**args, "idempotency_key": "b6-key-annexe-01"})
    s = p.tool("staff", "create_restaurant", {**args, "idempotency_key": "b6-key-annexe-02"})
    return {"manager": summary(m), "staff": summary(s)}

@scenario("b6-25-sec2")
def _(p):
    p.control("POST", "/faults", {"tool": "get_order", "error": "internal"})
    s, h, j, d = p.rpc("owner", "tools/call", {"name": "get_order", "arguments": {"restaurant_id": "rst_central", "order_id": "ord_c0001"}})
    return {"code": err(j["result"]), "x-error-detail": hdr(h, "x-error-detail")}

@scenario("b6-26-proto1")
def _(p):
    out = {}
    for v in ("2025-11-25", "2099-01-01", "1.0"):
        s, h, j, d = p.rpc("owner", "ping", version=v)
        out[v] = (s, "result" in (j or {}))
    return out

@scenario("b6-27-lim4")
def _(p):
    text = "Sorry for the wait, dessert is on us"
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c05", "text": text, "idempotency_key": "b6-key-late-0001"}
    p.control("POST", "/deadlines", {"write_ms": 300})
    p.control("POST", "/faults", {"tool": "send_message", "delay_after_effect_ms": 1000})
    a = p.tool("owner", "send_message", args)
    time.sleep(1.5)
    p.control("DELETE", "/faults")
    p.control("POST", "/deadlines", {"write_ms": 20000})
    b = p.tool("owner", "send_message", args)
    return {"first call": summary(a), "retry, same key": (summary(b), meta(b).get("replayed")), "messages with that text": texts(p, "cnv_c05", text)}

@scenario("b6-28-env6")
def _(p):
    key = "b6-key-echo-7f3a9c"
    p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "First", "idempotency_key": key})
    r = p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "Second", "idempotency_key": key})
    e = sc(r)["data"]["error"]
    return {"code": e["code"], "message names the key": key in e["message"]}

@scenario("b6-29-lim7")
def _(p):
    out = {}
    for n in (1_040_000, 1_100_000):
        msg = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        body = (msg[:-1] + " " * (n - len(msg)) + "}").encode()
        s, h, j, d = p.http("POST", "/mcp", body, {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25", "authorization": "Bearer dev-token-owner"})
        out[f"{len(body)} bytes"] = s
    return out

@scenario("b6-30-lim1")
def _(p):
    out = {}
    for frm, to in (("2026-11-29", "2026-11-30"), ("2026-11-30", "2026-11-30")):
        r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count", "revenue_cents"], "from": frm, "to": to})
        data = sc(r)["data"]
        series = [s["values"]["orders_count"] for s in data["series"]]
        out[f"{frm}..{to}"] = {"series orders_count": series, "totals orders_count": data["totals"]["orders_count"]}
    return out

main()
