#!/usr/bin/env bash
# Side by side with `chataigne-conformance fuzz` (issue 30): what mcp-fuzzer (PyPI, pinned) finds
# on the reference server's built-in defects. Each defect gets a fresh `chataigne-mock --defect D`
# and one mcp-fuzzer run (tools and protocol, both phases, a fixed seed, the owner's token).
# mcp-fuzzer judges no contract: on the healthy server it already reports "accepted_malformed"
# findings (valid inputs it took for attacks). So a defect counts as found when the run differs
# from the healthy server's in which kinds of outcome a tool had (a crash, an anomaly, an
# exception, malformed input accepted) or which (category, kind, target) findings came; counts
# are left out, they vary between two runs of the same seed. The healthy baseline runs three
# times first; a defect is found when its run shows what none of them did. A baseline run
# without a result stops the bench (exit 1).
# Usage: bench/mcp-fuzzer.sh [DEFECT...]
#   env: JOBS=2, PORT=19600, RUNS=5, SEED=7, OUT=target/mcp-fuzzer, MOCK=target/debug/chataigne-mock
# Writes $OUT/results.tsv (defect, clause, found, why) and prints found / total.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2} PORT=${PORT:-19600} RUNS=${RUNS:-5} SEED=${SEED:-7} OUT=${OUT:-target/mcp-fuzzer}
MOCK=${MOCK:-target/debug/chataigne-mock}
VERSION=0.7.0
venv=target/mcp-fuzzer-venv
test -x "$MOCK" || { echo "no reference server at $MOCK (cargo build -p mock-server)" >&2; exit 2; }
if ! "$venv/bin/pip" show mcp-fuzzer 2>/dev/null | grep -qx "Version: $VERSION"; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp-fuzzer==$VERSION"
fi
rm -rf "$OUT" && mkdir -p "$OUT"

# One run against a fresh server on port $2 with defect $1 ("none": healthy); the signature of
# what it found goes to $OUT/$3.sig.
fuzz_one() {
  local defect=$1 port=$2 name=$3 pid args=()
  [ "$defect" = none ] || args=(--defect "$defect")
  "$MOCK" --listen "127.0.0.1:$port" "${args[@]}" >"$OUT/$name.server.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/mcp" && break; sleep 0.1; done
  # The token is the reference server's development token for the owner, not a secret.
  (cd "$OUT" && MCP_API_KEY=dev-token-owner timeout 300 "$OLDPWD/$venv/bin/mcp-fuzzer" --mode all \
    --protocol http --endpoint "http://127.0.0.1:$port/mcp" --auth-env --runs "$RUNS" \
    --phase both --seed "$SEED" --output-dir "$name" >"$name.out" 2>&1) || true
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  python3 - "$OUT/$name" >"$OUT/$name.sig" <<'PY'
import json, sys
d = sys.argv[1]
try:
    summary = json.load(open(f"{d}/run_summary.json"))
    findings = json.load(open(f"{d}/findings.json"))["findings"]
except (OSError, ValueError, KeyError) as e:
    print(f"NO-RESULT {e}")
    sys.exit(0)
# Which kinds of outcome each tool had, and which findings on which target: not how many, which
# vary from run to run of the same seed (measured: the healthy server twice).
keys = {(f.get("category"), f.get("kind"), f.get("target")) for f in findings}
for name, tool in summary.get("tools", {}).get("by_name", {}).items():
    for outcome, n in tool.get("outcomes", {}).items():
        if n:
            keys.add(("outcome", outcome, name))
for key in sorted(keys, key=str):
    print(*key)
PY
}

# The healthy baseline, three times: mcp-fuzzer is not deterministic under a seed (which
# protocol requests it flags varies), so what the healthy server can show is the union of the
# three. Each must have produced a result, or nothing is measured.
for n in 1 2 3; do
  fuzz_one none "$PORT" "baseline-$n"
  if grep -q '^NO-RESULT' "$OUT/baseline-$n.sig"; then
    echo "healthy baseline run $n gave no result (see $OUT/baseline-$n.out)" >&2
    exit 1
  fi
done
sort -u "$OUT"/baseline-*.sig >"$OUT/baseline.sig"

if [ $# -gt 0 ]; then defects=("$@"); else mapfile -t defects < <("$MOCK" defects 2>/dev/null | awk '{print $1}'); fi
clause_of() { "$MOCK" defects 2>/dev/null | awk -v d="$1" '$1 == d {print $2}'; }

lane() {
  local lane=$1 i=0 d port
  port=$((PORT + 1 + lane))
  for d in "${defects[@]}"; do
    if [ $((i % JOBS)) = "$lane" ]; then
      fuzz_one "$d" "$port" "$d"
      if grep -q '^NO-RESULT' "$OUT/$d.sig"; then
        why="no result"; found=no
      else
        # What this run showed that no healthy run did.
        new=$(sort -u "$OUT/$d.sig" | comm -13 "$OUT/baseline.sig" - | head -3 | tr '\n' ';')
        if [ -z "$new" ]; then why="nothing the healthy server did not show"; found=no; else why=$new; found=yes; fi
      fi
      printf '%s\t%s\t%s\t%s\n' "$d" "$(clause_of "$d")" "$found" "$why" >"$OUT/$d.row"
    fi
    i=$((i + 1))
  done
}
pids=()
for lane in $(seq 0 $((JOBS - 1))); do lane "$lane" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid"; done
for d in "${defects[@]}"; do cat "$OUT/$d.row"; done >"$OUT/results.tsv"
found=$(awk -F'\t' '$3 == "yes"' "$OUT/results.tsv" | wc -l)
echo "mcp-fuzzer $VERSION, seed $SEED, $RUNS runs per tool: $found of ${#defects[@]} defects differ from the healthy server ($OUT/results.tsv)"
