#!/usr/bin/env bash
# Soak of docs/RELIABILITY.md: chataigne-mock on loopback under a steady mixed load
# (bench/soak.lua) for a fixed time; fails on any HTTP 5xx, on RSS growth >= 5 %, or if the
# server dies.
#   1. warm-up: WARMUP_SECONDS of the same load, so that allocator pools, connection buffers and
#      the fixed set of idempotency keys are in place before the baseline is taken;
#   2. RSS "start" (VmRSS, /proc/PID/status), the server idle for a second after the warm-up;
#   3. soak: SOAK_SECONDS of load, VmRSS sampled every SAMPLE_SECONDS into $OUT/rss.csv;
#   4. RSS "end", idle for a second after the soak, compared with "start".
# Needs wrk (apt-get install -y wrk if missing), curl and python3 (to pick a free port).
# Usage: bench/soak.sh   (env: SOAK_SECONDS=600 WARMUP_SECONDS=30 SAMPLE_SECONDS=30 THREADS=1
#                         CONNS=8 MOCK_BIN=target/release/chataigne-mock NO_BUILD=1 OUT=/tmp/soak/run)
# Smoke test: SOAK_SECONDS=20 WARMUP_SECONDS=5 SAMPLE_SECONDS=5 NO_BUILD=1 bench/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export BENCH_DIR="$PWD/bench"
SOAK_SECONDS=${SOAK_SECONDS:-600} WARMUP_SECONDS=${WARMUP_SECONDS:-30} SAMPLE_SECONDS=${SAMPLE_SECONDS:-30}
THREADS=${THREADS:-1} CONNS=${CONNS:-8}
MOCK_BIN=${MOCK_BIN:-target/release/chataigne-mock}
OUT=${OUT:-/tmp/soak/run-$(date -u +%Y%m%dT%H%M%SZ)}
MAX_GROWTH_PCT=5
mkdir -p "$OUT"

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
[[ ${NO_BUILD:-} == 1 ]] || cargo build --release -q -p mock-server --bin chataigne-mock

# A free loopback port: bind port 0 and read back what the kernel chose (tiny race, loopback only).
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT/mcp"

PID='' SAMPLER=''
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  [[ -z $SAMPLER ]] || kill "$SAMPLER" 2>/dev/null || true
  [[ -z $PID ]] || kill "$PID" 2>/dev/null || true
}
trap cleanup EXIT

# The limiter is skipped (--defect no-rate-limit, as bench/load.sh): at 1,000/min per persona and
# tool it would refuse almost every call within seconds and the soak would exercise step 3 only.
# Logs are formatted and written to a file, as a real deployment would, not kept in memory.
"$MOCK_BIN" --listen "127.0.0.1:$PORT" --defect no-rate-limit --secret soak \
  --log-file "$OUT/server.log" 2>"$OUT/server.stderr" &
PID=$!

post() { # body → response body
  curl -sf "$URL" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-06-18' -H 'Authorization: Bearer dev-token-owner' -d "$1"
}
body() { printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2"; }
alive() { kill -0 "$PID" 2>/dev/null; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }

for _ in $(seq 500); do
  post "$(body get_restaurant '{"restaurant_id":"rst_central"}')" >/dev/null 2>&1 && break
  alive || { echo "server died at start: $(cat "$OUT/server.stderr")" >&2; exit 1; }
  sleep 0.02
done
# Page 2 of list_orders needs a real cursor; cursors carry no expiry, so one serves the whole run.
SOAK_CURSOR=$(post "$(body list_orders '{"restaurant_id":"rst_central","limit":20}')" |
  grep -o '"next_cursor":"[^"]*"' | head -1 | cut -d'"' -f4)
[[ -n $SOAK_CURSOR ]] || { echo "no cursor from list_orders page 1" >&2; exit 1; }
export SOAK_CURSOR
# First use of the key soak.lua reuses with other arguments, so that every such call is a mismatch.
post "$(body create_instruction '{"restaurant_id":"rst_central","text":"Soak original","idempotency_key":"soak-mismatch"}')" |
  grep -q '"isError":false' || { echo "create_instruction failed" >&2; exit 1; }

field() { awk -v k="soak: $1" 'index($0, k " ") == 1 {print $NF}' "$2"; }
run_wrk() { # seconds → wrk output in $OUT/wrk-<seconds>.txt (path printed)
  local file="$OUT/wrk-$1s.txt"
  wrk -t"$THREADS" -c"$CONNS" -d"$1s" --timeout 10s --latency -s bench/soak.lua "$URL" >"$file" 2>&1 || true
  grep -q '^soak: calls ' "$file" || { echo "wrk failed: $(head -c 500 "$file")" >&2; exit 1; }
  echo "$file"
}

echo "# $(date -u +%FT%TZ) | $(nproc) cores | uptime:$(uptime | sed 's/.*load average/ load average/')"
echo "# server $MOCK_BIN (pid $PID) on 127.0.0.1:$PORT, --defect no-rate-limit; output in $OUT"
echo "# wrk -t$THREADS -c$CONNS, bench/soak.lua; warm-up ${WARMUP_SECONDS}s, soak ${SOAK_SECONDS}s, samples every ${SAMPLE_SECONDS}s"
RSS_IDLE=$(rss_kib)

WARM=$(run_wrk "$WARMUP_SECONDS")
alive || { echo "FAIL: server died during the warm-up" >&2; exit 1; }
sleep 1
RSS_START=$(rss_kib)

echo "elapsed_s,vmrss_kib" >"$OUT/rss.csv"
echo "0,$RSS_START" >>"$OUT/rss.csv"
# Sampler: on a fixed schedule from the soak's start, so samples do not drift.
(
  t0=$(date +%s)
  for ((i = 1; i * SAMPLE_SECONDS < SOAK_SECONDS; i++)); do
    wait_s=$((t0 + i * SAMPLE_SECONDS - $(date +%s)))
    ((wait_s <= 0)) || sleep "$wait_s"
    kill -0 "$PID" 2>/dev/null || exit 0
    echo "$((i * SAMPLE_SECONDS)),$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status")" >>"$OUT/rss.csv"
  done
) &
SAMPLER=$!

