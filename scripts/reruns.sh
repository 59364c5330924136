#!/usr/bin/env bash
# Re-runnable certification, as a third party runs it: one reference server seeded once, no
# control API, RUNS full runs of the suite back to back at the seed level (each may wait about a
# minute for the rate windows the previous run filled). Prints each run's time and verdict.
# VARIANTS makes the server another allowed reading of the seed (docs/VARIANTS.md), e.g.
#   VARIANTS="lifecycle-skip-forward error-extra-fields access-before-schema calendar-minute-windows"
# Usage: scripts/reruns.sh   (env: RUNS=20 PORT=18290 SUITE=… MOCK=… VARIANTS=…)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20} PORT=${PORT:-18290}
SUITE=${SUITE:-target/debug/chataigne-conformance}
MOCK=${MOCK:-target/debug/chataigne-mock}
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
"$MOCK" --listen "127.0.0.1:$PORT" --log-format json --log-file "$dir/server.log" \
  $(for v in ${VARIANTS:-}; do printf -- '--variant %s ' "$v"; done) &
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/.well-known/oauth-protected-resource" && break; sleep 0.05; done
# Someone sends a message by hand first, as the README's curl example does.
curl -s -o /dev/null "http://127.0.0.1:$PORT/mcp" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -H 'Authorization: Bearer dev-token-owner' \
  -d '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send_message","arguments":{"restaurant_id":"rst_central","conversation_id":"cnv_long","text":"Your table is ready","idempotency_key":"key-0001-abcd"}}}'
sed -e "s/18080/$PORT/g" -e "s#reports/reference-server.log#$dir/server.log#" -e '/^\[control\]/,$d' \
  ci/profile.reference.toml > "$dir/profile.toml"
failed=0
for run in $(seq "$RUNS"); do
  t0=$(date +%s)
  set +e
  "$SUITE" --profile "$dir/profile.toml" > "$dir/out.txt" 2> "$dir/err.txt"
  code=$?
  set -e
  verdict=$(grep -E '^(NOT )?CERTIFIED' "$dir/out.txt" || tail -n 1 "$dir/err.txt")
  echo "run $run: exit $code in $(( $(date +%s) - t0 )) s: $verdict"
  [[ $code == 0 ]] || { failed=$((failed + 1)); cp "$dir/out.txt" "reruns-failed-$run.txt"; }
done
grep -h 'runs left' "$dir/err.txt" || true
exit $(( failed > 0 ))
