#!/usr/bin/env python3
"""Batch 10 of the outside faults, shown live (docs/OUTSIDE_FAULTS_BATCH10.md): for each `b10-`
fault, the same requests through the healthy proxy (`none`) and through the fault's proxy, each in
front of a fresh reference server; prints both observations and whether they differ. Exit status
1 unless every fault asked for differs. Built on bench/outside_faults_common.py.

Usage (from the repository root, after `cargo build -p mock-server --bin chataigne-mock --example fault_proxy`):
  bench/outside-faults-b10-proofs.py [FAULT...]
  env: MOCK=target/debug/chataigne-mock PROXY=target/debug/examples/fault_proxy
       OUT=target/outside-faults-b10-proofs (server and proxy logs) PORT=19300 (uses PORT..PORT+1, PORT+20..PORT+21)
"""
import json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_faults_common import *  # noqa: E402,F401,F403
configure("target/outside-faults-b10-proofs", 19300)

def outcome(r):
    return summary(r) if err(r) else "ok"

@scenario("b10-01-proto2")
def _(p):
    out = {}
    for label, msg in (("prompts/get of an unknown prompt", {"method": "prompts/get", "params": {"name": "nothing_here"}}),
                       ("tools/call of an unknown tool", {"method": "tools/call", "params": {"name": "nothing_here", "arguments": {}}}),
                       ("ping", {"method": "ping"})):
        s, h, j, d = raw(p, dict(msg, jsonrpc="2.0", id="42"))
        out[label] = (rpc_outcome(j), type((j or {}).get("id")).__name__, (j or {}).get("id"))
    return out

@scenario("b10-02-pag2")
def _(p):
    out = {}
    for limit in (49, 50, 51):
        r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": limit})
        out[f"limit {limit}"] = summary(r) if err(r) else len(ids(r, "orders"))
    return out

@scenario("b10-03-abs2")
def _(p):
    r = p.tool("owner", "create_restaurant", {"organization_id": "org_maison", "name": "Chataigne Central",
                                               "timezone": "Europe/Paris", "idempotency_key": "b10-key-samename-01"})
    n, got = pages(p, "owner", "list_restaurants", {"organization_id": "org_maison", "limit": 50}, "restaurants")
    return {"create_restaurant named like rst_central": outcome(r), "rst_central listed": "rst_central" in [x["id"] for x in got],
            "restaurants listed": len(got), "get_restaurant rst_central": restaurant_status(p)}

@scenario("b10-04-proto1")
def _(p):
    out = {}
    for version in ("2025-11-25", "2025-06-18"):
        s, h, j, d = p.rpc("owner", "tools/call", {"name": "get_order", "arguments": {"restaurant_id": "rst_central", "order_id": "ord_c0001"}}, version=version)
        kind = (hdr(h, "content-type") or "").split(";")[0]
        ended = d.endswith(b"\n\n") if kind == "text/event-stream" else None
        out[f"tools/call on {version}"] = (s, kind, ended)
    return out

@scenario("b10-05-lim7")
def _(p):
    out = {}
    for label, text, key in (("1500 emoji (3000 UTF-16 units)", "\U0001F600" * 1500, "b10-key-emoji-0001"),
                             ("1500 é", "é" * 1500, "b10-key-eacute-001")):
        r = p.tool("owner", "send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "text": text, "idempotency_key": key})
        out[label] = outcome(r)
    return out

@scenario("b10-06-pag4")
def _(p):
    n, got = pages(p, "owner", "list_orders", {"restaurant_id": "rst_central", "created_from": "2020-01-01T00:00:00Z", "limit": 20}, "orders")
    ids_ = [o["id"] for o in got]
    return {"pages": n, "orders walked": len(ids_), "distinct": len(set(ids_))}

@scenario("b10-07-env1")
def _(p):
    r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count", "revenue_cents"],
                                          "from": "2026-11-01", "to": "2026-11-07"})
    return {"outcome": outcome(r), "text blocks": len(r.get("content", []))}

@scenario("b10-08-auth1")
def _(p):
    out = {}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    for scheme in ("Bearer", "bearer", "BEARER"):
        h = dict(H, authorization=f"{scheme} dev-token-owner")
        s, hh, j, d = p.http("POST", "/mcp", body, h)
        out[f"{scheme} <valid token>"] = s
    return out

