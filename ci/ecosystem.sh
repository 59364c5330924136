#!/usr/bin/env bash
# Proves that the reference server works with the real MCP ecosystem tools (issue 11):
#   - the official conformance suite (@modelcontextprotocol/conformance, server scenarios), once
#     per protocol revision (`--requirements 2026-07-28`, `--requirements 2025-11-25`), through
#     ci/ecosystem/inject-token.mjs, which adds the bearer token it cannot send;
#   - the MCP Inspector in CLI mode (@modelcontextprotocol/inspector);
#   - the official TypeScript SDK client (@modelcontextprotocol/sdk), over HTTP and over stdio;
#   - our own DNS-rebinding probes with curl (a foreign Origin, a foreign Host, each alone).
# Node 22 and the packages are installed under .ecosystem/ (the system Node is not touched).
# Loopback only. Idempotent: re-runs reuse .ecosystem/ when the pinned versions are there.
# Each check is counted once (29: the verdict's own tests; per revision, each required scenario,
# the other scenarios as one, and the suite's own verdict on our baseline; 2 Inspector calls,
# 2 SDK transports, 3 curl probes); setup is shown but not counted. See docs/ECOSYSTEM.md.
# Exit 0 when every check passes, 1 otherwise.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
ECO=$ROOT/.ecosystem
HERE=$ROOT/ci/ecosystem

# Pinned versions (override with the environment to try newer ones).
NODE_VERSION=${ECOSYSTEM_NODE_VERSION:-22.23.3}
CONFORMANCE_VERSION=${ECOSYSTEM_CONFORMANCE_VERSION:-0.2.0-alpha.12}
INSPECTOR_VERSION=${ECOSYSTEM_INSPECTOR_VERSION:-2.12.0}
SDK_VERSION=${ECOSYSTEM_SDK_VERSION:-1.32.2}
TOKEN=dev-token-owner
EXPECTED_TOOLS=17

# The protocol revisions the conformance suite runs at (each its own requirement set and wire:
# 2026-07-28 stateless with per-request _meta, 2025-11-25 the initialize handshake), and per
# revision the scenarios that must pass outright: they can never be expected failures (a
# baseline entry naming one fails the run). Every other scenario the revision scores passes or
# fails only as ci/ecosystem/expected-failures/<revision>.yaml says, check by check, with why.
REVISIONS=(2026-07-28 2025-11-25)
declare -A REQUIRED=(
  [2026-07-28]="tools-list,resources-list,prompts-list,sep-2164-resource-not-found,server-sse-multiple-streams,dns-rebinding-protection,caching,input-required-result-unsupported-methods,input-required-result-validate-input,http-header-validation"
  [2025-11-25]="server-initialize,ping,logging-set-level,tools-list,resources-list,prompts-list,dns-rebinding-protection"
)

NODE=$ECO/node_modules/node/bin/node
LOGS=$ECO/logs
mkdir -p "$ECO" "$LOGS"

say() { echo "ecosystem: $*" >&2; }

