#!/usr/bin/env python3
"""Batch 4 of the outside faults, shown live (docs/OUTSIDE_FAULTS_BATCH4.md): for each `b4-` fault,
the same requests through the healthy proxy (`none`) and through the fault's proxy, each in front
of a fresh reference server started as bench/outside-faults.sh starts it; prints both observations
and whether they differ. Exit status 1 unless every fault asked for differs.

Usage (from the repository root, after `cargo build -p mock-server --bins --example fault_proxy`):
  bench/outside-faults-b4-proofs.py [FAULT...]
  env: MOCK=target/debug/chataigne-mock PROXY=target/debug/examples/fault_proxy
       OUT=target/outside-faults-b4-proofs (server and proxy logs) PORT=18600 (uses PORT..PORT+1, PORT+20..PORT+21)
"""
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_faults_proofs import *  # noqa: E402,F401,F403 (the harness: Pair, scenario, main, …)
configure("target/outside-faults-b4-proofs", 18600)

@scenario("b4-auth4-resource-foreign-oracle")
def _(p):
    out = {}
    for rst in ("rst_rival", "rst_doesnotexist"):
        s, h, j, d = p.rpc("owner", "resources/read", {"uri": f"chataigne://restaurants/{rst}"})
        out[rst] = (j["error"]["code"], j["error"]["message"])
    return out

@scenario("b4-auth3-cursor-page-unscoped")
def _(p):
    first = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 2})
    r = p.tool("noscope", "list_orders", {"restaurant_id": "rst_central", "limit": 2, "cursor": meta(first)["next_cursor"]})
    return {"noscope first page": summary(p.tool("noscope", "list_orders", {"restaurant_id": "rst_central"})),
            "noscope with owner's cursor": summary(r), "items": ids(r, "orders")}

@scenario("b4-proto1-ping-status")
def _(p):
    s, h, j, d = p.rpc("owner", "ping")
    return {"status": s, "body": j}

@scenario("b4-proto1-notification-answered")
def _(p):
    s, h, j, d = p.rpc("owner", "notifications/initialized", notification=True)
    return {"status": s, "body": d.decode()}

@scenario("b4-auth1-metadata-no-auth-server")
def _(p):
    out = {}
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        out[path] = p.http("GET", path)[2].get("authorization_servers")
    return out

@scenario("b4-pag7-message-cursor-authority")
def _(p):
    first = p.tool("staff", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": 10})
    cursor = meta(first)["next_cursor"]
    p.control("POST", "/memberships/revoke", {"user_id": "usr_staff", "organization_id": "org_maison"})
    second = p.tool("staff", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": 10, "cursor": cursor})
    out = {"first page": ids(first, "messages")[:2] + ["…"], "after revoke, first page":
           summary(p.tool("staff", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long"})),
           "after revoke, cursor page": summary(second), "its messages": (ids(second, "messages") or [])[:3]}
    if meta(second).get("next_cursor"):
        third = p.tool("staff", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": 10, "cursor": meta(second)["next_cursor"]})
        out["next cursor page"] = (summary(third), (ids(third, "messages") or [])[:3])
    return out

@scenario("b4-env4-validation-id-differs")
def _(p):
    r = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 0})
    e = sc(r)["data"]["error"]
    return {"code": e["code"], "ids equal": e["request_id"] == meta(r)["request_id"]}

@scenario("b4-env1-replay-meta-partial")
def _(p):
    args = {"restaurant_id": "rst_central", "text": "Check the fridge", "idempotency_key": "b4-key-replay-1"}
    a, b = p.tool("owner", "create_instruction", args), p.tool("owner", "create_instruction", args)
    return {"first meta": sorted(meta(a)), "replay meta": sorted(meta(b)), "replayed": meta(b).get("replayed")}

@scenario("b4-pre2-resource-read-stale")
def _(p):
    w = p.tool("owner", "set_restaurant_status", {"restaurant_id": "rst_small", "status": "open", "expected_status": "paused"})
    s, h, j, d = p.rpc("owner", "resources/read", {"uri": "chataigne://restaurants/rst_small"})
    res = json.loads(j["result"]["contents"][0]["text"])["data"]["restaurant"]["status"]
    tool = sc(p.tool("owner", "get_restaurant", {"restaurant_id": "rst_small"}))["data"]["restaurant"]["status"]
    return {"write": summary(w), "resources/read status": res, "get_restaurant status": tool}

@scenario("b4-env5-mismatch-validation")
def _(p):
    p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "one", "idempotency_key": "b4-key-mismatch"})
    r = p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "two", "idempotency_key": "b4-key-mismatch"})
    e = sc(r)["data"]["error"]
    return {"code": e["code"], "category": e["category"], "retryable": e["retryable"]}

@scenario("b4-idem1-key-utf8-bytes")
def _(p):
    out = {}
    for label, key in (("255 é (510 bytes)", "é" * 255), ("7 é (14 bytes)", "é" * 7), ("8 é", "é" * 8)):
        out[label] = summary(p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "x", "idempotency_key": key}))
    return out

