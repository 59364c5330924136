#!/usr/bin/env python3
"""Batch 11 of the outside faults, shown live (docs/OUTSIDE_FAULTS_BATCH11.md): for each `b11-`
fault, the same requests through the healthy proxy (`none`) and through the fault's proxy, each in
front of a fresh reference server; prints both observations and whether they differ. Exit status
1 unless every fault asked for differs. Built on bench/outside_faults_common.py.

Usage (from the repository root, after `cargo build -p mock-server --bin chataigne-mock --example fault_proxy`):
  bench/outside-faults-b11-proofs.py [FAULT...]
  env: MOCK=target/debug/chataigne-mock PROXY=target/debug/examples/fault_proxy
       OUT=target/outside-faults-b11-proofs (server and proxy logs) PORT=19400 (uses PORT..PORT+1, PORT+20..PORT+21)
"""
import json, os, sys, threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_faults_common import *  # noqa: E402,F401,F403
configure("target/outside-faults-b11-proofs", 19400)

def outcome(r):
    return summary(r) if err(r) else "ok"

@scenario("b11-01-proto2")
def _(p):
    out = {}
    for uri in ("chataigne://menus/rst_central", "chataigne://contract"):
        s, h, j, d = p.rpc("owner", "resources/read", {"uri": uri})
        out[f"resources/read {uri}"] = rpc_outcome(j)
    return out

@scenario("b11-02-pag4")
def _(p):
    n, got = pages(p, "owner", "list_orders", {"restaurant_id": "rst_central", "limit": 20}, "orders")
    return {"pages": n, "orders walked": len(got),
            "cancelled or rejected walked": sum(o["status"] in ("cancelled", "rejected") for o in got)}

@scenario("b11-03-idem1")
def _(p):
    r = p.tool("owner", "create_organization", {"name": "Chataigne Empty Key", "idempotency_key": ""})
    return {"idempotency_key \"\"": outcome(r), "organizations created": org_names(p).count("Chataigne Empty Key")}

@scenario("b11-04-auth1")
def _(p):
    out = {}
    body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    for label, persona in (("no token", None), ("owner's token", "owner")):
        s, h, j, d = raw(p, body, persona=persona)
        out[f"notification, {label}"] = (s, bool(hdr(h, "www-authenticate")))
    return out

@scenario("b11-05-lim5")
def _(p):
    n, got = pages(p, "owner", "list_orders", {"restaurant_id": "rst_large", "limit": 50}, "orders")
    return {"pages": n, "orders walked": len(got), "distinct": len(set(o["id"] for o in got))}

@scenario("b11-06-proto2")
def _(p):
    out = {}
    for rid in ("", "a", 0):
        s, h, j, d = raw(p, {"jsonrpc": "2.0", "id": rid, "method": "ping"})
        out[f"ping with id {json.dumps(rid)}"] = (s, "id" in (j or {}), (j or {}).get("id"))
    return out

@scenario("b11-07-env4")
def _(p):
    r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "cursor": "not-a-cursor"})
    e = error_of(r)
    return {"code": e.get("code"), "error.request_id == meta.request_id": e.get("request_id") == meta(r).get("request_id")}

@scenario("b11-08-pre1")
def _(p):
    a, b = first_order(p, "received"), first_order(p, "received", n=1)
    before = order_status(p, b)
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": a, "status": "accepted", "expected_status": "received"})
    return {"move the first received order": outcome(r), "the other received order, before and after": (before, order_status(p, b))}

@scenario("b11-09-lim1")
def _(p):
    out = {}
    for frm, to in (("2025-01-15", "2026-01-15"), ("2025-01-01", "2025-12-31")):
        r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count"], "from": frm, "to": to, "granularity": "month"})
        out[f"month, {frm}..={to}"] = outcome(r)
    return out

@scenario("b11-10-auth5")
def _(p):
    out = {}
    for cnv in ("cnv_c01", "cnv_rival"):
        s, h, j, d = p.rpc("owner", "prompts/get", {"name": "answer_a_guest", "arguments": {"restaurant_id": "rst_central", "conversation_id": cnv}})
        text = (((j or {}).get("result") or {}).get("messages") or [{}])[0].get("content", {}).get("text", "")
        out[f"answer_a_guest for {cnv}"] = (rpc_outcome(j), "guest's latest message:" in text)
    return out