SOAK=$(run_wrk "$SOAK_SECONDS")
wait "$SAMPLER" 2>/dev/null || true
SAMPLER=
alive || { echo "FAIL: server died during the soak" >&2; exit 1; }
sleep 1
RSS_END=$(rss_kib)
echo "$SOAK_SECONDS,$RSS_END" >>"$OUT/rss.csv"
HWM=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
LOG_MB=$(($(stat -c %s "$OUT/server.log") / 1048576))
echo "# end $(date -u +%FT%TZ) | uptime:$(uptime | sed 's/.*load average/ load average/')"

echo
echo "## warm-up (${WARMUP_SECONDS}s)"
grep '^soak: ' "$WARM" | sed 's/^soak: /  /'
echo "## soak (${SOAK_SECONDS}s)"
grep '^soak: ' "$SOAK" | sed 's/^soak: /  /'
grep -E 'Requests/sec' "$SOAK" | sed 's/^/  /'

calls=$(field calls "$SOAK")
fivexx=$(($(field 5xx "$WARM") + $(field 5xx "$SOAK")))
non2xx=$(field non-2xx "$SOAK")
growth=$(awk -v a="$RSS_START" -v b="$RSS_END" 'BEGIN { printf "%.2f", (b - a) * 100 / a }')
echo
echo "## RSS (KiB): idle before load $RSS_IDLE, start (after warm-up) $RSS_START, end $RSS_END, growth $growth %, VmHWM $HWM; server log on disk $LOG_MB MiB"
column -t -s, "$OUT/rss.csv" | sed 's/^/  /'
echo
printf 'soak: %s calls in %ss (%s calls/s), 5xx %s (warm-up included), non-2xx %s, RSS %s -> %s KiB (%s %%)\n' \
  "$calls" "$SOAK_SECONDS" "$(awk -v c="$calls" -v s="$SOAK_SECONDS" 'BEGIN { printf "%.0f", c / s }')" "$fivexx" "$non2xx" "$RSS_START" "$RSS_END" "$growth"

status=0
# Only the deliberate invalid-token calls may answer non-2xx (401); timeouts would be hangs.
others=$(grep '^soak: http ' "$SOAK" | awk '$3 !~ /^2/ && $3 != 401 {n += $4} END {print n + 0}')
((others == 0)) || echo "WARNING: $others non-2xx answers other than the deliberate 401s" >&2
socket_errors=$(field 'socket errors' "$SOAK")
((socket_errors == 0)) || echo "WARNING: $socket_errors socket errors (timeouts: hangs?)" >&2
((fivexx == 0)) || { echo "FAIL: $fivexx HTTP 5xx answers" >&2; status=1; }
awk -v g="$growth" -v m="$MAX_GROWTH_PCT" 'BEGIN { exit !(g < m) }' ||
  { echo "FAIL: RSS grew $growth % (limit < $MAX_GROWTH_PCT %)" >&2; status=1; }
((status == 0)) && echo "PASS"
exit "$status"
