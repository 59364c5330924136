#!/usr/bin/env bash
# How many of the reference server's deliberate defects `fuzz` finds on its own, for
# docs/FUZZ.md: the clean server first (the baseline: it must run and have 0 findings, else this
# script fails), then `fuzz --embedded --defect D --seed SEED --budget BUDGET` for every defect
# `chataigne-mock defects` lists, JOBS at a time. A defect is found when the run has a finding,
# found under its own clause when a finding names the clause the defect list gives it. For each
# defect found under its own clause: the calls of its smallest such finding (<= 5 is the goal)
# and whether `replay` of its transcript reproduces it (exit 1) against the same defect.
# Prints one line per defect, then the totals.
# Usage: bench/fuzz-kill.sh   (env: SEED=7 BUDGET=1500calls JOBS=2 NO_BUILD=1 OUT=DIR
#        BIN=target/debug/chataigne-conformance MOCK_BIN=target/debug/chataigne-mock)
set -euo pipefail
cd "$(dirname "$0")/.."
SEED=${SEED:-7}
BUDGET=${BUDGET:-1500calls}
JOBS=${JOBS:-2}
BIN=${BIN:-target/debug/chataigne-conformance}
MOCK_BIN=${MOCK_BIN:-target/debug/chataigne-mock}
[[ ${NO_BUILD:-} == 1 ]] || cargo build -q -p chataigne-conformance -p mock-server
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"

# The baseline: a clean server with any finding makes every other figure meaningless.
rc=0
"$BIN" fuzz --embedded --seed "$SEED" --budget "$BUDGET" --level full \
  --report-json "$OUT/clean.json" >"$OUT/clean.log" 2>&1 || rc=$?
if [[ $rc != 0 || ! -s $OUT/clean.json ]]; then
  echo "baseline failed: the clean server's run exited $rc (see $OUT/clean.log)" >&2
  exit 1
fi
clean=$(jq '.findings | length' "$OUT/clean.json")
if [[ $clean != 0 ]]; then
  echo "baseline failed: $clean finding(s) on the clean server (see $OUT/clean.log)" >&2
  exit 1
fi
calls=$(jq '.calls' "$OUT/clean.json")
ms=$(jq '.elapsed_ms' "$OUT/clean.json")
echo "baseline: clean server, seed $SEED, $calls calls in $ms ms, 0 findings"

# One defect: its run, then the replay of its smallest finding under its own clause.
one() {
  local defect=$1 clause=$2 dir="$OUT/$1" rc=0
  mkdir -p "$dir"
  "$BIN" fuzz --embedded --defect "$defect" --seed "$SEED" --budget "$BUDGET" --level full \
    --report-json "$dir/report.json" --out "$dir/findings" >"$dir/log" 2>&1 || rc=$?
  if [[ $rc == 2 || ! -s $dir/report.json ]]; then
    printf '%s\t%s\terror\t-\t-\t-\t-\n' "$defect" "$clause"
    return
  fi
  local total own size file replayed=-
  total=$(jq '.findings | length' "$dir/report.json")
  own=$(jq --arg c "$clause" '[.findings[] | select(.clause == $c)] | length' "$dir/report.json")
  # Calls of a finding: the steps before it and itself.
  size=$(jq -r --arg c "$clause" '[.findings[] | select(.clause == $c) | (.steps_before | length) + 1] | min // "-"' "$dir/report.json")
  if [[ $own -gt 0 ]]; then
    # The transcript of the smallest own-clause finding (files are numbered as the report's findings).
    local index
    index=$(jq --arg c "$clause" '[.findings | to_entries[] | select(.value.clause == $c) | {i: .key, n: ((.value.steps_before | length) + 1)}] | min_by(.n) | .i + 1' "$dir/report.json")
    file=$(printf '%s/findings/finding-%02d-%s.json' "$dir" "$index" "$clause")
    replayed=no
    if [[ -f $file ]]; then
      local r=0
      "$BIN" replay "$file" --embedded --defect "$defect" >"$dir/replay.log" 2>&1 || r=$?
      [[ $r == 1 ]] && replayed=yes
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$defect" "$clause" "$total" "$own" "$size" "$replayed"
}
export -f one
export BIN SEED BUDGET OUT

"$MOCK_BIN" defects | awk '{print $1, $2}' >"$OUT/defects"
n=$(wc -l <"$OUT/defects")
[[ $n -gt 0 ]] || { echo "chataigne-mock defects listed none" >&2; exit 1; }
xargs -P "$JOBS" -L1 bash -c 'one "$0" "$1"' <"$OUT/defects" | sort >"$OUT/results.tsv"

printf 'defect\tclause\tfindings\town-clause\tcalls\treplayed\n'
cat "$OUT/results.tsv"
awk -F'\t' -v n="$n" '
  $3 == "error" { errors++; next }
  $3 > 0 { found++ }
  $4 > 0 { own++; if ($5 <= 5) small++; if ($6 == "yes") replayed++ }
  END {
    printf "\nfound: %d/%d; under its own clause: %d/%d; of those, shrunk to <= 5 calls: %d/%d, replayed: %d/%d; errors: %d\n",
      found, n, own, n, small, own, replayed, own, errors
  }' "$OUT/results.tsv"
echo "runs in $OUT"