@scenario("b4-env3-summary-cut-chars")
def _(p):
    r = p.tool("owner", "send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "text": "€" * 2000, "idempotency_key": "b4-key-summary"})
    text = r["content"][0]["text"]
    return {"result": summary(r), "summary bytes": len(text.encode()), "over 4096": len(text.encode()) > 4096}

@scenario("b4-lim1-calendar-year")
def _(p):
    out = {}
    for f, t in (("2026-01-01", "2027-01-01"), ("2027-03-01", "2028-02-29"), ("2026-01-01", "2027-01-02")):
        out[f"{f}..{t}"] = summary(p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count"], "from": f, "to": t}))
    return out

@scenario("b4-pag8-limit-100-refused")
def _(p):
    out = {}
    for n in (99, 100, 101):
        r = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": n})
        out[n] = summary(r) if err(r) else len(items(r, "messages"))
    return out

@scenario("b4-lim4-analytics-read-deadline")
def _(p):
    p.control("POST", "/deadlines", {"read_ms": 400, "analytics_ms": 4000})
    p.control("POST", "/faults", {"tool": "get_analytics", "latency_ms": 1200})
    t0 = time.time()
    r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count"], "from": "2026-11-01", "to": "2026-11-30"})
    took = round(time.time() - t0, 1)
    p.control("POST", "/faults", {"tool": "get_order", "latency_ms": 1200})
    r2 = p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0001"})
    return {"get_analytics (1.2 s, deadlines read 0.4 s / analytics 4 s)": (summary(r), f"{took}s"), "get_order (1.2 s)": summary(r2)}

@scenario("b4-lim7-chunked-unlimited")
def _(p):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "create_instruction",
        "arguments": {"restaurant_id": "rst_central", "text": "x" * (1100 * 1024), "idempotency_key": "b4-key-chunked"}}})
    path = f"{LOG}/big.json"
    open(path, "w").write(body)
    out = {}
    for label, extra in (("chunked", ["-H", "Transfer-Encoding: chunked"]), ("content-length", [])):
        r = subprocess.run(["curl", "-s", "-o", f"{LOG}/big.out", "-w", "%{http_code}", "-X", "POST", f"http://127.0.0.1:{p.pport}/mcp",
            "-H", "content-type: application/json", "-H", "accept: application/json, text/event-stream",
            "-H", "authorization: Bearer dev-token-owner", "-H", "mcp-protocol-version: 2025-11-25", *extra, "--data-binary", f"@{path}"],
            capture_output=True, text=True)
        out[label] = (r.stdout, open(f"{LOG}/big.out", errors="replace").read()[:120])
    return out

@scenario("b4-pag2-search-limit-clamped")
def _(p):
    out = {}
    for tool, args in (("search_transcripts", {"query": "gluten-free"}), ("list_instructions", {})):
        for n in (51, 0):
            r = p.tool("owner", tool, {"restaurant_id": "rst_central", "limit": n, **args})
            out[f"{tool} limit {n}"] = summary(r)
    return out

@scenario("b4-auth6-staff-sets-status")
def _(p):
    r = p.tool("staff", "set_restaurant_status", {"restaurant_id": "rst_central", "status": "paused", "expected_status": "open"})
    after = sc(p.tool("owner", "get_restaurant", {"restaurant_id": "rst_central"}))["data"]["restaurant"]["status"]
    v = p.tool("viewer", "set_restaurant_status", {"restaurant_id": "rst_central", "status": "open", "expected_status": after})
    o = p.tool("staff", "set_restaurant_status", {"restaurant_id": "rst_small", "status": "open", "expected_status": "paused"})
    return {"staff on rst_central": summary(r), "status after": after, "viewer": summary(v), "staff on rst_small (out of reach)": summary(o)}

@scenario("b4-idem6-forgotten-at-midnight")
def _(p):
    args = {"restaurant_id": "rst_central", "text": "Night shift note", "idempotency_key": "b4-key-midnight"}
    a = p.tool("owner", "create_instruction", args)
    clock = p.control("GET", "/clock")
    secs = clock["now_ms"] // 1000
    to_midnight = 86400 - secs % 86400
    p.control("POST", "/clock/advance", {"seconds": to_midnight + 60})
    b = p.tool("owner", "create_instruction", args)
    p.control("POST", "/clock/advance", {"seconds": 3600})
    c = p.tool("owner", "create_instruction", args)
    ia, ib, ic = (sc(x)["data"]["instruction"]["id"] for x in (a, b, c))
    return {"advanced (s)": to_midnight + 60, "replay after midnight": (meta(b)["replayed"], ib == ia),
            "again 1 h later": (meta(c)["replayed"], ic == ib)}

@scenario("b4-lim2-write-500th-refused")
def _(p):
    codes = []
    for i in range(500):
        r = p.tool("owner", "set_restaurant_status", {"restaurant_id": "rst_small", "status": "open", "expected_status": "open"})
        codes.append(err(r))
    return {"calls 1-499": sorted(set(codes[:499])), "call 500": codes[499]}

