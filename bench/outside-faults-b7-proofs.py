#!/usr/bin/env python3
"""Batch 7 of the outside faults, shown live (docs/OUTSIDE_FAULTS_BATCH7.md): for each `b7-` fault,
the same requests through the healthy proxy (`none`) and through the fault's proxy, each in front
of a fresh reference server started as bench/outside-faults.sh starts it; prints both observations
and whether they differ. Exit status 1 unless every fault asked for differs.

Usage (from the repository root, after `cargo build -p mock-server --bins --example fault_proxy`):
  bench/outside-faults-b7-proofs.py [FAULT...]
  env: MOCK=target/debug/chataigne-mock PROXY=target/debug/examples/fault_proxy
       OUT=target/outside-faults-b7-proofs (server and proxy logs) PORT=18900 (uses PORT..PORT+1, PORT+20..PORT+21)
"""
import json, os, re, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_faults_proofs import *  # noqa: E402,F401,F403 (the harness: Pair, scenario, main, …)
configure("target/outside-faults-b7-proofs", 18900)

H = {"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}

def raw(p, body, persona="owner", headers=None):
    h = dict(H)
    if persona: h["authorization"] = "Bearer dev-token-" + persona
    h.update(headers or {})
    return p.http("POST", "/mcp", body if isinstance(body, bytes) else json.dumps(body).encode(), h)

def rpc_outcome(j):
    if not j: return None
    if "error" in j: return ("error", j["error"].get("code"))
    return ("result", "contents" if "contents" in (j.get("result") or {}) else sorted((j.get("result") or {}).keys()))

def texts(p, conversation, text, restaurant="rst_central"):
    c = p.tool("owner", "get_conversation", {"restaurant_id": restaurant, "conversation_id": conversation, "message_limit": 100})
    return sum(1 for m in items(c, "messages") if m["text"] == text)

@scenario("b7-01-proto1")
def _(p):
    s, h, j, d = p.rpc("owner", "initialize", INIT)
    adv = "logging" in ((j or {}).get("result", {}).get("capabilities") or {})
    s, h, j, d = p.rpc("owner", "logging/setLevel", {"level": "info"})
    return {"logging advertised": adv, "logging/setLevel": (s, rpc_outcome(j))}

@scenario("b7-02-proto2")
def _(p):
    out = {}
    for rid in (0, 1):
        s, h, j, d = raw(p, {"jsonrpc": "2.0", "id": rid, "method": "ping"})
        out[f"ping id {rid}"] = (s, j.get("id") if j else None, "result" in (j or {}))
    return out

@scenario("b7-03-auth4")
def _(p):
    out = {}
    for rst in ("rst_rival", "rst_nowhere"):
        r = p.tool("owner", "get_analytics", {"restaurant_id": rst, "metrics": ["orders_count"], "from": "2026-11-01", "to": "2026-11-30"})
        out[rst] = summary(r) if err(r) else sc(r)["data"]["totals"]
    return out

@scenario("b7-04-auth3")
def _(p):
    out = {}
    for persona in ("owner", "noscope"):
        s, h, j, d = p.rpc(persona, "resources/read", {"uri": "chataigne://restaurants/rst_central"})
        out[persona] = rpc_outcome(j)
    out["noscope get_restaurant"] = summary(p.tool("noscope", "get_restaurant", {"restaurant_id": "rst_central"}))
    return out

@scenario("b7-05-pag5")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    c = meta(a)["next_cursor"]
    encoded = "%{:02X}".format(ord(c[0])) + c[1:]
    out = {}
    for label, cur in (("as given", c), ("first character percent-encoded", encoded)):
        r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5, "cursor": cur})
        out[label] = summary(r) if err(r) else ids(r, "orders")[:2]
    return out

@scenario("b7-06-pre2")
def _(p):
    w = p.tool("owner", "set_restaurant_status", {"restaurant_id": "rst_small", "status": "open", "expected_status": "paused"})
    g = p.tool("owner", "get_restaurant", {"restaurant_id": "rst_small"})
    l = p.tool("owner", "list_restaurants", {"organization_id": "org_maison"})
    listed = {r["id"]: r["status"] for r in items(l, "restaurants")}
    return {"write": summary(w), "get_restaurant": sc(g)["data"]["restaurant"]["status"], "list_restaurants": listed.get("rst_small")}