passed=0
failed=0
summary=()
record() { # record PASS|FAIL NAME DETAIL: one check, counted
  summary+=("$(printf '%-5s %-62s %s' "$1" "$2" "$3")")
  if [[ $1 == PASS ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  printf '%-5s %-62s %s\n' "$1" "$2" "$3" >&2
}
note() { # note KIND NAME DETAIL: shown in the summary, not counted (setup)
  summary+=("$(printf '%-5s %-62s %s' "$1" "$2" "$3")")
  printf '%-5s %-62s %s\n' "$1" "$2" "$3" >&2
}

pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

started=$SECONDS

# --- 1. Node 22 and the npm packages, under .ecosystem/ ----------------------------------------
pkg_version() { # the installed version of an npm package in .ecosystem, or nothing
  "$NODE" -p "require('$ECO/node_modules/$1/package.json').version" 2>/dev/null || true
}
NPM_FLAGS=(--prefix "$ECO" --save-exact --no-audit --no-fund --loglevel=error)
if [[ ! -f $ECO/package.json ]]; then
  # allowScripts: the `node` package installs its binary in a preinstall script.
  printf '{\n  "private": true,\n  "allowScripts": { "node": true }\n}\n' >"$ECO/package.json"
fi
if [[ "$("$NODE" --version 2>/dev/null || true)" != "v$NODE_VERSION" ]]; then
  say "installing node@$NODE_VERSION into .ecosystem (system npm $(npm --version))"
  npm install "${NPM_FLAGS[@]}" "node@$NODE_VERSION" >"$LOGS/npm-node.log" 2>&1 \
    || { cat "$LOGS/npm-node.log" >&2; exit 1; }
fi
if [[ "$("$NODE" --version 2>/dev/null || true)" != "v$NODE_VERSION" ]]; then
  say "node@$NODE_VERSION did not install a working $NODE"
  exit 1
fi
# From here on, `node` and the npm that runs on it are Node 22's (npm comes from the system).
export PATH=$ECO/node_modules/node/bin:$PATH
if [[ "$(pkg_version @modelcontextprotocol/conformance)" != "$CONFORMANCE_VERSION" \
  || "$(pkg_version @modelcontextprotocol/inspector)" != "$INSPECTOR_VERSION" \
  || "$(pkg_version @modelcontextprotocol/sdk)" != "$SDK_VERSION" ]]; then
  say "installing the MCP packages into .ecosystem"
  npm install "${NPM_FLAGS[@]}" "node@$NODE_VERSION" \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
    "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" \
    "@modelcontextprotocol/sdk@$SDK_VERSION" >"$LOGS/npm-mcp.log" 2>&1 \
    || { cat "$LOGS/npm-mcp.log" >&2; exit 1; }
fi
versions="node $("$NODE" --version), conformance $(pkg_version @modelcontextprotocol/conformance)"
versions+=", inspector $(pkg_version @modelcontextprotocol/inspector), sdk $(pkg_version @modelcontextprotocol/sdk)"
note SETUP install "$versions"

# --- 2. Build and start the server, and the token-injecting proxy ------------------------------
# CHATAIGNE_MOCK: a binary already built (CI passes the one its test step built, to avoid a
# second build with other features).
if [ -n "${CHATAIGNE_MOCK:-}" ]; then
  SERVER_BIN=$CHATAIGNE_MOCK
else
  say "building mock-server"
  cargo build -q -p mock-server
  SERVER_BIN=$ROOT/target/debug/chataigne-mock
fi

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
wait_port() { # wait_port PORT NAME PID
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    kill -0 "$3" 2>/dev/null || { say "$2 exited early"; return 1; }
    sleep 0.1
  done
  say "$2 is not listening on 127.0.0.1:$1 after 10 s"
  return 1
}

PORT=${ECOSYSTEM_PORT:-$(free_port)}
"$SERVER_BIN" --listen "127.0.0.1:$PORT" >"$LOGS/server.log" 2>&1 &
pids+=($!)
wait_port "$PORT" chataigne-mock "${pids[-1]}" || { tail -20 "$LOGS/server.log" >&2; exit 1; }
MCP_URL=http://127.0.0.1:$PORT/mcp

PROXY_PORT=${ECOSYSTEM_PROXY_PORT:-$(free_port)}
node "$HERE/inject-token.mjs" "$PROXY_PORT" "http://127.0.0.1:$PORT" "$TOKEN" >"$LOGS/proxy.log" 2>&1 &
pids+=($!)
wait_port "$PROXY_PORT" inject-token "${pids[-1]}" || { tail -20 "$LOGS/proxy.log" >&2; exit 1; }
say "server at $MCP_URL, token-injecting proxy at http://127.0.0.1:$PROXY_PORT/mcp"

# --- 3. The official conformance suite, once per revision -------------------------------------
CONFORMANCE=$ECO/node_modules/@modelcontextprotocol/conformance
# The verdict's own tests first: a verdict that passes what it should fail would make the rest
# meaningless (an empty checks.json, a required scenario in the baseline, a stale entry, ...).
if ECOSYSTEM_DIR=$ECO node --test "$HERE/conformance-verdict.test.mjs" >"$LOGS/verdict-test.log" 2>&1; then
  record PASS conformance/verdict-self-test "$(sed -n 's/^# pass //p' "$LOGS/verdict-test.log") cases"
else
  record FAIL conformance/verdict-self-test "$(grep -m1 '^not ok' "$LOGS/verdict-test.log" || tail -1 "$LOGS/verdict-test.log")"
fi
for revision in "${REVISIONS[@]}"; do
  required=${REQUIRED[$revision]}
  out=$ECO/results/conformance/$revision
  baseline=$HERE/expected-failures/$revision.yaml
  rm -rf "$out"
  say "running the conformance suite at $revision (log: .ecosystem/logs/conformance-$revision.log)"
  # The suite judges our baseline itself too (its exit status); the verdict below is stricter.
  suite_status=0
  (cd "$ECO" && node "$CONFORMANCE/dist/index.js" server --url "http://127.0.0.1:$PROXY_PORT/mcp" \
    --requirements "$revision" --expected-failures "$baseline" -o "$out") \
    >"$LOGS/conformance-$revision.log" 2>&1 || suite_status=$?
  verdict_file=$LOGS/conformance-verdict-$revision.txt
  ECOSYSTEM_DIR=$ECO node "$HERE/conformance-verdict.mjs" "$out" "$baseline" \
    "$CONFORMANCE/requirements/$revision.yaml" "$required" >"$verdict_file" 2>&1 || true
  sed 's/^/        /' "$verdict_file" >&2
  # One check per required scenario: it passes, or the check fails (there is no expected
  # failure for a required scenario; the verdict prints FAIL for one listed in the baseline).
  for scenario in ${required//,/ }; do
    line=$(grep -m1 -E "^[A-Z]+ +$scenario \[required\]" "$verdict_file" || true)
    status=${line%% *}
    detail=$(sed -E 's/^[A-Z]+ +[a-z0-9-]+ \[required\] *//' <<<"$line")
    if [[ $status == PASS ]]; then
      record PASS "conformance/$revision/$scenario" "${detail:-passed}"
    else
      record FAIL "conformance/$revision/$scenario" "${detail:-no verdict (see .ecosystem/logs/conformance-verdict-$revision.txt)}"
    fi
  done
  # One check for every other scenario the revision scores, and the baseline file itself.
  others=$(grep -m1 '^others: ' "$verdict_file" || true)
  others_detail=$(sed -E 's/^others: [A-Z]+ +//' <<<"$others")
  if [[ $others == "others: PASS"* ]] && ! grep -q '^FAIL' "$verdict_file"; then
    record PASS "conformance/$revision/other-scenarios" "$others_detail"
  else
    record FAIL "conformance/$revision/other-scenarios" \
      "${others_detail:-no verdict}; $(grep -c '^FAIL' "$verdict_file") FAIL lines in .ecosystem/logs/conformance-verdict-$revision.txt"
  fi
  # The suite's own reading of the same baseline (its --expected-failures, exit status).
  if [[ $suite_status -eq 0 ]]; then
    record PASS "conformance/$revision/suite-baseline" "$(grep -m1 -o 'Baseline check passed[^.]*' "$LOGS/conformance-$revision.log" || echo 'exit 0')"
  else
    record FAIL "conformance/$revision/suite-baseline" "exit $suite_status: $(grep -A3 -m1 -E 'Unexpected failures|Stale baseline|Invalid expected-failures' "$LOGS/conformance-$revision.log" | tr '\n' ' ' | sed 's/\x1b\[[0-9;]*m//g')"
  fi
done

# --- 4. MCP Inspector, CLI mode ------------------------------------------------------------------
# Its home and catalog live in .ecosystem, not in ~/.mcp-inspector.
mkdir -p "$ECO/home"
inspector() {
  (cd "$ECO" && HOME=$ECO/home MCP_CATALOG_PATH=$ECO/home/mcp.json timeout 120 \
    node node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js --cli \
    "$MCP_URL" --transport http --header "Authorization: Bearer $TOKEN" "$@")
}
# check_json NAME FILE JS: JS is the body of a function of `d` (the parsed output) that returns
# the detail string when the output is right and throws otherwise.
check_json() {
  local detail
  if detail=$(node -e '
      const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      process.stdout.write(String((function (d) {'"$3"'})(d)));' "$2" 2>&1); then
    record PASS "$1" "$detail"
  else
    record FAIL "$1" "$(echo "$detail" | grep -m1 -E 'Error|error' || echo "$detail" | head -1)"
  fi
}
if inspector --method tools/list >"$LOGS/inspector-tools-list.json" 2>"$LOGS/inspector-tools-list.err"; then
  check_json inspector/tools-list "$LOGS/inspector-tools-list.json" "
    const n = d.tools.length;
    if (n !== $EXPECTED_TOOLS) throw new Error(n + ' tools, expected $EXPECTED_TOOLS');
    return n + ' tools';"
else
  record FAIL inspector/tools-list "exit $?: $(tail -1 "$LOGS/inspector-tools-list.err")"
fi
if inspector --method tools/call --tool-name list_orders --tool-arg restaurant_id=rst_central limit=2 \
  >"$LOGS/inspector-list-orders.json" 2>"$LOGS/inspector-list-orders.err"; then
  check_json inspector/list_orders "$LOGS/inspector-list-orders.json" "
    if (d.isError) throw new Error('isError: ' + JSON.stringify(d.structuredContent));
    const orders = d.structuredContent.data.orders;
    if (orders.length !== 2) throw new Error(orders.length + ' orders, expected 2');
    if (!orders.every((o) => o.restaurant_id === 'rst_central')) throw new Error('an order of another restaurant');
    return '2 orders (' + orders.map((o) => o.id).join(', ') + ')';"
else
  record FAIL inspector/list_orders "exit $?: $(tail -1 "$LOGS/inspector-list-orders.err")"
fi

# --- 5. The official TypeScript SDK client, over Streamable HTTP and over stdio ------------------
for transport in http stdio; do
  target=$MCP_URL
  [[ $transport == stdio ]] && target=$SERVER_BIN
  if ECOSYSTEM_DIR=$ECO node "$HERE/sdk-client.mjs" "$transport" "$target" >"$LOGS/sdk-$transport.txt" 2>&1; then
    record PASS "sdk/$transport" "$(grep -c '^  PASS' "$LOGS/sdk-$transport.txt") assertions (connect, tools/list, get_restaurant, send_message, replay)"
  else
    record FAIL "sdk/$transport" "$(grep -m1 -E '^  FAIL' "$LOGS/sdk-$transport.txt" || tail -1 "$LOGS/sdk-$transport.txt")"
  fi
  sed 's/^/      /' "$LOGS/sdk-$transport.txt" >&2
done

# --- 6. DNS-rebinding protection, our own probes (curl) --------------------------------------------
# The conformance scenario above sends a foreign Host and a foreign Origin together; these send
# each alone, with a valid token and a valid request, so that only the header can explain a 403:
#   a foreign Origin with the server's own Host    -> 403 (Origin check)
#   a foreign Host without Origin                  -> 403 (Host check: a rebinding browser may
#                                                     send no Origin on a same-origin request)
#   the server's own Host without Origin           -> 200 (not 403: CLI clients send no Origin)
probe() { # probe NAME EXPECTED CURL_ARGS...: EXPECTED is a status, or !403
  local name=$1 want=$2 code
  shift 2
  code=$(curl -s -o "$LOGS/dns-$name.body" -w '%{http_code}' --max-time 10 \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-06-18' -H "Authorization: Bearer $TOKEN" \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' "$@" "$MCP_URL" || true)
  if [[ $want == "$code" ]]; then
    record PASS "dns-rebinding/$name" "$code"
  else
    record FAIL "dns-rebinding/$name" "got ${code:-no answer}, expected $want: $(head -c 200 "$LOGS/dns-$name.body" 2>/dev/null)"
  fi
}
probe bad-origin-good-host 403 -H 'Origin: http://evil.example.com'
probe bad-host-no-origin 403 -H 'Host: evil.example.com'
# Any other answer than 200 would leave the two 403s above unexplained (a 401 or 400 here means
# the probes did not reach the Host/Origin checks with a request the server otherwise accepts).
probe good-host-no-origin 200

# --- 7. Summary ----------------------------------------------------------------------------------
echo
echo "Ecosystem checks (logs in .ecosystem/logs, $((SECONDS - started)) s):"
printf '%s\n' "${summary[@]}"
echo "(The SETUP line is not counted; every other line is one check, counted once.)"
echo "ecosystem: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
