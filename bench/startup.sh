#!/usr/bin/env bash
# Startup to ready: from launching chataigne-mock (default, embedded dataset) to its first
# successful tools/call answer over HTTP, RUNS times; prints each run and the median, in ms.
# Polling is a curl loop with no sleep, so each figure includes up to one curl start (~5 ms).
# Usage: bench/startup.sh   (env: RUNS=21 PORT=18094 NO_BUILD=1)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-21} PORT=${PORT:-18094}
[[ ${NO_BUILD:-} == 1 ]] || cargo build --release -q -p mock-server --bins
BIN=target/release/chataigne-mock
BODY='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_restaurant","arguments":{"restaurant_id":"rst_central"}}}'
ready() {
  curl -sf "http://127.0.0.1:$PORT/mcp" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'Authorization: Bearer dev-token-owner' \
    -d "$BODY" 2>/dev/null | grep -q '"isError":false'
}
# The floor: one successful curl against an already running server.
"$BIN" --listen "127.0.0.1:$PORT" --log-file /dev/null & pid=$!
until ready; do :; done
floor=()
for _ in 1 2 3 4 5; do t0=$(date +%s%N); ready; floor+=($(( ($(date +%s%N) - t0) / 1000 ))); done
kill "$pid"; wait "$pid" 2>/dev/null || true
echo "one curl to a running server (µs): ${floor[*]}"
times=()
for _ in $(seq "$RUNS"); do
  t0=$(date +%s%N)
  "$BIN" --listen "127.0.0.1:$PORT" --log-file /dev/null & pid=$!
  until ready; do :; done
  times+=($(( ($(date +%s%N) - t0) / 1000 )))
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo "startup to first answer (µs): ${times[*]}"
echo "median $(( sorted[RUNS / 2] / 1000 )) ms, min $(( sorted[0] / 1000 )) ms, max $(( sorted[RUNS - 1] / 1000 )) ms over $RUNS runs"
