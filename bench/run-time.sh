#!/usr/bin/env bash
# The full run's wall time (issue 38), release binaries, level full, one run per line:
#   embedded                      `--embedded` (the reference in-process, its control API on)
#   local, control API            a separate reference process; first run, then a rerun
#   rtt 20 ms / 100 ms            the same through mock-server's latency_proxy (control API too)
#   local, no control API         a fresh process: first run, then two reruns right after it
# Each line: wall time, exit code, verdict, "waited for rate windows", the slowest scenarios
# (from the cucumber JSON). Usage: bench/run-time.sh
# (env: CASES="embedded local rtt20 rtt100 nocontrol" PORT=18290 SUITE=… MOCK=… PROXY=…
#  NO_BUILD=1 to use the binaries as they are, SLOWEST=3)
set -euo pipefail
cd "$(dirname "$0")/.."
CASES=${CASES:-"embedded local rtt20 rtt100 nocontrol"}
PORT=${PORT:-18290} PROXY_PORT=$((${PORT:-18290} + 1)) CAPTURE_PORT=$((${PORT:-18290} + 2))
SUITE=${SUITE:-target/release/chataigne-conformance}
MOCK=${MOCK:-target/release/chataigne-mock}
PROXY=${PROXY:-target/release/examples/latency_proxy}
SLOWEST=${SLOWEST:-3}
[[ ${NO_BUILD:-} == 1 ]] || cargo build --release -q -p mock-server --bins --example latency_proxy -p chataigne-conformance
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT

# The slowest scenarios of a cucumber JSON report: "name N.N s", slowest first.
slowest() {
  jq -r --argjson n "$SLOWEST" '
    [.[] | .elements[]? | {name, s: ([.steps[]?.result.duration // 0] | add / 1e9)}]
    | sort_by(-.s) | .[:$n] | map("\(.name) \(.s * 10 | round / 10) s") | join("; ")' "$1" 2>/dev/null || echo "(no cucumber JSON)"
}

# run LABEL ARGS…: one timed run of the suite; prints its line.
run() {
  local label=$1; shift
  local t0 code ms
  t0=$(date +%s%N)
  set +e
  "$SUITE" "$@" --level full --cucumber-json "$dir/cucumber.json" > "$dir/out.txt" 2> "$dir/err.txt"
  code=$?
  set -e
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%-34s %6.1f s  exit %s  %s  %s\n    slowest: %s\n' "$label" "$(echo "$ms / 1000" | bc -l)" "$code" \
    "$(grep -m1 -E '^(NOT )?CERTIFIED' "$dir/out.txt" || echo '(no verdict)')" \
    "$(grep -m1 'waited for rate windows' "$dir/out.txt" || echo '')" "$(slowest "$dir/cucumber.json")"
  # A run that did not pass keeps its console output, under target/ (never in the work tree).
  [[ $code == 0 ]] || cp "$dir/out.txt" "target/run-time-${label// /-}.txt"
}

# serve RTT CONTROL: the reference as a process (with its control API when CONTROL=1), behind
# the latency proxy when RTT > 0; writes the matching profile to $dir/profile.toml.
serve() {
  local rtt=$1 control=$2 target=$PORT
  [[ $rtt == 0 ]] || target=$PROXY_PORT
  local flags=()
  [[ $control == 1 ]] && flags=(--control-api --control-secret bench-secret)
  "$MOCK" --listen "127.0.0.1:$PORT" --public-url "http://127.0.0.1:$target" "${flags[@]}" \
    --log-format json --log-file "$dir/server.log" \
    --sentry-dsn "http://chataigne@127.0.0.1:$CAPTURE_PORT/1" & mock=$!
  if [[ $rtt != 0 ]]; then
    "$PROXY" "127.0.0.1:$PROXY_PORT" "127.0.0.1:$PORT" $((rtt / 2)) 2>/dev/null & proxy=$!
  fi
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/.well-known/oauth-protected-resource" && break; sleep 0.05; done
  sed -e "s/18080/$target/g" -e "s#reports/reference-server.log#$dir/server.log#" \
    -e 's/ci-control-secret/bench-secret/' -e "s/19412/$CAPTURE_PORT/g" ci/profile.reference.toml > "$dir/profile.toml"
  # Without the control API: no [control] section (and the scenarios that need it skipped).
  [[ $control == 1 ]] || sed -i '/^\[control\]/,$d' "$dir/profile.toml"
}

stop() {
  kill "$mock" ${proxy:-} 2>/dev/null || true
  wait 2>/dev/null || true
  unset proxy
}

for case in $CASES; do
  case $case in
    embedded) run "embedded" --embedded ;;
    local) serve 0 1; run "local, control API, first run" --profile "$dir/profile.toml"
      run "local, control API, rerun" --profile "$dir/profile.toml"; stop ;;
    rtt20) serve 20 1; run "rtt 20 ms, control API" --profile "$dir/profile.toml"; stop ;;
    rtt100) serve 100 1; run "rtt 100 ms, control API" --profile "$dir/profile.toml"; stop ;;
    nocontrol) serve 0 0; run "local, no control API, first run" --profile "$dir/profile.toml"
      run "local, no control API, rerun" --profile "$dir/profile.toml"
      run "local, no control API, rerun 2" --profile "$dir/profile.toml"; stop ;;
    *) echo "unknown case $case" >&2; exit 2 ;;
  esac
done
