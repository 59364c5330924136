#!/usr/bin/env python3
"""Batch 8 of the outside faults, shown live (docs/OUTSIDE_FAULTS_BATCH8.md): for each `b8-` fault,
the same requests through the healthy proxy (`none`) and through the fault's proxy, each in front
of a fresh reference server started as bench/outside-faults.sh starts it; prints both observations
and whether they differ. Exit status 1 unless every fault asked for differs.

Usage (from the repository root, after `cargo build -p mock-server --bins --example fault_proxy`):
  bench/outside-faults-b8-proofs.py [FAULT...]
  env: MOCK=target/debug/chataigne-mock PROXY=target/debug/examples/fault_proxy
       OUT=target/outside-faults-b8-proofs (server and proxy logs) PORT=19100 (uses PORT..PORT+1, PORT+20..PORT+21)
"""
import json, os, sys, threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_faults_proofs import *  # noqa: E402,F401,F403 (the harness: Pair, scenario, main, …)
configure("target/outside-faults-b8-proofs", 19100)

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

def first_order(p, status, restaurant="rst_central"):
    r = p.tool("owner", "list_orders", {"restaurant_id": restaurant, "status": [status], "limit": 1})
    return ids(r, "orders")[0]

def order_status(p, order, restaurant="rst_central"):
    r = p.tool("owner", "get_order", {"restaurant_id": restaurant, "order_id": order})
    return sc(r)["data"]["order"]["status"]

def org_names(p, persona="owner"):
    n, got = pages(p, persona, "list_organizations", {"limit": 50}, "organizations")
    return [o["name"] for o in got]

@scenario("b8-01-proto2")
def _(p):
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "create_organization", "arguments": {"name": "Chataigne Batch", "idempotency_key": "b8-key-batch-0001"}}}]
    s, h, j, d = raw(p, batch)
    return {"status": s, "answered as an array": isinstance(j, list),
            "organizations created by it": org_names(p).count("Chataigne Batch")}

@scenario("b8-02-proto5")
def _(p):
    out = {}
    for method in ("GET", "DELETE", "POST"):
        h = {"authorization": "Bearer dev-token-owner", "accept": "application/json, text/event-stream",
             "mcp-protocol-version": "2025-11-25", "origin": "http://evil.example"}
        body = None
        if method == "POST":
            h["content-type"] = "application/json"
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        s, hh, j, d = p.http(method, "/mcp", body, h)
        out[f"{method} with a foreign Origin"] = s
    return out

@scenario("b8-03-auth1")
def _(p):
    out = {}
    for method in ("GET", "DELETE", "POST"):
        h = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
        body = None
        if method == "POST":
            h["content-type"] = "application/json"
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        s, hh, j, d = p.http(method, "/mcp", body, h)
        challenge = hdr(hh, "www-authenticate") or ""
        out[f"{method} without a token"] = (s, "resource_metadata=" in challenge)
    return out

@scenario("b8-04-env4")
def _(p):
    p.control("POST", "/deadlines", {"read_ms": 200})
    p.control("POST", "/faults", {"tool": "get_order", "latency_ms": 800})
    s, h, j, d = p.rpc("owner", "tools/call", {"name": "get_order", "arguments": {"restaurant_id": "rst_central", "order_id": "ord_c0001"}})
    if j and "result" in j:
        r = j["result"]
        return {"slow get_order": ("tool result", r.get("isError"), err(r))}
    return {"slow get_order": ("JSON-RPC error", (j or {}).get("error", {}).get("code"))}

@scenario("b8-05-env2")
def _(p):
    out = {}
    for label, args in (("success", {"restaurant_id": "rst_central", "order_id": "ord_c0001"}),
                        ("not found", {"restaurant_id": "rst_central", "order_id": "ord_nowhere"}),
                        ("forbidden", {"restaurant_id": "rst_rival", "order_id": "ord_r0001"})):
        s, h, j, d = p.rpc("owner", "tools/call", {"name": "get_order", "arguments": args})
        rid = meta(j["result"]).get("request_id")
        out[label] = {"x-request-id header": hdr(h, "x-request-id") is not None, "equals the envelope's": hdr(h, "x-request-id") == rid}
    return out

