#!/usr/bin/env bash
# Latency while Redis is paused (SIGSTOP), for docs/RELIABILITY.md: one chataigne-mock on a
# redis-server of its own; after a warm-up keyed write, Redis is stopped for STALL_SECONDS and,
# during the stall, we time tools/list, 16 concurrent keyed writes (send_message, fresh keys),
# tools/list 0.2 s after they were sent, then one unkeyed read (get_restaurant); Redis is then
# resumed and one keyed write is timed.
# Each figure is curl's time_total with the code it got (ok or the error code).
# Usage: bench/redis_stall.sh   (env: MOCK_BIN=target/debug/chataigne-mock STALL_SECONDS=6
#        REDIS_PORT=6398 PORT=18099 NO_BUILD=1)
set -euo pipefail
cd "$(dirname "$0")/.."
STALL=${STALL_SECONDS:-6} REDIS_PORT=${REDIS_PORT:-6398} PORT=${PORT:-18099}
MOCK_BIN=${MOCK_BIN:-target/debug/chataigne-mock}
[[ ${NO_BUILD:-} == 1 ]] || cargo build -q -p mock-server --bin chataigne-mock
out=$(mktemp -d)
redis-server --port "$REDIS_PORT" --save '' --appendonly no --bind 127.0.0.1 >/dev/null & redis_pid=$!
trap 'kill -CONT "$redis_pid" 2>/dev/null; kill "$redis_pid" "${mock_pid:-}" 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
"$MOCK_BIN" --listen "127.0.0.1:$PORT" --redis "redis://127.0.0.1:$REDIS_PORT" \
  --redis-namespace "stall-$$" --log-file /dev/null & mock_pid=$!
H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
   -H 'Authorization: Bearer dev-token-owner')
for _ in $(seq 100); do curl -s -o /dev/null "${H[@]}" "http://127.0.0.1:$PORT/mcp" \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' && break; sleep 0.1; done

# post NAME BODY: prints "NAME <seconds> <code>" (code: ok, an error code, or what JSON-RPC said).
post() {
  local t
  t=$(curl -s -o "$out/$1" -w '%{time_total}' "${H[@]}" "http://127.0.0.1:$PORT/mcp" -d "$2")
  local code
  code=$(grep -o '"code":"[A-Z_]*"' "$out/$1" | head -1 | cut -d'"' -f4 || true)
  grep -q '"tools":\[' "$out/$1" && code=listed
  echo "$1 $t ${code:-ok}"
}
send() {
  echo '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"restaurant_id":"rst_central","conversation_id":"cnv_c02","text":"Table for two is ready","idempotency_key":"'"$1"'"}}}'
}
read_body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_restaurant","arguments":{"restaurant_id":"rst_central"}}}'

post warm-up "$(send "stall-warm-$$")"
kill -STOP "$redis_pid"
t0=$(date +%s%N)
post tools-list '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
t1=$(date +%s%N)
pids=()
for i in $(seq -w 1 16); do post "keyed-$i" "$(send "stall-$$-$i")" > "$out/line-$i" & pids+=($!); done
# tools/list again while the keyed writes are in flight.
sleep 0.2
post tools-list-busy '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' > "$out/busy"
wait "${pids[@]}"
cat "$out/busy"
cat "$out"/line-*
echo "16 concurrent keyed writes: all answered after $(( ($(date +%s%N) - t1) / 1000000 )) ms"
post get_restaurant "$read_body"
left=$(( STALL * 1000 - ($(date +%s%N) - t0) / 1000000 ))
if (( left > 0 )); then sleep "$(( left / 1000 )).$(printf '%03d' $(( left % 1000 )))"; fi
kill -CONT "$redis_pid"
echo "Redis resumed after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
post after "$(send "stall-after-$$")"