@scenario("b7-07-proto2")
def _(p):
    out = {}
    for name in ("work_the_order_queue", "no_such_prompt"):
        s, h, j, d = p.rpc("owner", "prompts/get", {"name": name, "arguments": {"restaurant_id": "rst_central"}})
        out[name] = (s, rpc_outcome(j))
    return out

@scenario("b7-08-proto3")
def _(p):
    out = {}
    for limit in (20, 20.5):
        r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": limit})
        out[f"limit {limit}"] = summary(r) if err(r) else len(ids(r, "orders"))
    return out

@scenario("b7-09-auth6")
def _(p):
    out = {}
    for i, persona in enumerate(("staff", "manager")):
        r = p.tool(persona, "create_instruction", {"restaurant_id": "rst_central", "text": "Check the terrace heaters at noon",
            "idempotency_key": f"b7-ins-role-{i:04d}"})
        out[persona] = summary(r)
    return out

@scenario("b7-10-pag8")
def _(p):
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": 10}
    a = p.tool("owner", "get_conversation", args)
    b = p.tool("owner", "get_conversation", dict(args, cursor=meta(a)["next_cursor"]))
    return {"first page": len(items(a, "messages")), "page through the cursor": summary(b) if err(b) else len(items(b, "messages")),
            "its next_cursor": bool(meta(b).get("next_cursor"))}

@scenario("b7-11-idem6")
def _(p):
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c02", "text": "Your table is ready", "idempotency_key": "b7-key-ttl-0001"}
    a = p.tool("owner", "send_message", args)
    p.control("POST", "/clock/advance", {"seconds": 90})
    b = p.tool("owner", "send_message", args)
    return {"first": summary(a), "same call 90 s later replayed": meta(b).get("replayed"),
            "same message id": sc(a)["data"]["message"]["id"] == sc(b)["data"]["message"]["id"],
            "messages with that text": texts(p, "cnv_c02", args["text"])}

@scenario("b7-12-idem7")
def _(p):
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c03", "text": "We saved your scarf", "idempotency_key": "b7-key-dep-0001"}
    p.control("POST", "/faults", {"tool": "send_message", "error": "dependency"})
    a = p.tool("owner", "send_message", args)
    p.control("DELETE", "/faults")
    b = p.tool("owner", "send_message", args)
    return {"during the outage": summary(a), "retry with the same key": summary(b), "messages with that text": texts(p, "cnv_c03", args["text"])}

@scenario("b7-13-auth1")
def _(p):
    s, h, j, d = p.http("GET", "/.well-known/oauth-protected-resource")
    return {"resource": (j or {}).get("resource", "").replace(f"127.0.0.1:{p.pport}", "127.0.0.1:PORT")}

@scenario("b7-14-proto5")
def _(p):
    out = {}
    for origin in ("http://localhost:3000", "http://evil-localhost", "http://evil.example"):
        s, h, j, d = p.rpc("owner", "tools/list", {}, headers={"origin": origin})
        out[origin] = s
    return out

@scenario("b7-15-env5")
def _(p):
    r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "cursor": "not-a-cursor"})
    e = sc(r)["data"]["error"]
    return {"code": e["code"], "category": e["category"]}

@scenario("b7-16-env1")
def _(p):
    args = {"name": "Chataigne Lyon", "idempotency_key": "b7-key-text-0001"}
    a = p.tool("owner", "create_organization", args)
    b = p.tool("owner", "create_organization", args)
    return {"first: text blocks": len(a.get("content", [])), "replay": meta(b).get("replayed"), "replay: text blocks": len(b.get("content", []))}

@scenario("b7-17-idem1")
def _(p):
    out = {}
    for label, key in (("255 é composed", "\u00e9" * 255), ("255 é decomposed (510 code points)", "e\u0301" * 255)):
        r = p.tool("owner", "create_organization", {"name": "Chataigne Nice", "idempotency_key": key})
        out[label] = summary(r)
    return out

@scenario("b7-18-idem3")
def _(p):
    a = p.tool("owner", "create_organization", {"name": "Chataigne Alpha", "idempotency_key": "B7-KEY-CASE-0001"})
    b = p.tool("owner", "create_organization", {"name": "Chataigne Beta", "idempotency_key": "b7-key-case-0001"})
    return {"KEY upper case": summary(a), "key lower case, other name": summary(b)}

@scenario("b7-19-env4")
def _(p):
    r = p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_nowhere"})
    e = sc(r)["data"]["error"]
    return {"code": e["code"], "members": sorted(e)}