@scenario("b8-06-pag7")
def _(p):
    a = p.tool("staff", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    p.control("POST", "/memberships/revoke", {"user_id": "usr_staff", "organization_id": "org_maison"})
    try:
        b = p.tool("staff", "list_orders", {"restaurant_id": "rst_central", "limit": 5, "cursor": meta(a)["next_cursor"]})
        c = p.tool("staff", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    finally:
        p.control("POST", "/memberships/restore", {"user_id": "usr_staff", "organization_id": "org_maison"})
    return {"first page": len(ids(a, "orders")),
            "next page after the revocation": summary(b) if err(b) else (len(ids(b, "orders")), bool(meta(b).get("next_cursor"))),
            "a first page after the revocation": summary(c)}

@scenario("b8-07-auth4")
def _(p):
    out = {}
    for rst in ("rst_central", "rst_rival", "rst_nowhere"):
        s, h, j, d = p.rpc("owner", "resources/read", {"uri": "chataigne://restaurants/" + rst})
        contents = (j or {}).get("result", {}).get("contents")
        out[rst] = rpc_outcome(j) if contents is None else ("result", len(contents), "contents")
    return out

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"}}

@scenario("b8-08-proto1")
def _(p):
    out = {}
    cases = (("tools/call", {"name": "get_order", "arguments": {"restaurant_id": "rst_central", "order_id": "ord_c0001"}}, "get_order", "get_restaurant"),
             ("prompts/get", {"name": "work_the_order_queue", "arguments": {"restaurant_id": "rst_central"}}, "work_the_order_queue", "answer_a_guest"),
             ("resources/read", {"uri": "chataigne://restaurants/rst_central"}, "chataigne://restaurants/rst_central", "chataigne://contract"))
    for method, params, right, wrong in cases:
        for label, name in (("Mcp-Name as the body", right), ("Mcp-Name naming another", wrong)):
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": dict(params, _meta=META)}
            s, h, j, d = raw(p, body, headers={"mcp-protocol-version": "2026-07-28", "mcp-method": method, "mcp-name": name})
            out[f"{method}, {label}"] = s
    return out

@scenario("b8-09-sec2")
def _(p):
    p.control("POST", "/faults", {"tool": "get_order", "error": "panic"})
    s, h, j, d = p.rpc("owner", "tools/call", {"name": "get_order", "arguments": {"restaurant_id": "rst_central", "order_id": "ord_c0001"}})
    text = d.decode("utf-8", "replace")
    return {"status": s, "content-type": (hdr(h, "content-type") or "").split(";")[0],
            "code": err(j["result"]) if j and "result" in j else None,
            "leaks a path, a URL or a panic": any(x in text for x in ("src/", "postgres://", "panicked"))}

@scenario("b8-10-auth1")
def _(p):
    s, h, j, d = p.http("GET", "/.well-known/oauth-protected-resource")
    scopes = (j or {}).get("scopes_supported") or []
    return {"scopes_supported": len(scopes), "write scopes named": sorted(x for x in scopes if x.endswith(":write"))}

@scenario("b8-11-proto2")
def _(p):
    out = {}
    for method in ("tools/list", "Tools/List", "PING"):
        s, h, j, d = p.rpc("owner", method, {})
        out[method] = (s, rpc_outcome(j))
    return out

@scenario("b8-12-proto3")
def _(p):
    out = {}
    for label, args in (("channel: null", {"restaurant_id": "rst_central", "channel": None}),
                        ("limit: null", {"restaurant_id": "rst_central", "limit": None}),
                        ("no channel", {"restaurant_id": "rst_central"})):
        r = p.tool("owner", "list_orders", args)
        out[label] = summary(r) if err(r) else len(ids(r, "orders"))
    return out

@scenario("b8-13-pag1")
def _(p):
    out = {}
    for tool, args, key in (("list_orders", {"restaurant_id": "rst_central"}, "orders"),
                            ("list_conversations", {"restaurant_id": "rst_central"}, "conversations")):
        r = p.tool("owner", tool, args)
        out[tool + " without limit"] = summary(r) if err(r) else len(ids(r, key))
    return out

@scenario("b8-14-pag5")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    c = meta(a)["next_cursor"]
    out = {}
    for label, cur in (("as given", c), ("with a trailing blank", c + " "), ("with a leading newline", "\n" + c)):
        r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5, "cursor": cur})
        out[label] = summary(r) if err(r) else ids(r, "orders")[:1]
    return out

@scenario("b8-15-pag8")
def _(p):
    out = {}
    for limit in (1, 0):
        r = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": limit})
        out[f"message_limit {limit}"] = summary(r) if err(r) else len(items(r, "messages"))
    return out

@scenario("b8-16-lim1")
def _(p):
    out = {}
    for label, frm, to in (("one day", "2026-11-10", "2026-11-10"), ("to one day before from", "2026-11-10", "2026-11-09"),
                           ("to two days before from", "2026-11-10", "2026-11-08")):
        r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count"], "from": frm, "to": to})
        out[label] = summary(r) if err(r) else ("served", len(sc(r)["data"]["series"]))
    return out

@scenario("b8-17-lim7")
def _(p):
    out = {}
    text = "ab\r\n" * 600  # 2400 characters; 1800 once CRLF is LF
    for i, (tool, args) in enumerate((("send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_c05"}),
                                      ("create_instruction", {"restaurant_id": "rst_central"}))):
        r = p.tool("owner", tool, dict(args, text=text, idempotency_key=f"b8-key-crlf-{i:04d}"))
        out[f"{tool}, 2400 characters with CRLF"] = summary(r)
    r = p.tool("owner", "send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_c05", "text": "ab\n" * 600, "idempotency_key": "b8-key-crlf-lf01"})
    out["send_message, 1800 characters with LF"] = summary(r)
    return out

@scenario("b8-18-idem1")
def _(p):
    out = {}
    for n in (255, 256, 300):
        r = p.tool("owner", "create_organization", {"name": f"Chataigne Key {n}", "idempotency_key": chr(ord("a") + n % 26) * n})
        out[f"key of {n} characters"] = summary(r)
    return out

