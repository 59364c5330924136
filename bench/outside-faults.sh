#!/usr/bin/env bash
# Outside faults: the suite against a healthy reference server behind mock-server's fault_proxy
# example, once per fault of its catalogue (`fault_proxy --list`), each breaking one clause the way
# a real server could. Records whether the run failed, whether the fault's own clause failed (the
# seed verdict, or the full verdict for faults of ext clauses and reference choices) and which
# clauses failed. The healthy proxy (fault `none`) runs first and must be certified.
# With TOOL=fuzz, `chataigne-conformance fuzz` runs instead of the suite (seed SEED, budget
# BUDGET, the full level, writes fuzzed through the control API): a fault is caught when the run
# has a finding, with the right clause when a finding names the fault's clause; the healthy proxy
# must then have no finding.
# Usage: bench/outside-faults.sh [FAULT...]
#   env: JOBS=3 (lanes side by side; ports PORT, PORT+2, …), PORT=18400, OUT=target/outside-faults,
#        NO_BUILD=1, SUITE=… MOCK=… PROXY=…, TOOL=suite|fuzz, SEED=7, BUDGET=1000calls
# Writes $OUT/results.tsv (fault, clause, level, caught, right clause, clauses failed, exit, ms)
# and $OUT/table.md.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-3} PORT=${PORT:-18400} OUT=${OUT:-target/outside-faults}
SUITE=${SUITE:-target/debug/chataigne-conformance}
MOCK=${MOCK:-target/debug/chataigne-mock}
PROXY=${PROXY:-target/debug/examples/fault_proxy}
TOOL=${TOOL:-suite} SEED=${SEED:-7} BUDGET=${BUDGET:-1000calls}
case $TOOL in suite | fuzz) ;; *) echo "TOOL must be suite or fuzz, not $TOOL" >&2; exit 2 ;; esac
[[ ${NO_BUILD:-} == 1 ]] || cargo build -q -p mock-server --bins --example fault_proxy -p chataigne-conformance
rm -rf "$OUT" && mkdir -p "$OUT"
"$PROXY" --list 2>/dev/null > "$OUT/catalogue.tsv"
if [[ $# -gt 0 ]]; then
  want=$(printf '%s\n' "$@")
  awk -F'\t' -v w="$want" 'BEGIN { n = split(w, a, "\n"); for (i = 1; i <= n; i++) k[a[i]] = 1 } $1 in k' \
    "$OUT/catalogue.tsv" > "$OUT/selected.tsv"
else
  grep -v '^none' "$OUT/catalogue.tsv" > "$OUT/selected.tsv"
fi

# One fault: a fresh server on $1, the proxy on $1+1, the suite through the proxy (the control
# API directly, as a staging server's would be reached), then the verdict from the JSON report.
run_one() {
  local port=$1 name=$2 clause=$3 level=$4 dir="$OUT/$2"
  local pport=$((port + 1)) cport=$((port + 10000))
  mkdir -p "$dir"
  # The profile has the suite capture error reports (SEC-1, IDEM-8): the server reports there.
  "$MOCK" --listen "127.0.0.1:$port" --public-url "http://127.0.0.1:$pport" --control-api \
    --control-secret bench-secret --log-format json --log-file "$dir/server.log" \
    --sentry-dsn "http://chataigne@127.0.0.1:$cport/1" 2>"$dir/server.err" &
  local mock=$!
  FAULT_CONTROL_SECRET=bench-secret "$PROXY" "127.0.0.1:$pport" "127.0.0.1:$port" "$name" 2>"$dir/proxy.err" &
  local proxy=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$pport/.well-known/oauth-protected-resource" && break
    sleep 0.05
  done
  sed -e "s#127.0.0.1:18080/mcp#127.0.0.1:$pport/mcp#" -e "s/18080/$port/g" \
    -e "s#reports/reference-server.log#$dir/server.log#" -e 's/ci-control-secret/bench-secret/' \
    -e "s/19412/$cport/g" ci/profile.reference.toml > "$dir/profile.toml"
  local t0 code
  t0=$(date +%s%N)
  set +e
  if [[ $TOOL == fuzz ]]; then
    "$SUITE" fuzz --profile "$dir/profile.toml" --seed "$SEED" --budget "$BUDGET" --level full \
      --report-json "$dir/report.json" > "$dir/out.txt" 2>&1
  else
    "$SUITE" --profile "$dir/profile.toml" --level full --report-json "$dir/report.json" > "$dir/out.txt" 2>&1
  fi
  code=$?
  set -e
  kill "$mock" "$proxy" 2>/dev/null || true
  wait "$mock" "$proxy" 2>/dev/null || true
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  # The fault's level decides which verdict counts: seed clauses' `status`, or `full_status`.
  # A fuzz run's failed clauses are those its findings name (all counted: --level full).
  jq -r --arg f "$name" --arg c "$clause" --arg l "$level" --arg code "$code" --arg ms "$ms" '
    def failed: if has("findings") then [.findings[].clause] | unique
      else [.clauses[] | select((if $l == "seed" then .status else .full_status end) == "failed"
                 and ($l == "full" or .level == "seed")) | .id] end;
    (failed) as $failed
    | [$f, $c, $l, (if ($failed | length) > 0 then "yes" else "no" end),
       (if ($failed | index($c)) != null then "yes" else "no" end),
       ($failed | join(",")), $code, $ms] | @tsv' "$dir/report.json" 2>/dev/null \
    || printf '%s\t%s\t%s\tno\tno\t(no report, exit %s)\t%s\t%s\n' "$name" "$clause" "$level" "$code" "$code" "$ms"
}

started=$(date +%s)
echo "healthy proxy (fault none) first: it must be certified ($TOOL)"
healthy=$(run_one "$PORT" none - full)
# Certified means a report that says so, from a run that exited 0. A run that wrote no report
# (it crashed, or the server or proxy never started) has no failed clause either: that is no
# baseline, and every "caught" below would be measured against nothing.
if [[ ! -s $OUT/none/report.json ]]; then
  echo "the healthy proxy run wrote no report (exit $(cut -f7 <<<"$healthy")): no baseline — see $OUT/none/out.txt" >&2
  exit 1
fi
if [[ $TOOL == fuzz ]]; then
  baseline='(.findings | length) == 0'
else
  baseline='.level == "full" and .summary.certified == true'
fi
if ! jq -e "$baseline" "$OUT/none/report.json" >/dev/null || [[ $(cut -f7 <<<"$healthy") != 0 ]]; then
  what="is not certified at the full level"
  [[ $TOOL == fuzz ]] && what="has findings under fuzz"
  echo "the healthy proxy $what (exit $(cut -f7 <<<"$healthy"), failed: $(cut -f6 <<<"$healthy")) — see $OUT/none/out.txt" >&2
  exit 1
fi
echo "  certified at the full level ($(cut -f8 <<<"$healthy") ms)"

# JOBS lanes side by side, each running its share of the faults in turn on its own pair of ports
# (a fault that waits out a rate window holds up only its lane); results in catalogue order.
for lane in $(seq 0 $((JOBS - 1))); do
  awk -v n="$JOBS" -v l="$lane" '(NR - 1) % n == l' "$OUT/selected.tsv" | \
    while IFS=$'\t' read -r name clause level _; do
      run_one $((PORT + 2 + 2 * lane)) "$name" "$clause" "$level" > "$OUT/$name.tsv" < /dev/null
    done &
done
wait
: > "$OUT/results.tsv"
while IFS=$'\t' read -r name _; do cat "$OUT/$name.tsv" >> "$OUT/results.tsv"; done < "$OUT/selected.tsv"

total=$(wc -l < "$OUT/results.tsv")
caught=$(awk -F'\t' '$4 == "yes"' "$OUT/results.tsv" | wc -l)
right=$(awk -F'\t' '$5 == "yes"' "$OUT/results.tsv" | wc -l)
{
  echo "| fault | clause | level | caught | right clause | clauses failed |"
  echo "|---|---|---|---|---|---|"
  awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3,
    ($4 == "yes" ? "✅" : "❌"), ($5 == "yes" ? "✅" : "❌"), $6 }' "$OUT/results.tsv"
  echo
  echo "Caught with the right clause: $right/$total; caught at all: $caught/$total."
} > "$OUT/table.md"
cat "$OUT/table.md"
echo "($(( $(date +%s) - started )) s; reports in $OUT/<fault>/)"