@scenario("b7-20-auth2")
def _(p):
    s, h, j, d = p.rpc("other_audience", "tools/list", {})
    return {"other audience tools/list": s}

@scenario("b7-21-pag6")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    r = p.tool("owner", "list_conversations", {"restaurant_id": "rst_central", "limit": 5, "cursor": meta(a)["next_cursor"]})
    return {"list_orders' cursor on list_conversations": summary(r) if err(r) else ids(r, "conversations")[:2]}

@scenario("b7-22-env6")
def _(p):
    cursor = "zzzzzzzzzzzzzzzzzzzzzzzz.yyyyyyyy"
    r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "cursor": cursor})
    e = sc(r)["data"]["error"]
    return {"code": e["code"], "message quotes the cursor": cursor[:8] in e["message"]}

@scenario("b7-23-lim2")
def _(p):
    args = {"restaurant_id": "rst_large", "status": "paused"}  # no expected_status: refused, and counted
    t0 = p.control("GET", "/clock")["now_ms"]
    for _ in range(500):
        p.tool("manager", "set_restaurant_status", args)
    first = p.tool("manager", "set_restaurant_status", args)
    now = p.control("GET", "/clock")["now_ms"]
    p.control("POST", "/clock/advance", {"ms": max(0, t0 + 59_400 - now)})
    last = p.tool("manager", "set_restaurant_status", args)
    ra = lambda r: sc(r)["data"]["error"].get("retry_after_ms") if err(r) else None
    return {"call 501": (err(first), (ra(first) or 0) > 0), "in the window's last second": (err(last), ra(last) is not None and ra(last) > 0)}

@scenario("b7-24-pag4")
def _(p):
    n, got = pages(p, "owner", "search_transcripts", {"restaurant_id": "rst_central", "query": "bonjour", "limit": 2}, "transcripts")
    listed = [t["id"] for t in got]
    return {"pages": n, "items": len(listed), "distinct": len(set(listed))}

@scenario("b7-25-proto1")
def _(p):
    s, h, j, d = raw(p, {"jsonrpc": "2.0", "id": 77, "result": {}})
    return {"posted response": (s, len(d) > 0)}

@scenario("b7-26-env2")
def _(p):
    out = {}
    for label, args in (("success", {"restaurant_id": "rst_central", "order_id": "ord_c0001"}),
                        ("error", {"restaurant_id": "rst_central", "order_id": "ord_nowhere"})):
        r = p.tool("owner", "get_order", args)
        rid = meta(r)["request_id"]
        out[label] = (bool(re.fullmatch(r"req_[0-9A-Za-z]{16,}", rid)), len(rid) - 4)
    return out

@scenario("b7-27-abs1")
def _(p):
    s, h, j, d = p.rpc("owner", "tools/list", {})
    names = [t["name"] for t in j["result"]["tools"]]
    return {"tools": len(names), "void/cancel/refund names": [n for n in names if re.search("void|cancel|refund", n)]}

@scenario("b7-28-auth7")
def _(p):
    r = p.tool("revoked", "list_restaurants", {})
    return {"revoked user's list_restaurants": summary(r) if err(r) else ids(r, "restaurants")}

@scenario("b7-29-lim7")
def _(p):
    out = {}
    for size in (1024 * 1024 - 1, 1024 * 1024, 1024 * 1024 + 1):
        msg = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        body = msg[:-1] + b" " * (size - len(msg)) + b"}"
        s, h, j, d = raw(p, body)
        out[str(size)] = s
    return out

@scenario("b7-30-idem4")
def _(p):
    p.control("POST", "/faults", {"tool": "send_message", "latency_ms": 1500})
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c04", "text": "Ready in ten minutes", "idempotency_key": "b7-key-dup-0001"}
    res = [None, None]
    def send(i):
        res[i] = p.tool("owner", "send_message", args)
    threads = [threading.Thread(target=send, args=(0,))]
    threads[0].start(); time.sleep(0.4)
    threads.append(threading.Thread(target=send, args=(1,))); threads[1].start()
    for t in threads: t.join()
    p.control("DELETE", "/faults")
    e = sc(res[1]).get("data", {}).get("error") or {}
    return {"duplicate": e.get("code"), "category": e.get("category"), "retryable": e.get("retryable")}

if __name__ == "__main__":
    main()
