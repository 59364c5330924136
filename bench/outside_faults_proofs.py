"""The harness of the outside faults' live proofs (bench/outside-faults-b4-proofs.py and
-b5-proofs.py): a fresh reference server behind the fault proxy per fault, the requests a proof
sends, the answer's parts it reads, and `main`, which runs each proof through the healthy proxy
and through the fault's and prints whether they differ (exit 1 unless every one does).

A batch's script calls `configure` with its log folder and first port, registers its proofs with
`@scenario("NAME")` and calls `main()`.
"""
import json, os, subprocess, sys, time, urllib.request, urllib.error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOCK = os.path.abspath(os.environ.get("MOCK", "target/debug/chataigne-mock"))
PROXY = os.path.abspath(os.environ.get("PROXY", "target/debug/examples/fault_proxy"))
LOG = None
PORT = None

def configure(out, port):
    """The batch's log folder and first port, unless OUT and PORT say otherwise."""
    global LOG, PORT
    LOG = os.path.abspath(os.environ.get("OUT", out))
    PORT = int(os.environ.get("PORT", str(port)))
    os.makedirs(LOG, exist_ok=True)

class Pair:
    def __init__(self, port, fault):
        self.port, self.pport, self.fault = port, port + 1, fault
        self.mock = subprocess.Popen([MOCK, "--listen", f"127.0.0.1:{port}", "--public-url", f"http://127.0.0.1:{port+1}",
            "--control-api", "--control-secret", "bench-secret", "--log-format", "json", "--log-file", f"{LOG}/server-{port}.log"],
            stderr=open(f"{LOG}/server-{port}.err", "w"), cwd=ROOT)
        env = dict(os.environ, FAULT_CONTROL_SECRET="bench-secret")
        self.proxy = subprocess.Popen([PROXY, f"127.0.0.1:{port+1}", f"127.0.0.1:{port}", fault],
            stderr=open(f"{LOG}/proxy-{port}.err", "w"), cwd=ROOT, env=env)
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port+1}/.well-known/oauth-protected-resource", timeout=1); break
            except Exception: time.sleep(0.05)
        self.n = 0
    def stop(self):
        for p in (self.proxy, self.mock):
            p.terminate()
            p.wait()
    def http(self, method, path, body=None, headers=None, control=False):
        port = self.port if control else self.pport
        h = dict(headers or {})
        if control: h["x-control-secret"] = "bench-secret"
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers=h, method=method)
        try: r = urllib.request.urlopen(req, timeout=60)
        except urllib.error.HTTPError as e: r = e
        data = r.read()
        try: j = json.loads(data)
        except Exception: j = None
        return r.status, dict(r.headers), j, data
    def control(self, method, path, body=None):
        b = json.dumps(body).encode() if body is not None else None
        return self.http(method, "/control" + path, b, {"content-type": "application/json"}, control=True)[2]
    def rpc(self, persona, method, params=None, version="2025-11-25", notification=False, headers=None):
        self.n += 1
        msg = {"jsonrpc": "2.0", "method": method}
        if not notification: msg["id"] = self.n
        if params is not None: msg["params"] = params
        h = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if version: h["mcp-protocol-version"] = version
        if persona: h["authorization"] = "Bearer dev-token-" + persona
        h.update(headers or {})
        return self.http("POST", "/mcp", json.dumps(msg).encode(), h)
    def tool(self, persona, name, args):
        s, h, j, d = self.rpc(persona, "tools/call", {"name": name, "arguments": args})
        return j["result"] if j and "result" in j else j
def sc(r): return r.get("structuredContent", {}) if isinstance(r, dict) else {}
def err(r):
    e = sc(r).get("data", {}).get("error")
    return e["code"] if e else None
def items(r, key): return sc(r).get("data", {}).get(key)
def ids(r, key): return [x["id"] for x in (items(r, key) or [])]
def meta(r): return sc(r).get("meta", {})
def summary(r):
    e = err(r)
    return e if e else "ok"

S = {}
def scenario(name):
    def deco(f): S[name] = f; return f
    return deco

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}
def hdr(h, name):
    for k, v in h.items():
        if k.lower() == name: return v
    return None
def pages(p, persona, tool, args, key, cap=40):
    """Walk a list; returns (pages, items) or the first refusal's code."""
    out, cursor, n = [], None, 0
    while n < cap:
        a = dict(args)
        if cursor: a["cursor"] = cursor
        r = p.tool(persona, tool, a)
        if err(r): return err(r), out
        out += items(r, key); n += 1
        cursor = meta(r).get("next_cursor")
        if not cursor: break
    return n, out

def main():
    names = sys.argv[1:] or list(S)
    results = {}
    for i, name in enumerate(names):
        obs = {}
        for fault, port in (("none", PORT), (name, PORT + 20)):
            p = Pair(port, fault)
            try: obs[fault] = S[name](p)
            except Exception as e: obs[fault] = f"EXCEPTION {type(e).__name__}: {e}"
            finally: p.stop()
        differs = json.dumps(obs["none"], sort_keys=True, default=str) != json.dumps(obs[name], sort_keys=True, default=str)
        results[name] = differs
        print(f"## {name}: {'DIFFERS' if differs else 'SAME'}")
        print(f"   none : {json.dumps(obs['none'], ensure_ascii=False, default=str)}")
        print(f"   fault: {json.dumps(obs[name], ensure_ascii=False, default=str)}", flush=True)
    print(f"\n{sum(results.values())}/{len(results)} differ")
    sys.exit(0 if all(results.values()) else 1)
