"""Shapes the outside faults' proofs repeat, shared from batch 10 on (the b4-b9 scripts keep
their own copies): the harness of outside_faults_proofs.py (Pair, scenario, main, sc, err, ids,
meta, summary, pages, hdr), plus raw requests, JSON-RPC outcomes, the error body, and reads of
an order's, a restaurant's and the organizations' state.

A batch's script does `from outside_faults_common import *`, calls `configure(OUT, PORT)`,
registers its proofs with `@scenario("NAME")` and calls `main()`.
"""
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from outside_faults_proofs import *  # noqa: E402,F401,F403 (the harness)

H = {"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}

def raw(p, body, persona="owner", headers=None):
    """POST /mcp with `body` (bytes as given, anything else as JSON) and the usual headers."""
    h = dict(H)
    if persona: h["authorization"] = "Bearer dev-token-" + persona
    h.update(headers or {})
    return p.http("POST", "/mcp", body if isinstance(body, bytes) else json.dumps(body).encode(), h)

def rpc_outcome(j):
    if not j: return None
    if "error" in j: return ("error", j["error"].get("code"))
    return ("result", sorted((j.get("result") or {}).keys()))

def error_of(r):
    return sc(r).get("data", {}).get("error") or {}

def first_order(p, status, restaurant="rst_central", n=0):
    r = p.tool("owner", "list_orders", {"restaurant_id": restaurant, "status": [status], "limit": n + 1})
    return ids(r, "orders")[n]

def order_status(p, order, restaurant="rst_central", persona="owner"):
    r = p.tool(persona, "get_order", {"restaurant_id": restaurant, "order_id": order})
    return sc(r)["data"]["order"]["status"] if not err(r) else err(r)

def restaurant_status(p, restaurant="rst_central", persona="owner"):
    r = p.tool(persona, "get_restaurant", {"restaurant_id": restaurant})
    return sc(r)["data"]["restaurant"]["status"] if not err(r) else err(r)

def org_names(p, persona="owner"):
    n, got = pages(p, persona, "list_organizations", {"limit": 50}, "organizations")
    return [o["name"] for o in got]
