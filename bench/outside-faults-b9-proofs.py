#!/usr/bin/env python3
"""Batch 9 of the outside faults, shown live (docs/OUTSIDE_FAULTS_BATCH9.md): for each `b9-` fault,
the same requests through the healthy proxy (`none`) and through the fault's proxy, each in front
of a fresh reference server started as bench/outside-faults.sh starts it; prints both observations
and whether they differ. Exit status 1 unless every fault asked for differs.

Usage (from the repository root, after `cargo build -p mock-server --bins --example fault_proxy`):
  bench/outside-faults-b9-proofs.py [FAULT...]
  env: MOCK=target/debug/chataigne-mock PROXY=target/debug/examples/fault_proxy
       OUT=target/outside-faults-b9-proofs (server and proxy logs) PORT=19200 (uses PORT..PORT+1, PORT+20..PORT+21)
"""
import base64, json, os, sys, urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_faults_proofs import *  # noqa: E402,F401,F403 (the harness: Pair, scenario, main, …)
configure("target/outside-faults-b9-proofs", 19200)

H = {"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}

def raw(p, body, persona="owner", headers=None):
    h = dict(H)
    if persona: h["authorization"] = "Bearer dev-token-" + persona
    h.update(headers or {})
    return p.http("POST", "/mcp", body if isinstance(body, bytes) else json.dumps(body).encode(), h)

def rpc_outcome(j):
    if not j: return None
    if "error" in j: return ("error", j["error"].get("code"))
    return ("result", sorted((j.get("result") or {}).keys()))

def first_order(p, status, restaurant="rst_central", n=0):
    r = p.tool("owner", "list_orders", {"restaurant_id": restaurant, "status": [status], "limit": n + 1})
    return ids(r, "orders")[n]

def order_status(p, order, restaurant="rst_central", persona="owner"):
    r = p.tool(persona, "get_order", {"restaurant_id": restaurant, "order_id": order})
    return sc(r)["data"]["order"]["status"] if not err(r) else err(r)

def org_names(p, persona="owner"):
    n, got = pages(p, persona, "list_organizations", {"limit": 50}, "organizations")
    return [o["name"] for o in got]

def error_of(r):
    return sc(r).get("data", {}).get("error") or {}

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"}}

def stateless_tool(p, persona, name, args):
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": args, "_meta": META}}
    s, h, j, d = raw(p, body, persona, {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": name})
    return j["result"] if j and "result" in j else j

@scenario("b9-01-proto1")
def _(p):
    out = {}
    for version in ("2025-06-18", "2025-03-26", "2099-01-01"):
        s, h, j, d = p.rpc("owner", "initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}, version=None)
        out[f"initialize asking for {version}"] = ("result", j["result"]["protocolVersion"]) if j and "result" in j else rpc_outcome(j)
    return out

@scenario("b9-02-proto2")
def _(p):
    out = {}
    for name in ("work_the_order_queue", "refund_a_guest"):
        s, h, j, d = p.rpc("owner", "prompts/get", {"name": name, "arguments": {"restaurant_id": "rst_central"}})
        out[f"prompts/get {name}"] = rpc_outcome(j)
    return out

@scenario("b9-03-env2")
def _(p):
    rids, headers_agree, cursor = [], True, None
    for _ in range(3):
        args = {"restaurant_id": "rst_central", "limit": 5}
        if cursor: args["cursor"] = cursor
        s, h, j, d = p.rpc("owner", "tools/call", {"name": "list_orders", "arguments": args})
        r = j["result"]
        rids.append(meta(r)["request_id"])
        headers_agree = headers_agree and hdr(h, "x-request-id") == meta(r)["request_id"]
        cursor = meta(r).get("next_cursor")
    return {"pages": len(rids), "distinct request_ids": len(set(rids)), "header equals envelope": headers_agree}

@scenario("b9-04-env4")
def _(p):
    out = {}
    for version in ("2025-11-25", "2025-06-18"):
        s, h, j, d = p.rpc("owner", "tools/call", {"name": "get_order", "arguments": {"restaurant_id": "rst_central", "order_id": "ord_nowhere"}}, version=version)
        r = j["result"]
        out[f"absent order on {version}"] = {"isError": r.get("isError"), "structuredContent": "structuredContent" in r, "code": err(r)}
    return out

@scenario("b9-05-lim4")
def _(p):
    p.control("POST", "/deadlines", {"read_ms": 200})
    p.control("POST", "/faults", {"tool": "get_restaurant", "latency_ms": 700})
    s, h, j, d = p.rpc("owner", "resources/read", {"uri": "chataigne://restaurants/rst_central"})
    out = {"resources/read past the deadline": rpc_outcome(j)}
    if j and "error" in j:
        out["error's contract code"] = ((j["error"].get("data") or {}).get("error") or {}).get("code")
    r = p.tool("owner", "get_restaurant", {"restaurant_id": "rst_central"})
    out["get_restaurant past the deadline"] = summary(r)
    return out

@scenario("b9-06-idem2")
def _(p):
    out = {}
    args = {"name": "Chataigne Stateless", "idempotency_key": "b9-key-stateless-01"}
    a = stateless_tool(p, "owner", "create_organization", args)
    b = stateless_tool(p, "owner", "create_organization", args)
    out["2026-07-28: first, retry"] = (summary(a), summary(b), meta(b).get("replayed"))
    out["2026-07-28: organizations created"] = org_names(p).count("Chataigne Stateless")
    args = {"name": "Chataigne Stateful", "idempotency_key": "b9-key-stateful-01"}
    a = p.tool("owner", "create_organization", args)
    b = p.tool("owner", "create_organization", args)
    out["2025-11-25: first, retry"] = (summary(a), summary(b), meta(b).get("replayed"))
    out["2025-11-25: organizations created"] = org_names(p).count("Chataigne Stateful")
    return out

@scenario("b9-07-auth1")
def _(p):
    s, h, j, d = p.http("GET", "/.well-known/oauth-protected-resource")
    servers = (j or {}).get("authorization_servers") or []
    out = {"authorization_servers (paths)": [urllib.parse.urlparse(x).path or "/" for x in servers]}
    for x in servers:
        path = urllib.parse.urlparse(x).path.rstrip("/")
        s2, h2, j2, d2 = p.http("GET", "/.well-known/oauth-authorization-server" + path)
        out["its RFC 8414 metadata"] = (s2, bool(j2 and j2.get("issuer")))
    return out

@scenario("b9-08-abs1")
def _(p):
    s, h, j, d = p.rpc("owner", "resources/templates/list", {})
    templates = [t["uriTemplate"] for t in (j or {}).get("result", {}).get("resourceTemplates", [])]
    s, h, j, d = p.rpc("owner", "resources/read", {"uri": "chataigne://exports/rst_central/orders.csv"})
    read = rpc_outcome(j)
    if j and "result" in j:
        read = ("result", len(j["result"]["contents"][0]["text"].splitlines()) - 1, "orders")
    return {"templates": templates, "read of chataigne://exports/rst_central/orders.csv": read}

@scenario("b9-09-sec2")
def _(p):
    p.control("POST", "/faults", {"tool": "get_order", "error": "internal"})
    s, h, j, d = p.rpc("owner", "tools/call", {"name": "get_order", "arguments": {"restaurant_id": "rst_central", "order_id": "ord_c0001"}})
    text = d.decode("utf-8", "replace")
    return {"status": s, "content-type": (hdr(h, "content-type") or "").split(";")[0],
            "events": text.count("data: "),
            "leaks a path, a URL or a panic": any(x in text for x in ("src/", "postgres://", "panicked"))}

@scenario("b9-10-proto4")
def _(p):
    out = {}
    for label, args in (("not found", {"restaurant_id": "rst_central", "order_id": "ord_nowhere"}),
                        ("forbidden", {"restaurant_id": "rst_rival", "order_id": "ord_r0001"})):
        e = error_of(p.tool("owner", "get_order", args))
        out[label] = {"code": e.get("code"), "retry_after_ms": e.get("retry_after_ms", "absent")}
    return out

@scenario("b9-11-proto5")
def _(p):
    out = {}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    for label, extra in (("own Host", {}), ("foreign Host", {"host": "evil.example"}),
                         ("foreign Host, X-Forwarded-Host: 127.0.0.1", {"host": "evil.example", "x-forwarded-host": f"127.0.0.1:{p.pport}"})):
        h = dict(H, authorization="Bearer dev-token-owner")
        h.update(extra)
        s, hh, j, d = p.http("POST", "/mcp", body, h)
        out[label] = s
    return out

@scenario("b9-12-env5")
def _(p):
    args = {"restaurant_id": "rst_central", "status": "open", "expected_status": "paused"}
    for _ in range(500):
        p.tool("owner", "set_restaurant_status", args)
    e = error_of(p.tool("owner", "set_restaurant_status", args))
    return {"call 501": {"code": e.get("code"), "category": e.get("category"), "retryable": e.get("retryable")}}

@scenario("b9-13-pag2")
def _(p):
    out = {}
    for limit in (20, 51, 2**32 + 20, 2**32 + 50):
        r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": limit})
        out[f"limit {limit}"] = summary(r) if err(r) else len(ids(r, "orders"))
    return out

def b64d(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
def b64e(b): return base64.urlsafe_b64encode(b).decode().rstrip("=")

@scenario("b9-14-pag5")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    c = meta(a)["next_cursor"]
    b = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5, "cursor": c})
    tenth = items(b, "orders")[4]
    body, tag = c.split(".")
    payload = json.loads(b64d(body))
    payload["ts"], payload["id"] = tenth["created_at"], tenth["id"]
    forged = b64e(json.dumps(payload, separators=(",", ":")).encode()) + "." + tag
    out = {"cursor as issued": summary(b) if err(b) else ids(b, "orders")[:1]}
    r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5, "cursor": forged})
    out["position re-encoded (10th order), tag kept"] = summary(r) if err(r) else ids(r, "orders")[:1]
    return out

@scenario("b9-15-lim1")
def _(p):
    out = {}
    for g in ("day", "week", "month"):
        r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count", "revenue_cents"],
                                              "from": "2025-01-01", "to": "2026-12-31", "granularity": g})
        out[f"730 days per {g}"] = summary(r) if err(r) else ("served", len(sc(r)["data"]["series"]))
    return out