@scenario("b8-19-idem4")
def _(p):
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c06", "text": "Your order is on its way", "idempotency_key": "b8-key-linger-001"}
    a = p.tool("owner", "send_message", args)
    b = p.tool("owner", "send_message", args)
    return {"first": summary(a), "identical retry right after": (summary(b), meta(b).get("replayed"))}

@scenario("b8-20-pag3")
def _(p):
    out = {}
    for label, args in (("rst_small, limit 2 (3 orders)", {"restaurant_id": "rst_small", "limit": 2}),
                        ("rst_central, limit 50 (137 orders)", {"restaurant_id": "rst_central", "limit": 50})):
        n, got = pages(p, "owner", "list_orders", args, "orders")
        out[label] = {"pages": n, "orders walked": len(got)}
    return out

@scenario("b8-21-env5")
def _(p):
    order = first_order(p, "completed")
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "completed"})
    e = sc(r)["data"]["error"]
    return {"code": e["code"], "category": e["category"], "retryable": e["retryable"]}

@scenario("b8-22-pag4")
def _(p):
    n, got = pages(p, "owner", "list_orders", {"restaurant_id": "rst_central", "status": ["received", "completed"], "limit": 10}, "orders", cap=4)
    keys = [(o["created_at"], o["id"]) for o in got]
    desc = all(keys[i] >= keys[i + 1] for i in range(len(keys) - 1))
    asc = all(keys[i] <= keys[i + 1] for i in range(len(keys) - 1))
    return {"pages": n, "items": len(keys), "monotone in created_at": desc or asc}

@scenario("b8-23-lim5")
def _(p):
    out = {}
    for rst, limit in (("rst_central", 20), ("rst_small", 20), ("rst_large", 50)):
        r = p.tool("owner", "list_orders", {"restaurant_id": rst, "limit": limit})
        out[rst] = {"items": len(ids(r, "orders")), "next_cursor": bool(meta(r).get("next_cursor")), "truncated": meta(r).get("truncated")}
    return out

@scenario("b8-24-pre2")
def _(p):
    order = first_order(p, "received")
    a = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"})
    seen = order_status(p, order)
    b = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "preparing", "expected_status": seen})
    return {"received → accepted": summary(a), "status read": seen, "accepted → preparing": summary(b), "final": order_status(p, order)}

@scenario("b8-25-pre4")
def _(p):
    order = first_order(p, "received")
    args = {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"}
    res = [None, None]
    def move(i):
        res[i] = p.tool("owner" if i == 0 else "manager", "update_order_status", args)
    threads = [threading.Thread(target=move, args=(i,)) for i in (0, 1)]
    for t in threads: t.start()
    for t in threads: t.join()
    return {"outcomes": sorted(summary(r) for r in res), "final": order_status(p, order)}

@scenario("b8-26-idem2")
def _(p):
    args = {"name": "Chataigne Annecy", "idempotency_key": "b8-key-org-0001"}
    a = p.tool("owner", "create_organization", args)
    b = p.tool("owner", "create_organization", args)
    return {"first": summary(a), "replay": meta(b).get("replayed"), "times listed": org_names(p).count("Chataigne Annecy")}

@scenario("b8-27-auth3")
def _(p):
    r = p.tool("noscope", "create_organization", {"name": "Chataigne Sans Scope", "idempotency_key": "b8-key-noscope-01"})
    return {"noscope create_organization": summary(r), "required_scope": (sc(r).get("data", {}).get("error") or {}).get("required_scope"),
            "organizations with that name": org_names(p).count("Chataigne Sans Scope")}

@scenario("b8-28-auth6")
def _(p):
    order = first_order(p, "received")
    r = p.tool("staff", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"})
    v = p.tool("viewer", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "preparing", "expected_status": "accepted"})
    return {"staff moves an order": summary(r), "viewer": summary(v), "final": order_status(p, order)}

@scenario("b8-29-idem3")
def _(p):
    base = "Bonjour, votre table pour six personnes est confirmée ce samedi à vingt heures, en terrasse chauffée comme demandé"
    args = {"restaurant_id": "rst_central", "conversation_id": "cnv_c07", "idempotency_key": "b8-key-head-0001"}
    a = p.tool("owner", "send_message", dict(args, text=base + " ; à samedi !"))
    b = p.tool("owner", "send_message", dict(args, text=base + " ; nous avons dû la déplacer à l'intérieur."))
    return {"len(common head)": len(base), "first": summary(a), "same key, other text": (summary(b), meta(b).get("replayed"))}

@scenario("b8-30-auth7")
def _(p):
    args = {"restaurant_id": "rst_central", "limit": 1}
    p.control("POST", "/memberships/revoke", {"user_id": "usr_staff", "organization_id": "org_maison"})
    a = p.tool("staff", "list_orders", args)
    p.control("POST", "/memberships/restore", {"user_id": "usr_staff", "organization_id": "org_maison"})
    b = p.tool("staff", "list_orders", args)
    return {"revoked": summary(a), "restored": summary(b)}

if __name__ == "__main__":
    main()
