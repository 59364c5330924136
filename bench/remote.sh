#!/usr/bin/env bash
# The full suite against the reference server far away: through mock-server's latency_proxy
# example (N ms each way), for each round trip in RTTS; prints wall time and exit code per run.
# The server runs with its control API, reached through the proxy too (as a staging server's
# would be). Usage: bench/remote.sh   (env: RTTS="0 20 100" PORT=18190 SUITE=… MOCK=… ARGS=…)
set -euo pipefail
cd "$(dirname "$0")/.."
RTTS=${RTTS:-"0 20 100"} PORT=${PORT:-18190} PROXY_PORT=$((PORT + 1)) CAPTURE_PORT=$((PORT + 2))
# Release builds: the figures are about waiting on the network, not about a debug server's CPU.
SUITE=${SUITE:-target/release/chataigne-conformance}
MOCK=${MOCK:-target/release/chataigne-mock}
PROXY=${PROXY:-target/release/examples/latency_proxy}
[[ ${NO_BUILD:-} == 1 ]] || cargo build --release -q -p mock-server --bins --example latency_proxy -p chataigne-conformance
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
for rtt in $RTTS; do
  target=$PORT
  [[ $rtt == 0 ]] || target=$PROXY_PORT
  # The server's public URL is where clients reach it: the proxy when there is one.
  # The profile has the suite capture error reports (SEC-1, IDEM-8) on CAPTURE_PORT, next to
  # the runner: the server reports there directly.
  "$MOCK" --listen "127.0.0.1:$PORT" --public-url "http://127.0.0.1:$target" --control-api \
    --control-secret bench-secret --log-format json --log-file "$dir/server.log" \
    --sentry-dsn "http://chataigne@127.0.0.1:$CAPTURE_PORT/1" & mock=$!
  if [[ $rtt != 0 ]]; then
    "$PROXY" "127.0.0.1:$PROXY_PORT" "127.0.0.1:$PORT" $((rtt / 2)) 2>/dev/null & proxy=$!
  fi
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/.well-known/oauth-protected-resource" && break; sleep 0.05; done
  sed -e "s/18080/$target/g" -e "s#reports/reference-server.log#$dir/server.log#" \
    -e 's/ci-control-secret/bench-secret/' -e "s/19412/$CAPTURE_PORT/g" ci/profile.reference.toml > "$dir/profile.toml"
  t0=$(date +%s%N)
  set +e
  "$SUITE" --profile "$dir/profile.toml" --level full ${ARGS:-} > "$dir/out.txt" 2>&1
  code=$?
  set -e
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "rtt ${rtt} ms: ${ms} ms, exit ${code}: $(tail -n 20 "$dir/out.txt" | grep -E '^(NOT )?CERTIFIED' || echo '(no verdict)')"
  [[ $code == 0 ]] || cp "$dir/out.txt" "remote-rtt-$rtt.txt"
  kill "$mock" ${proxy:-} 2>/dev/null || true; wait 2>/dev/null || true; unset proxy
done