@scenario("b9-16-lim7")
def _(p):
    out = {}
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    padded = (ping[:-1] + " " * (1_100_000) + "}").encode()
    s, h, j, d = raw(p, padded)
    out["ping padded with blanks to 1.1 MB"] = (s, rpc_outcome(j))
    big = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_transcripts",
                      "arguments": {"restaurant_id": "rst_central", "query": "x" * 1_100_000}}}).encode()
    s, h, j, d = raw(p, big)
    out["a 1.1 MB argument"] = s
    return out

@scenario("b9-17-pre3")
def _(p):
    out = {}
    ready = first_order(p, "ready")
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": ready, "status": "completed", "expected_status": "ready"})
    out["ready → completed"] = (summary(r), order_status(p, ready))
    acc = first_order(p, "accepted")
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": acc, "status": "preparing", "expected_status": "accepted"})
    out["accepted → preparing"] = (summary(r), order_status(p, acc))
    return out

@scenario("b9-18-idem1")
def _(p):
    a = p.tool("owner", "create_organization", {"name": "Chataigne Numeric", "idempotency_key": 12345678})
    b = p.tool("owner", "create_organization", {"name": "Chataigne Numeric", "idempotency_key": "12345678"})
    return {"key 12345678 (a number)": summary(a), "key \"12345678\" (a string)": (summary(b), meta(b).get("replayed")),
            "organizations created": org_names(p).count("Chataigne Numeric")}

