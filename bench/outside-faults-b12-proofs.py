#!/usr/bin/env python3
"""Batch 12 of the outside faults, shown live (docs/OUTSIDE_FAULTS_BATCH12.md): for each `b12-`
fault, the same requests through the healthy proxy (`none`) and through the fault's proxy, each in
front of a fresh reference server; prints both observations and whether they differ. Exit status
1 unless every fault asked for differs. Built on bench/outside_faults_common.py.

Usage (from the repository root, after `cargo build -p mock-server --bin chataigne-mock --example fault_proxy`):
  bench/outside-faults-b12-proofs.py [FAULT...]
  env: MOCK=target/debug/chataigne-mock PROXY=target/debug/examples/fault_proxy
       OUT=target/outside-faults-b12-proofs (server and proxy logs) PORT=19500 (uses PORT..PORT+1, PORT+20..PORT+21)
"""
import json, os, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_faults_common import *  # noqa: E402,F401,F403
configure("target/outside-faults-b12-proofs", 19500)

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

def outcome(r):
    return summary(r) if err(r) else "ok"

def message_count(p, conversation="cnv_c01"):
    r = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": conversation, "message_limit": 1})
    return sc(r)["data"]["conversation"]["message_count"]

def two_messages(p, first, second):
    """Two send_message calls to cnv_c01, each dict completing the common arguments: both answers
    and how many messages they added."""
    before = message_count(p)
    base = {"restaurant_id": "rst_central", "conversation_id": "cnv_c01"}
    a = p.tool("owner", "send_message", dict(base, **first))
    b = p.tool("owner", "send_message", dict(base, **second))
    return a, b, message_count(p) - before

def together(p, calls, gap=0.3):
    """Each (persona, tool, args) in a thread of its own, started `gap` seconds apart."""
    res = [None] * len(calls)
    def go(i, persona, tool, args): res[i] = p.tool(persona, tool, args)
    threads = []
    for i, (persona, tool, args) in enumerate(calls):
        t = threading.Thread(target=go, args=(i, persona, tool, args)); t.start(); threads.append(t)
        time.sleep(gap)
    for t in threads: t.join()
    return res

@scenario("b12-01-proto1")
def _(p):
    s, h, j, d = p.http("GET", "/mcp", None, {"accept": "text/event-stream", "authorization": "Bearer dev-token-owner"})
    ping = p.rpc("owner", "ping", {})[0]
    return {"GET /mcp (event stream asked)": s, "POST ping": ping}

@scenario("b12-02-idem2")
def _(p):
    text = "Votre table est prête."
    a, b, added = two_messages(p, {"text": text, "idempotency_key": "b12-key-guard-0001"}, {"text": text, "idempotency_key": "b12-key-guard-0002"})
    same = sc(a)["data"]["message"]["id"] == sc(b)["data"]["message"]["id"] if not err(a) and not err(b) else None
    return {"first key": outcome(a), "second key, same arguments": (outcome(b), meta(b).get("replayed")),
            "same message id": same, "messages added": added}

@scenario("b12-03-pag5")
def _(p):
    r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    cursor = meta(r)["next_cursor"]
    last = cursor[-1]
    unused = cursor[:-1] + B64[B64.index(last) ^ 1]
    used = cursor[:-1] + B64[B64.index(last) ^ 32]
    out = {}
    for label, c in (("as issued", cursor), ("last character changed in its unused bits", unused), ("last character changed in its used bits", used)):
        out[label] = outcome(p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5, "cursor": c}))
    return out

@scenario("b12-04-auth1")
def _(p):
    out = {}
    for method, params in (("prompts/list", {}), ("resources/list", {}), ("tools/list", {})):
        s, h, j, d = p.rpc(None, method, params)
        out[f"{method} without a token"] = (s, bool(hdr(h, "www-authenticate")))
    return out

@scenario("b12-05-pre2")
def _(p):
    order = first_order(p, "received")
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "preparing"})
    listed = [o["status"] for o in items(p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 50}), "orders") if o["id"] == order]
    return {"move with a stale expected_status": outcome(r), "get_order after it": order_status(p, order), "list_orders after it": listed}

@scenario("b12-06-lim1")
def _(p):
    out = {}
    for frm, to in (("2025-03-29", "2026-03-30"), ("2025-06-01", "2026-06-02"), ("2025-03-29", "2026-03-29")):
        r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count"], "from": frm, "to": to})
        out[f"{frm}..={to}"] = outcome(r)
    return out