@scenario("b10-09-pre2")
def _(p):
    order = first_order(p, "received")
    args = {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"}
    a = p.tool("owner", "update_order_status", args)
    b = p.tool("owner", "update_order_status", args)
    return {"received → accepted": outcome(a), "the same call again (expected_status now stale)": outcome(b),
            "final": order_status(p, order)}

@scenario("b10-10-pag6")
def _(p):
    a = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": 20})
    c = meta(a)["next_cursor"]
    b = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "message_limit": 20, "cursor": c})
    return {"cnv_long's cursor used for cnv_c01": summary(b) if err(b) else ("served", len(items(b, "messages") or []))}

@scenario("b10-11-env5")
def _(p):
    out = {}
    for label, order in (("another tenant's order", "ord_r0001"), ("an absent order", "ord_nowhere")):
        e = error_of(p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": order}))
        out[label] = (e.get("code"), e.get("category"))
    return out

@scenario("b10-12-idem3")
def _(p):
    args = {"organization_id": "org_maison", "name": "Chataigne Nord", "timezone": "Europe/Paris", "idempotency_key": "b10-key-timezone-01"}
    a = p.tool("owner", "create_restaurant", args)
    b = p.tool("owner", "create_restaurant", dict(args, timezone="Europe/Brussels"))
    n, got = pages(p, "owner", "list_restaurants", {"organization_id": "org_maison", "limit": 50}, "restaurants")
    return {"first": outcome(a), "same key, another timezone": (outcome(b), meta(b).get("replayed")),
            "restaurants named Chataigne Nord": [x["name"] for x in got].count("Chataigne Nord")}

@scenario("b10-13-env5")
def _(p):
    e = error_of(p.tool("owner", "get_transcript", {"restaurant_id": "rst_central", "transcript_id": "trs_huge"}))
    return {"the huge transcript": (e.get("code"), e.get("category"), e.get("retryable"))}

@scenario("b10-14-lim1")
def _(p):
    out = {}
    for frm, to in (("2026-11-01", "2026-11-01"), ("2026-11-01", "2026-11-02")):
        r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count"], "from": frm, "to": to})
        out[f"{frm}..={to}"] = outcome(r)
    return out

@scenario("b10-15-pag1")
def _(p):
    out = {}
    for statuses in (["received"], ["received", "completed"]):
        r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "status": statuses})
        out[f"status {statuses}, no limit"] = summary(r) if err(r) else len(ids(r, "orders"))
    return out

@scenario("b10-16-auth4")
def _(p):
    out = {}
    for label, rst, expected in (("foreign, expected_status wrong", "rst_rival", "paused"),
                                 ("foreign, expected_status right", "rst_rival", "open"),
                                 ("absent", "rst_nowhere", "paused")):
        r = p.tool("owner", "set_restaurant_status", {"restaurant_id": rst, "status": "open" if expected == "paused" else "paused", "expected_status": expected})
        out[label] = outcome(r)
    return out

@scenario("b10-17-idem1")
def _(p):
    out = {}
    for key in ("b10-key8", "b10-key09"):
        r = p.tool("owner", "create_organization", {"name": f"Chataigne {key}", "idempotency_key": key})
        out[f"key of {len(key)} characters"] = outcome(r)
    return out

@scenario("b10-18-pre3")
def _(p):
    order = first_order(p, "received")
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "ready", "expected_status": "received"})
    return {"received → ready": outcome(r), "final": order_status(p, order)}