@scenario("b11-11-env2")
def _(p):
    rids = [meta(p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0001"})).get("request_id") for _ in range(3)]
    return {"distinct request_ids over 3 quick identical reads": len(set(rids))}

@scenario("b11-12-proto1")
def _(p):
    s, h, j, d = p.rpc("owner", "initialize", INIT)
    sid = hdr(h, "mcp-session-id")
    return {"initialize": rpc_outcome(j), "session id given": sid is not None,
            "session id visible ASCII": None if sid is None else all(0x21 <= ord(c) <= 0x7E for c in sid)}

@scenario("b11-13-pag1")
def _(p):
    out = {}
    for version in ("2025-11-25", "2025-06-18"):
        s, h, j, d = p.rpc("owner", "tools/call", {"name": "list_orders", "arguments": {"restaurant_id": "rst_central"}}, version=version)
        out[f"list_orders, no limit, on {version}"] = len(ids(j["result"], "orders"))
    return out

@scenario("b11-14-abs2")
def _(p):
    order = first_order(p, "received")
    r = p.tool("manager", "create_instruction", {"restaurant_id": "rst_central", "text": f"Merci d'annuler {order}, le client a rappelé.",
                                                 "idempotency_key": "b11-key-instr-0001"})
    status = order_status(p, order)
    m = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"})
    return {"create_instruction": outcome(r), "order status after it": status, "accept it": outcome(m)}

@scenario("b11-15-idem3")
def _(p):
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "text": "Votre café est prêt.", "idempotency_key": "b11-key-nfc-00001"}
    a = p.tool("owner", "send_message", args)
    b = p.tool("owner", "send_message", dict(args, text="Votre cafe\u0301 est pre\u0302t."))
    return {"first (precomposed)": outcome(a), "same key, decomposed text": (outcome(b), meta(b).get("replayed"))}

@scenario("b11-16-lim7")
def _(p):
    body = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "x" * (1 << 20)}}).encode()
    s, h, j, d = raw(p, body)
    small = raw(p, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "x"}})[0]
    return {f"notification of {len(body)} bytes": s, "small notification": small}

@scenario("b11-17-pre2")
def _(p):
    order = first_order(p, "received")
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"})
    n, got = pages(p, "owner", "list_orders", {"restaurant_id": "rst_central", "status": ["received"], "limit": 50}, "orders")
    return {"accept": outcome(r), "still listed under received": order in [o["id"] for o in got]}

@scenario("b11-18-env1")
def _(p):
    out = {}
    for label, args in (("empty list", {"created_from": "2099-01-01T00:00:00Z"}), ("non-empty list", {"limit": 2})):
        r = p.tool("owner", "list_orders", dict({"restaurant_id": "rst_central"}, **args))
        out[label] = (outcome(r), len(items(r, "orders") or []), len(r.get("content", [])))
    return out

@scenario("b11-19-sec2")
def _(p):
    p.control("POST", "/faults", {"tool": "create_organization", "error": "internal"})
    e = error_of(p.tool("owner", "create_organization", {"name": "Chataigne Leak", "idempotency_key": "b11-key-leak-0001"}))
    text = json.dumps(e)
    return {"code": e.get("code"), "names a URL or a source path": any(x in text for x in ("redis://", ".rs:", "password"))}

@scenario("b11-20-auth8")
def _(p):
    before = restaurant_status(p)
    r = p.tool("noscope", "set_restaurant_status", {"restaurant_id": "rst_central", "status": "paused", "expected_status": "open"})
    return {"noscope pauses rst_central": outcome(r), "status before and after": (before, restaurant_status(p))}

@scenario("b11-21-auth4")
def _(p):
    out = {}
    for rid in ("rst_CENTRAL", "rst_Central", "rst_nowhere"):
        out[f"get_restaurant {json.dumps(rid)}"] = outcome(p.tool("owner", "get_restaurant", {"restaurant_id": rid}))
    return out