@scenario("b9-19-auth1")
def _(p):
    out = {}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    for label, auth in (("no Authorization", None), ("Bearer unknown token", "Bearer nope"),
                        ("Basic credentials", "Basic b3duZXI6c2VjcmV0"), ("Token scheme", "Token dev-token-owner")):
        h = dict(H)
        if auth: h["authorization"] = auth
        s, hh, j, d = p.http("POST", "/mcp", body, h)
        out[label] = (s, "resource_metadata=" in (hdr(hh, "www-authenticate") or ""))
    return out

@scenario("b9-20-auth3")
def _(p):
    out = {}
    for tool, args in (("get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0001"}),
                       ("list_orders", {"restaurant_id": "rst_central", "limit": 2}),
                       ("create_organization", {"name": "Chataigne Sans Scope", "idempotency_key": "b9-key-noscope-01"})):
        out[f"noscope {tool}"] = summary(p.tool("noscope", tool, args))
    return out

@scenario("b9-21-env5")
def _(p):
    out = {}
    for label, tool, args in (
            ("get_order", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_nowhere"}),
            ("update_order_status", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_nowhere", "status": "accepted", "expected_status": "received"}),
            ("send_message", "send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_nowhere", "text": "Bonjour", "idempotency_key": "b9-key-absent-01"})):
        e = error_of(p.tool("owner", tool, args))
        out[label] = (e.get("code"), e.get("category"))
    return out

@scenario("b9-22-pag4")
def _(p):
    got, cursor, n = [], None, 0
    while n < 20:
        args = {"restaurant_id": "rst_central", "limit": 10 if n == 0 else 20}
        if cursor: args["cursor"] = cursor
        r = p.tool("owner", "list_orders", args)
        if err(r): return {"refused": err(r)}
        got += ids(r, "orders"); n += 1
        cursor = meta(r).get("next_cursor")
        if not cursor: break
    return {"pages (limit 10, then 20)": n, "items walked": len(got), "distinct": len(set(got))}

@scenario("b9-23-pag8")
def _(p):
    out = {}
    for limit in (20, 100):
        n, got = pages(p, "owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": limit}, "messages")
        ids_ = [m["id"] for m in got]
        out[f"message_limit {limit}"] = {"pages": n, "messages walked": len(ids_), "distinct": len(set(ids_))}
    return out

