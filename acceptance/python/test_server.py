"""A few checks of our own, against a server started on a free port (the suite is the main proof)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from jsonschema import Draft202012Validator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guards import SlidingLogLimiter  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("log") / "server.log"
    proc = subprocess.Popen([sys.executable, str(HERE / "server.py"), "--port", str(port), "--log-file", str(log)])
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield {"url": f"http://127.0.0.1:{port}/mcp", "log": log, "port": port}
    proc.terminate()
    proc.wait(10)


class Session:
    def __init__(self, url: str, persona: str, **headers):
        self.url, self.http, self.n = url, httpx.Client(timeout=30), 0
        self.headers = {"authorization": f"Bearer py-token-{persona}", "content-type": "application/json",
                        "accept": "application/json, text/event-stream", **headers}
        r = self.post("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "test", "version": "1"}})
        self.headers["mcp-session-id"] = r.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = "2025-11-25"
        self.http.post(url, headers=self.headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, method, params):
        self.n += 1
        return self.http.post(self.url, headers=self.headers,
                              json={"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})

    def rpc(self, method, params):
        r = self.post(method, params)
        for line in r.text.splitlines():
            if line.startswith("data: "):
                return json.loads(line[6:])
        raise AssertionError(r.text)

    def call(self, tool, **args):
        return self.rpc("tools/call", {"name": tool, "arguments": args})["result"]


def test_schemas_are_closed_and_every_answer_validates(server):
    s = Session(server["url"], "owner")
    tools = {t["name"]: t for t in s.rpc("tools/list", {})["result"]["tools"]}
    assert len(tools) == 17
    for t in tools.values():
        assert t["inputSchema"]["additionalProperties"] is False
        Draft202012Validator.check_schema(t["outputSchema"])
    calls = [
        ("list_orders", {"restaurant_id": "rst_central"}), ("list_orders", {"restaurant_id": "rst_central", "limit": 51}),
        ("list_orders", {"restaurant_id": "rst_large", "limit": 50}), ("get_order", {"restaurant_id": "rst_central", "order_id": "ord_r0001"}),
        ("get_transcript", {"restaurant_id": "rst_central", "transcript_id": "trs_huge"}),
        ("get_conversation", {"restaurant_id": "rst_central", "conversation_id": "cnv_long", "message_limit": 100}),
        ("search_transcripts", {"restaurant_id": "rst_central", "query": "gluten-free"}),
        ("get_analytics", {"restaurant_id": "rst_central", "metrics": ["orders_count"], "from": "2026-11-01", "to": "2026-11-30"}),
        ("list_organizations", {}), ("list_restaurants", {}), ("get_restaurant", {"restaurant_id": "rst_rival"}),
        ("list_conversations", {"restaurant_id": "rst_central"}), ("list_instructions", {"restaurant_id": "rst_central"}),
    ]
    for tool, args in calls:
        result = s.call(tool, **args)
        Draft202012Validator(tools[tool]["outputSchema"]).validate(result["structuredContent"])
        assert len(json.dumps(result["structuredContent"], separators=(",", ":"), ensure_ascii=False).encode()) <= 128 * 1024
        assert len(result["content"]) == 1


def test_transport_security_and_audience(server):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    r = httpx.post(server["url"], json=init, headers={**base, "authorization": "Bearer py-token-owner",
                                                      "origin": "https://attacker.example"})
    assert r.status_code == 403
    r = httpx.post(server["url"], json=init, headers={**base, "authorization": "Bearer py-token-other_audience"})
    assert r.status_code == 401 and "resource_metadata=" in r.headers["www-authenticate"]
    r = httpx.post(server["url"], json={"jsonrpc": "2.0", "id": 7, "params": {}},
                   headers={**base, "authorization": "Bearer py-token-owner"})
    assert r.status_code == 400 and r.json()["error"]["code"] == -32602  # the SDK's own (#3557)


def test_walk_is_complete_and_cursors_are_bound(server):
    s = Session(server["url"], "owner")
    seen, cursor = [], None
    while True:
        args = {"restaurant_id": "rst_central", "limit": 7, **({"cursor": cursor} if cursor else {})}
        meta = (page := s.call("list_orders", **args)["structuredContent"])["meta"]
        seen += [o["id"] for o in page["data"]["orders"]]
        if not (cursor := meta.get("next_cursor")):
            break
    assert len(seen) == len(set(seen)) == 137
    first = s.call("list_orders", restaurant_id="rst_central", limit=5)["structuredContent"]["meta"]["next_cursor"]
    for bad in [first[:-1], first[1:], "", first.replace(".", "-")]:
        err = s.call("list_orders", restaurant_id="rst_central", cursor=bad)["structuredContent"]["data"]["error"]
        assert err["code"] == "MCP_CURSOR_INVALID"
    other = Session(server["url"], "owner_second_client")
    err = other.call("list_orders", restaurant_id="rst_central", cursor=first)["structuredContent"]["data"]["error"]
    assert err["code"] == "MCP_CURSOR_INVALID"


def test_idempotency_and_logs(server):
    s = Session(server["url"], "owner")
    args = {"restaurant_id": "rst_central", "text": "Test canary zq81", "idempotency_key": "test-key-zq81"}
    first, again = s.call("create_instruction", **args), s.call("create_instruction", **args)
    assert again["structuredContent"]["meta"]["replayed"] is True
    assert again["structuredContent"]["data"] == first["structuredContent"]["data"]
    err = s.call("create_instruction", **{**args, "text": "other zq81"})["structuredContent"]["data"]["error"]
    assert err["code"] == "MCP_IDEMPOTENCY_MISMATCH"
    log = server["log"].read_text()
    assert "tool=create_instruction" in log and "zq81" not in log and "py-token" not in log


def test_sliding_log():
    now = [0.0]
    limiter = SlidingLogLimiter(clock=lambda: now[0])
    for i in range(3):
        now[0] = i * 10.0
        assert limiter.admit(("c", "u", "t"), 3) is None
    assert limiter.admit(("c", "u", "t"), 3) == 40_000  # the call at t=0 leaves the window at 60
    assert limiter.admit(("c", "u", "other"), 3) is None
    now[0] = 60.0
    assert limiter.admit(("c", "u", "t"), 3) is None