@scenario("b12-07-env5")
def _(p):
    p.control("POST", "/deadlines", {"read_ms": 300})
    p.control("POST", "/faults", {"tool": "get_order", "latency_ms": 900})
    e = error_of(p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0001"}))
    return {"get_order past its deadline": (e.get("code"), e.get("category"), e.get("retryable"))}

@scenario("b12-08-auth5")
def _(p):
    r = p.tool("owner", "list_conversations", {"restaurant_id": "rst_central", "channel": "sms"})
    got = items(r, "conversations") or []
    return {"restaurants listed": sorted(set(c["restaurant_id"] for c in got)), "conversations": len(got),
            "cnv_rival listed": "cnv_rival" in [c["id"] for c in got]}

@scenario("b12-09-proto3")
def _(p):
    out = {}
    for label, status in (("status \"received\" (a string)", "received"), ("status [\"received\"]", ["received"])):
        r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "status": status, "limit": 3})
        out[label] = outcome(r)
    return out

@scenario("b12-10-idem5")
def _(p):
    p.control("POST", "/faults", {"tool": "create_organization", "latency_ms": 1500})
    key = "b12-key-shared-0001"
    a, b = together(p, [("owner", "create_organization", {"name": "Chataigne Owner Side", "idempotency_key": key}),
                        ("manager", "create_organization", {"name": "Chataigne Manager Side", "idempotency_key": key})], gap=0.4)
    return {"owner": outcome(a), "manager, same client and key, while the owner's runs": outcome(b)}

@scenario("b12-11-pag4")
def _(p):
    out = {}
    for limit in (1, 50):
        n, got = pages(p, "owner", "list_restaurants", {"limit": limit}, "restaurants")
        out[f"walk at limit {limit}"] = [r["id"] for r in got]
    return out

@scenario("b12-12-lim7")
def _(p):
    out = {}
    for n in (119, 120):
        r = p.tool("owner", "create_organization", {"name": "N" * n, "idempotency_key": f"b12-key-name-{n}"})
        out[f"name of {n} characters"] = outcome(r)
    return out

@scenario("b12-13-proto5")
def _(p):
    body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    out = {}
    for label, origin in (("foreign Origin", "http://evil.example"), ("loopback Origin", "http://localhost:6274")):
        out[f"notification, {label}"] = raw(p, body, headers={"origin": origin})[0]
    out["ping, foreign Origin"] = raw(p, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"origin": "http://evil.example"})[0]
    return out

@scenario("b12-14-abs2")
def _(p):
    order = first_order(p, "received", restaurant="rst_small")
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_small", "order_id": order, "status": "accepted", "expected_status": "received"})
    answered = sc(r)["data"]["order"]["status"] if not err(r) else err(r)
    read = order_status(p, order, restaurant="rst_small")
    m = p.tool("owner", "update_order_status", {"restaurant_id": "rst_small", "order_id": order, "status": "preparing", "expected_status": "accepted"})
    return {"accept an order of paused rst_small": (outcome(r), answered), "read after it": read, "then accepted → preparing": outcome(m)}

@scenario("b12-15-env2")
def _(p):
    out = {}
    for label, extra in (("with the caller's x-request-id", {"x-request-id": "client-trace-0001"}), ("without", {})):
        s, h, j, d = p.rpc("owner", "tools/call", {"name": "get_restaurant", "arguments": {"restaurant_id": "rst_central"}}, headers=extra)
        out[label] = hdr(h, "x-request-id") == meta(j["result"]).get("request_id")
    return out

@scenario("b12-16-pre4")
def _(p):
    p.control("POST", "/faults", {"tool": "set_restaurant_status", "latency_ms": 800})
    args = {"restaurant_id": "rst_central", "status": "paused", "expected_status": "open"}
    a, b = together(p, [("manager", "set_restaurant_status", args), ("owner", "set_restaurant_status", args)], gap=0.3)
    p.control("DELETE", "/faults")
    return {"outcomes": sorted([outcome(a), outcome(b)]), "final": restaurant_status(p)}

@scenario("b12-17-idem3")
def _(p):
    key = "b12-key-mismatch-01"
    a, b, added = two_messages(p, {"text": "Premier message.", "idempotency_key": key}, {"text": "Un autre message.", "idempotency_key": key})
    return {"first": outcome(a), "same key, other text": outcome(b), "messages added": added}

@scenario("b12-18-lim2")
def _(p):
    served, first_refused = 0, None
    for i in range(1, 252):
        r = p.tool("owner", "create_organization", {"name": f"Chataigne Rate {i}", "idempotency_key": f"b12-key-rate-{i:04d}"})
        if err(r):
            first_refused = first_refused or (i, err(r))
        else:
            served += 1
    return {"keyed calls served of 251": served, "first refused": first_refused}

@scenario("b12-19-env1")
def _(p):
    order = first_order(p, "received")
    a = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"})
    b = p.tool("manager", "set_restaurant_status", {"restaurant_id": "rst_central", "status": "open", "expected_status": "open"})
    c = p.tool("owner", "get_restaurant", {"restaurant_id": "rst_central"})
    return {label: (outcome(r), sorted(meta(r))) for label, r in (("update_order_status", a), ("set_restaurant_status", b), ("get_restaurant", c))}