@scenario("b4-pag4-tie-skipped-at-boundary")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central"})
    b = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "cursor": meta(a)["next_cursor"]})
    return {"page 1 ends": ids(a, "orders")[-1:], "page 2 starts": ids(b, "orders")[:3], "page 2 size": len(ids(b, "orders"))}

@scenario("b4-pag1-sentinel-row")
def _(p):
    a = p.tool("owner", "list_orders", {"restaurant_id": "rst_central"})
    b = p.tool("owner", "list_orders", {"restaurant_id": "rst_central", "limit": 5})
    c = p.tool("owner", "list_orders", {"restaurant_id": "rst_small", "limit": 3})
    return {"default": (len(ids(a, "orders")), "cursor" if meta(a).get("next_cursor") else "-"),
            "limit 5": len(ids(b, "orders")), "rst_small (3 orders) limit 3": (len(ids(c, "orders")), "cursor" if meta(c).get("next_cursor") else "-")}

@scenario("b4-idem2-replay-latest-result")
def _(p):
    a = p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "first", "idempotency_key": "b4-key-latest-1"})
    b = p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "second", "idempotency_key": "b4-key-latest-2"})
    c = p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "first", "idempotency_key": "b4-key-latest-1"})
    ins = lambda r: (sc(r)["data"]["instruction"]["id"], sc(r)["data"]["instruction"]["text"])
    return {"replay of key 1 is key 1's": ins(c) == ins(a), "replay of key 1 is key 2's": ins(c) == ins(b), "replayed": meta(c)["replayed"], "replay text": ins(c)[1]}

@scenario("b4-pre2-write-returns-old-row")
def _(p):
    p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0002"})
    w = p.tool("owner", "update_order_status", {"restaurant_id": "rst_central", "order_id": "ord_c0002", "status": "accepted", "expected_status": "received"})
    r = p.tool("owner", "get_order", {"restaurant_id": "rst_central", "order_id": "ord_c0002"})
    return {"write answers status": sc(w)["data"]["order"]["status"], "get_order then": sc(r)["data"]["order"]["status"]}

@scenario("b4-pag4-filters-dropped-later")
def _(p):
    seen, pages, cursor = [], 0, None
    while True:
        args = {"restaurant_id": "rst_central", "status": ["received"], "limit": 20}
        if cursor: args["cursor"] = cursor
        r = p.tool("owner", "list_orders", args)
        if err(r): return {"error": err(r)}
        seen += items(r, "orders"); pages += 1
        cursor = meta(r).get("next_cursor")
        if not cursor: break
    statuses = {}
    for o in seen: statuses[o["status"]] = statuses.get(o["status"], 0) + 1
    return {"pages": pages, "items": len(seen), "statuses": statuses}

@scenario("b4-idem2-sent-message-unseen")
def _(p):
    s = p.tool("owner", "send_message", {"restaurant_id": "rst_central", "conversation_id": "cnv_c01", "text": "On our way", "idempotency_key": "b4-key-unseen"})
    mid = sc(s)["data"]["message"]["id"]
    r = p.tool("owner", "get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_c01"})
    return {"sent": summary(s), "sent message in the read": mid in ids(r, "messages"), "message_count": sc(r)["data"]["conversation"]["message_count"]}

@scenario("b4-proto1-version-echo")
def _(p):
    s, h, j, d = p.rpc("owner", "initialize", {"protocolVersion": "2024-01-01", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}, version=None)
    s2, h2, j2, d2 = p.rpc("owner", "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}, version=None)
    return {"asked 2024-01-01 → negotiated": j["result"]["protocolVersion"], "asked 2025-06-18 → negotiated": j2["result"]["protocolVersion"]}

@scenario("b4-idem3-normalized-args")
def _(p):
    a = p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "Hello team", "idempotency_key": "b4-key-normal"})
    b = p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "hello team ", "idempotency_key": "b4-key-normal"})
    c = p.tool("owner", "create_instruction", {"restaurant_id": "rst_central", "text": "Goodbye", "idempotency_key": "b4-key-normal"})
    return {"'hello team ' under the key of 'Hello team'": summary(b) + (" replayed" if meta(b).get("replayed") else ""), "'Goodbye'": summary(c)}

@scenario("b4-idem5-shared-across-users")
def _(p):
    args = {"restaurant_id": "rst_central", "text": "Shared key note", "idempotency_key": "b4-key-users"}
    a = p.tool("owner", "create_instruction", args)
    b = p.tool("manager", "create_instruction", args)
    c = p.tool("manager", "create_instruction", {**args, "text": "other text"})
    return {"manager, same key and args": (summary(b), meta(b).get("replayed"), sc(b).get("data", {}).get("instruction", {}).get("id") == sc(a)["data"]["instruction"]["id"]),
            "manager, same key, other args": summary(c)}

@scenario("b4-proto4-analytics-string-cents")
def _(p):
    r = p.tool("owner", "get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count", "revenue_cents"], "from": "2026-11-01", "to": "2026-11-30"})
    t = sc(r)["data"]["totals"]
    return {k: type(v).__name__ for k, v in t.items()}

main()
