#!/usr/bin/env bash
# Load, list-latency and memory figures of docs/BENCHMARKS.md, in one run on one machine:
#   1. wrk against the bare axum echo (mock-server/examples/axum_echo.rs), rmcp's service with a
#      fixed answer (examples/rmcp_echo.rs: the MCP layer's ceiling), then get_order, list_orders
#      and a keyed create_instruction against chataigne-mock, same concurrency;
#   2. list_orders page latency (concurrency 1) on rst_large with 1,000 and 1,000,000 synthetic
#      orders, two servers side by side, alternating;
#   3. RSS of the server holding 1,000,000 synthetic orders, and its load time.
# Needs wrk and curl. Usage: bench/load.sh   (env: THREADS CONNS DURATION LARGE NO_BUILD=1)
# By hand: BENCH_DIR=$PWD/bench wrk -t2 -c32 -d10s --latency -s bench/get_order.lua http://127.0.0.1:8080/mcp
set -euo pipefail
cd "$(dirname "$0")/.."
export BENCH_DIR="$PWD/bench"
THREADS=${THREADS:-2} CONNS=${CONNS:-32} DURATION=${DURATION:-10s} LARGE=${LARGE:-1000000}
ECHO_PORT=18090 MOCK_PORT=18091 SMALL_PORT=18092 LARGE_PORT=18093 RMCP_PORT=18094

[[ ${NO_BUILD:-} == 1 ]] || cargo build --release -q -p mock-server --examples --bins
BIN=target/release/chataigne-mock ECHO=target/release/examples/axum_echo RMCP=target/release/examples/rmcp_echo

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

body() { printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2"; }
post() { # port body → response body
  curl -sf "http://127.0.0.1:$1/mcp" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' \
    -H 'Authorization: Bearer dev-token-owner' -d "$2"
}
wait_ready() { # port: until the first successful answer
  until post "$1" "$(body get_restaurant '{"restaurant_id":"rst_central"}')" >/dev/null 2>&1; do sleep 0.01; done
}
# Every measured call must succeed: check one sample answer before loading.
check_ok() { # port body
  local out; out=$(post "$1" "$2")
  grep -q '"isError":false' <<<"$out" || { echo "not a success: ${out:0:300}" >&2; exit 1; }
}
# wrk → "calls/s p50 p99 non2xx"
run_wrk() { # threads conns duration script port [env...]
  local out
  out=$(env "${@:6}" wrk -t"$1" -c"$2" -d"$3" --latency -s "bench/$4" "http://127.0.0.1:$5/mcp")
  local rps p50 p99 bad
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $5}' <<<"$out"); bad=${bad:-0}
  errs=$(awk '/Socket errors/ {print $0}' <<<"$out")
  echo "$rps $p50 $p99 $bad${errs:+ ($errs)}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "# $(date -u +%FT%TZ) | $(nproc) cores | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "# wrk -t$THREADS -c$CONNS -d$DURATION --latency, client and servers on the same machine"

"$ECHO" "127.0.0.1:$ECHO_PORT" & PIDS+=($!)
"$RMCP" "127.0.0.1:$RMCP_PORT" & PIDS+=($!)
# The limiter step is skipped: 500–1,000 calls/min per persona and tool would otherwise cap
# the load, not the server (docs/BENCHMARKS.md). Logs go to /dev/null but are still formatted.
# The keyed run makes ~200k fresh keys in 10 s: lift the live-record cap (100k) out of its way,
# or half its answers would be refusals that wrk counts as successes.
"$BIN" --listen "127.0.0.1:$MOCK_PORT" --defect no-rate-limit --max-idempotency-records 10000000 \
  --log-file /dev/null 2>/dev/null & PIDS+=($!)
until curl -s -o /dev/null "http://127.0.0.1:$ECHO_PORT/mcp" -H 'Content-Type: application/json' -d '{}'; do sleep 0.01; done
until post "$RMCP_PORT" "$(body get_order '{}')" >/dev/null 2>&1; do sleep 0.01; done
wait_ready "$MOCK_PORT"
check_ok "$MOCK_PORT" "$(body get_order '{"restaurant_id":"rst_central","order_id":"ord_c0001"}')"
check_ok "$MOCK_PORT" "$(body list_orders '{"restaurant_id":"rst_central","limit":20}')"
check_ok "$MOCK_PORT" "$(body create_instruction '{"restaurant_id":"rst_central","text":"Bench instruction","idempotency_key":"bench-check-0001"}')"
echo "# answer sizes: echo $(post "$ECHO_PORT" '{"id":1}' | wc -c) B, rmcp echo $(post "$RMCP_PORT" "$(body get_order '{}')" | wc -c) B, get_order $(post "$MOCK_PORT" "$(body get_order '{"restaurant_id":"rst_central","order_id":"ord_c0001"}')" | wc -c) B, list_orders $(post "$MOCK_PORT" "$(body list_orders '{"restaurant_id":"rst_central","limit":20}')" | wc -c) B"

echo
echo "## Load: calls/s p50 p99 non-2xx"
read -r e_rps e_p50 e_p99 e_bad <<<"$(run_wrk "$THREADS" "$CONNS" "$DURATION" get_order.lua "$ECHO_PORT")"
echo "axum echo (baseline)        $e_rps $e_p50 $e_p99 $e_bad"
read -r r_rps r_p50 r_p99 r_bad <<<"$(run_wrk "$THREADS" "$CONNS" "$DURATION" get_order.lua "$RMCP_PORT")"
echo "rmcp echo (MCP layer only)  $r_rps $r_p50 $r_p99 $r_bad  ratio to echo $(ratio "$r_rps" "$e_rps")"
for s in get_order list_orders create_instruction; do
  read -r rps p50 p99 bad <<<"$(run_wrk "$THREADS" "$CONNS" "$DURATION" "$s.lua" "$MOCK_PORT")"
  printf '%-27s %s %s %s %s  ratio to echo %s, to rmcp echo %s\n' "$s" "$rps" "$p50" "$p99" "$bad" \
    "$(ratio "$rps" "$e_rps")" "$(ratio "$rps" "$r_rps")"
done
read -r e2_rps e2_p50 e2_p99 e2_bad <<<"$(run_wrk "$THREADS" "$CONNS" "$DURATION" get_order.lua "$ECHO_PORT")"
echo "axum echo (again, drift)    $e2_rps $e2_p50 $e2_p99 $e2_bad"
kill "${PIDS[@]}"; wait 2>/dev/null || true; PIDS=()

echo
echo "## list_orders page latency, rst_large, concurrency 1"
"$BIN" --listen "127.0.0.1:$SMALL_PORT" --synthetic-orders 1000 --secret bench --defect no-rate-limit --log-file /dev/null & PIDS+=($!)
t0=$(date +%s%N)
"$BIN" --listen "127.0.0.1:$LARGE_PORT" --synthetic-orders "$LARGE" --secret bench --defect no-rate-limit --log-file /dev/null & PIDS+=($!)
LARGE_PID=$!
wait_ready "$LARGE_PORT"; t1=$(date +%s%N)
wait_ready "$SMALL_PORT"
echo "load of $LARGE synthetic orders, start to first answer: $(( (t1 - t0) / 1000000 )) ms"
echo "RSS with $LARGE synthetic orders: $(awk '/VmRSS/ {printf "%.0f MiB", $2 / 1024}' "/proc/$LARGE_PID/status") (VmHWM $(awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' "/proc/$LARGE_PID/status"))"
page_cursor() { # port → the first page's next_cursor
  post "$1" "$(body list_orders '{"restaurant_id":"rst_large","limit":20}')" | grep -o '"next_cursor":"[^"]*"' | head -1 | cut -d'"' -f4
}
for round in 1 2; do
  for size in 1000 "$LARGE"; do
    port=$SMALL_PORT; [[ $size == 1000 ]] || port=$LARGE_PORT
    check_ok "$port" "$(body list_orders '{"restaurant_id":"rst_large","limit":20}')"
    read -r rps p50 p99 _ <<<"$(run_wrk 1 1 5s list_orders.lua "$port" LIST_RESTAURANT=rst_large)"
    printf 'round %s, %8s orders, page 1: %s calls/s p50 %s p99 %s\n' "$round" "$size" "$rps" "$p50" "$p99"
    read -r rps p50 p99 _ <<<"$(run_wrk 1 1 5s list_orders.lua "$port" LIST_RESTAURANT=rst_large LIST_CURSOR="$(page_cursor "$port")")"
    printf 'round %s, %8s orders, page 2: %s calls/s p50 %s p99 %s\n' "$round" "$size" "$rps" "$p50" "$p99"
  done
done