@scenario("b12-20-pag3")
def _(p):
    n, got = pages(p, "owner", "list_instructions", {"restaurant_id": "rst_central", "limit": 2}, "instructions")
    n50, all50 = pages(p, "owner", "list_instructions", {"restaurant_id": "rst_central", "limit": 50}, "instructions")
    return {"walk at limit 2": (n, len(got)), "walk at limit 50": (n50, len(all50))}

@scenario("b12-21-idem1")
def _(p):
    out = {}
    for key in (" b12-ky1", "b12-key1", "  b12-key-blank  "):
        r = p.tool("owner", "create_organization", {"name": "Chataigne Key " + key.strip(), "idempotency_key": key})
        out[f"key {json.dumps(key)} ({len(key)} characters)"] = outcome(r)
    return out

@scenario("b12-22-auth2")
def _(p):
    out = {}
    for method in ("GET", "DELETE"):
        for persona in ("other_audience", "owner"):
            s, h, j, d = p.http(method, "/mcp", None, {"accept": "text/event-stream", "authorization": "Bearer dev-token-" + persona})
            out[f"{method} /mcp, {persona}"] = s
    return out

@scenario("b12-23-pre1")
def _(p):
    before = {r: restaurant_status(p, r) for r in ("rst_central", "rst_large", "rst_small")}
    m = p.tool("manager", "set_restaurant_status", {"restaurant_id": "rst_central", "status": "paused", "expected_status": "open"})
    after = {r: restaurant_status(p, r) for r in ("rst_central", "rst_large", "rst_small")}
    return {"pause rst_central": outcome(m), "before": before, "after": after}

@scenario("b12-24-proto4")
def _(p):
    out = {}
    for g in ("day", "week", "month"):
        r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count"], "from": "2026-01-01", "to": "2026-02-28", "granularity": g})
        series = sc(r).get("data", {}).get("series") or [{}]
        out[g] = (outcome(r), series[0].get("period_start"))
    return out

@scenario("b12-25-sec2")
def _(p):
    p.control("POST", "/faults", {"tool": "get_order", "error": "internal"})
    s, h, j, d = p.rpc("owner", "tools/call", {"name": "get_order", "arguments": {"restaurant_id": "rst_central", "order_id": "ord_c0001"}})
    text = d.decode()
    return {"code": err(j["result"]), "result _meta": sorted((j["result"].get("_meta") or {}).keys()),
            "names a database URL or a source path": any(x in text for x in ("postgres://", ".rs:"))}

@scenario("b12-26-env7")
def _(p):
    r = p.tool("manager", "create_instruction", {"restaurant_id": "rst_central", "text": "Servir l'eau en carafe.", "idempotency_key": "b12-key-instr-0001"})
    s, h, j, d = p.rpc("owner", "tools/list", {})
    tool = next(t for t in j["result"]["tools"] if t["name"] == "create_instruction")
    published = tool["outputSchema"]["oneOf"][0]["properties"]["data"]["properties"]["instruction"]["required"]
    return {"data.instruction members": sorted(sc(r)["data"]["instruction"]), "published required members": sorted(published)}

@scenario("b12-27-pag8")
def _(p):
    out = {}
    for label, extra in (("no message_limit", {}), ("message_limit 50", {"message_limit": 50})):
        r = p.tool("owner", "get_conversation", dict({"restaurant_id": "rst_central", "conversation_id": "cnv_long"}, **extra))
        out[label] = len(items(r, "messages") or [])
    return out

@scenario("b12-28-lim7")
def _(p):
    out = {}
    for method in ("ping", "tools/call"):
        params = {"_meta": {"pad": "x" * (1 << 20)}}
        if method == "tools/call":
            params.update({"name": "get_restaurant", "arguments": {"restaurant_id": "rst_central"}})
        body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()
        out[f"{method} of {len(body)} bytes"] = raw(p, body)[0]
    return out

@scenario("b12-29-auth8")
def _(p):
    order = first_order(p, "received")
    r = p.tool("outsider", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"})
    return {"outsider moves an order of rst_central": outcome(r), "the order after it": order_status(p, order)}

@scenario("b12-30-pre1")
def _(p):
    out = {}
    for version in ("2025-11-25", "2025-06-18"):
        order = first_order(p, "received")
        s, h, j, d = p.rpc("owner", "tools/call", {"name": "update_order_status", "arguments": {"restaurant_id": "rst_central", "order_id": order, "status": "accepted"}}, version=version)
        out[f"no expected_status, on {version}"] = (outcome(j["result"]), order_status(p, order))
    return out

if __name__ == "__main__":
    main()