@scenario("b10-19-auth7")
def _(p):
    s = p.tool("revoked", "search_transcripts", {"restaurant_id": "rst_central", "query": "gluten-free"})
    g = p.tool("revoked", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0001"})
    return {"revoked search_transcripts": summary(s) if err(s) else ("served", len(items(s, "transcripts") or [])),
            "revoked get_order": outcome(g)}

@scenario("b10-20-proto5")
def _(p):
    out = {}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    for label, extra in (("no Origin", {}), ("foreign Origin", {"origin": "http://evil.example"}),
                         ("foreign Origin, Sec-Fetch-Site: same-origin", {"origin": "http://evil.example", "sec-fetch-site": "same-origin"})):
        h = dict(H, authorization="Bearer dev-token-owner")
        h.update(extra)
        s, hh, j, d = p.http("POST", "/mcp", body, h)
        out[label] = s
    return out

@scenario("b10-21-auth4")
def _(p):
    order = first_order(p, "received", restaurant="rst_large")
    r = p.tool("staff", "update_order_status", {"restaurant_id": "rst_large", "order_id": order, "status": "accepted", "expected_status": "received"})
    g = p.tool("staff", "get_order", {"restaurant_id": "rst_large", "order_id": order})
    return {"staff of rst_central moves a rst_large order": outcome(r), "staff reads it": outcome(g),
            "final": order_status(p, order, restaurant="rst_large")}

@scenario("b10-22-sec2")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    c = meta(a)["next_cursor"]
    p.control("POST", "/faults", {"tool": "list_orders", "error": "internal"})
    out = {}
    for label, args in (("first page", {}), ("page through a cursor", {"cursor": c})):
        e = error_of(p.tool("owner", "list_orders", dict({"restaurant_id": "rst_central", "limit": 5}, **args)))
        text = json.dumps(e)
        out[label] = (e.get("code"), any(x in text for x in ("SELECT", "FROM orders", "WHERE")))
    return out

@scenario("b10-23-lim5")
def _(p):
    got, cursor, n, cut = [], None, 0, 0
    while n < 20:
        args = {"restaurant_id": "rst_large", "limit": 50}
        if cursor: args["cursor"] = cursor
        r = p.tool("owner", "list_orders", args)
        if err(r): return {"refused": err(r)}
        got += ids(r, "orders"); n += 1
        cut += 1 if meta(r).get("truncated") else 0
        cursor = meta(r).get("next_cursor")
        if not cursor: break
    return {"pages": n, "pages cut": cut, "orders walked": len(got), "distinct": len(set(got))}

@scenario("b10-24-idem6")
def _(p):
    args = {"name": "Chataigne Sweep", "idempotency_key": "b10-key-sweep-0001"}
    a = p.tool("owner", "create_organization", args)
    p.control("POST", "/clock/advance", {"seconds": 24 * 3600 + 600})
    b = p.tool("owner", "create_organization", args)
    return {"first": outcome(a), "same key 24 h 10 min later": (outcome(b), meta(b).get("replayed")),
            "organizations created": org_names(p).count("Chataigne Sweep")}

@scenario("b10-25-abs1")
def _(p):
    out = {}
    for persona in ("viewer", "owner"):
        s, h, j, d = p.rpc(persona, "tools/list", {})
        out[f"tools listed to {persona}"] = len(((j or {}).get("result") or {}).get("tools", []))
    return out

@scenario("b10-26-env2")
def _(p):
    pattern = re.compile(r"^req_[0-9A-Za-z]{16,}$")
    rids = [meta(p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0001"})).get("request_id", "") for _ in range(20)]
    return {"request_ids matching ^req_[0-9A-Za-z]{16,}$": f"{sum(bool(pattern.match(x)) for x in rids)}/20"}

@scenario("b10-27-proto3")
def _(p):
    out = {}
    for label, tool, args in (
            ("get_order with include_items", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0001", "include_items": True}),
            ("list_orders with sort", "list_orders", {"restaurant_id": "rst_central", "limit": 2, "sort": "asc"}),
            ("update_order_status with note", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0001", "status": "ready", "expected_status": "preparing", "note": "x"})):
        out[label] = outcome(p.tool("owner", tool, args))
    out["ord_c0001 after"] = order_status(p, "ord_c0001")
    return out

@scenario("b10-28-idem2")
def _(p):
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "text": "Merci, à bientôt !", "idempotency_key": "b10-key-escape-001"}
    a = p.tool("owner", "send_message", args)  # json.dumps escapes é as \u00e9
    body = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "send_message", "arguments": args}},
                      ensure_ascii=False).encode()
    s, h, j, d = raw(p, body)
    b = j["result"]
    return {"first (é escaped)": outcome(a), "retry (é as UTF-8)": (outcome(b), meta(b).get("replayed"))}

@scenario("b10-29-pre1")
def _(p):
    r = p.tool("owner", "set_restaurant_status", {"restaurant_id": "rst_central", "status": "paused", "expected_status": ""})
    return {"expected_status \"\"": outcome(r), "status after": restaurant_status(p)}

@scenario("b10-30-abs2")
def _(p):
    def messages(cnv):
        n, got = pages(p, "owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": cnv, "message_limit": 100}, "messages")
        return len(got)
    before = messages("cnv_c01")
    r = p.tool("owner", "send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_long",
                                         "text": "Votre table est prête.", "idempotency_key": "b10-key-broadcast1"})
    return {"send_message to cnv_long": outcome(r), "cnv_c01's messages, before and after": (before, messages("cnv_c01"))}

if __name__ == "__main__":
    main()