@scenario("b9-24-lim2")
def _(p):
    for _ in range(1000):
        p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0001"})
    a = p.tool("owner", "get_order", {"restaurant_id": "rst_large", "order_id": "ord_l0001"})
    b = p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0001"})
    return {"call 1001, another restaurant": summary(a), "call 1002, the same restaurant": summary(b)}

@scenario("b9-25-pre2")
def _(p):
    order = first_order(p, "received")
    before = order_status(p, order, persona="manager")
    r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"})
    return {"manager read before": before, "owner moves it": summary(r),
            "owner reads": order_status(p, order), "manager reads after": order_status(p, order, persona="manager")}

@scenario("b9-26-pre3")
def _(p):
    out = {}
    for status in ("cancelled", "rejected"):
        order = first_order(p, status)
        r = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": status})
        out[f"{status} → accepted"] = (summary(r), order_status(p, order))
    return out

@scenario("b9-27-idem2")
def _(p):
    args = {"restaurant_id": "rst_central", "text": "Offer a glass of cider to guests waiting over 15 minutes.", "idempotency_key": "b9-key-replay-0001"}
    a = p.tool("owner", "create_instruction", args)
    b = p.tool("owner", "create_instruction", args)
    listed = ids(p.tool("owner", "list_instructions", {"restaurant_id": "rst_central", "limit": 50}), "instructions")
    ia, ib = sc(a)["data"]["instruction"]["id"], sc(b)["data"]["instruction"]["id"]
    return {"replayed": meta(b).get("replayed"), "same instruction id": ia == ib, "replay's id is listed": ib in listed,
            "instructions listed": len(listed)}

@scenario("b9-28-idem6")
def _(p):
    args = {"name": "Chataigne Retention", "idempotency_key": "b9-key-retention-01"}
    a = p.tool("owner", "create_organization", args)
    p.control("POST", "/clock/advance", {"seconds": 24 * 3600 + 60})
    b = p.tool("owner", "create_organization", args)
    return {"first": summary(a), "same key 24 h later": (summary(b), meta(b).get("replayed")),
            "organizations created": org_names(p).count("Chataigne Retention")}

@scenario("b9-29-auth6")
def _(p):
    out = {}
    order = first_order(p, "received")
    args = {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"}
    out["viewer moves an order"] = summary(p.tool("viewer", "update_order_status", args))
    out["viewer creates an organization"] = summary(p.tool("viewer", "create_organization", {"name": "Viewer Side Project", "idempotency_key": "b9-key-viewer-org1"}))
    out["viewer moves the order again"] = summary(p.tool("viewer", "update_order_status", args))
    out["final"] = order_status(p, order)
    return out

@scenario("b9-30-abs2")
def _(p):
    order = first_order(p, "received")
    r = p.tool("owner", "set_restaurant_status", {"restaurant_id": "rst_central", "status": "paused", "expected_status": "open"})
    seen = order_status(p, order)
    a = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": order, "status": "accepted", "expected_status": "received"})
    walks = {}
    for status in ("received", "rejected"):
        n, got = pages(p, "owner", "list_orders", {"restaurant_id": "rst_central", "status": [status], "limit": 50}, "orders")
        walks[f"{status} orders walked (pages, orders)"] = (n, len(got))
    return dict({"pause": summary(r), "a received order, read after": seen, "accepting it": summary(a)}, **walks)

if __name__ == "__main__":
    main()