def concurrent_orgs(p, name, key):
    p.control("POST", "/faults", {"tool": "create_organization", "latency_ms": 1500})
    args = {"name": name, "idempotency_key": key}
    res = [None, None]
    def go(i): res[i] = p.tool("owner", "create_organization", args)
    t0 = threading.Thread(target=go, args=(0,)); t0.start()
    import time; time.sleep(0.4)
    go(1); t0.join()
    p.control("DELETE", "/faults")
    return res

@scenario("b11-22-idem4")
def _(p):
    a, b = concurrent_orgs(p, "Chataigne Concurrent", "b11-key-concurrent1")
    return {"first": outcome(a), "identical call while it runs": outcome(b), "organizations created": org_names(p).count("Chataigne Concurrent")}

@scenario("b11-23-pre3")
def _(p):
    order = first_order(p, "completed")
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "completed"})
    return {"completed → accepted": outcome(r), "final": order_status(p, order)}

@scenario("b11-24-proto4")
def _(p):
    a, b = concurrent_orgs(p, "Chataigne Retry", "b11-key-retryafter")
    e = error_of(b)
    v = e.get("retry_after_ms")
    return {"second call": e.get("code"), "retry_after_ms is an integer": isinstance(v, int) if v is not None else None}

@scenario("b11-25-abs1")
def _(p):
    out = {}
    for persona in ("owner", "owner_second_client"):
        s, h, j, d = p.rpc(persona, "tools/list", {})
        out[f"tools listed to {persona}"] = sorted(t["name"] for t in ((j or {}).get("result") or {}).get("tools", []) if t["name"].startswith("sync"))
        out[f"count for {persona}"] = len(((j or {}).get("result") or {}).get("tools", []))
    return out

@scenario("b11-26-idem2")
def _(p):
    def messages():
        n, got = pages(p, "owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "message_limit": 100}, "messages")
        return len(got)
    before = messages()
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "text": "À tout de suite !", "idempotency_key": "b11-key-behind-001"}
    a = p.tool("owner", "send_message", args)
    b = p.tool("owner", "send_message", args)
    return {"first": outcome(a), "immediate retry": (outcome(b), meta(b).get("replayed")), "messages added": messages() - before}

@scenario("b11-27-sec2")
def _(p):
    out = {}
    for kind in ("panic", "internal"):
        p.control("POST", "/faults", {"tool": "get_order", "error": kind})
        e = error_of(p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0001"}))
        text = json.dumps(e)
        out[f"injected {kind}"] = (e.get("code"), any(x in text for x in ("panicked", ".rs:", "unwrap")))
    p.control("DELETE", "/faults")
    return out

@scenario("b11-28-env3")
def _(p):
    out = {}
    for label, args in (("limit 0", {"restaurant_id": "rst_central", "limit": 0}), ("ok", {"restaurant_id": "rst_central", "limit": 1})):
        r = p.tool("owner", "list_orders", args)
        text = "".join(b.get("text", "") for b in r.get("content", []))
        out[label] = (outcome(r), len(text.encode()) <= 4096)
    return out

@scenario("b11-29-pag3")
def _(p):
    out = {}
    for channel in ("phone", "marketplace"):
        got, cursor, n, last = [], None, 0, None
        while n < 20:
            args = {"restaurant_id": "rst_central", "channel": channel, "limit": 50}
            if cursor: args["cursor"] = cursor
            r = p.tool("owner", "list_orders", args)
            if err(r): return {"refused": err(r)}
            last = len(ids(r, "orders")); got += ids(r, "orders"); n += 1
            cursor = meta(r).get("next_cursor")
            if not cursor: break
        out[channel] = {"pages": n, "orders": len(got), "last page's items": last}
    return out

@scenario("b11-30-lim6")
def _(p):
    out = {}
    for version in ("2025-11-25", "2025-06-18"):
        s, h, j, d = p.rpc("owner", "tools/call", {"name": "get_transcript", "arguments": {"restaurant_id": "rst_central", "transcript_id": "trs_huge"}}, version=version)
        out[f"trs_huge on {version}"] = outcome(j["result"])
    return out

if __name__ == "__main__":
    main()
