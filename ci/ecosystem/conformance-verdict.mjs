// Judges a run of the official MCP conformance suite (`conformance server -o DIR`) against
// ci/ecosystem/expected-failures.txt. A scenario fails when one of its checks is FAILURE or ERROR.
//   failed, not listed                          -> FAIL (regression)
//   failed, listed, every failure's message
//     contains the listed expected error         -> XFAIL (known; the reason is printed)
//   failed, listed, another error                -> FAIL (fails for another reason than the listed one)
//   passed, listed                               -> FAIL (stale entry: remove it)
//   passed, not listed                           -> PASS (warnings, if any, are printed)
//   required scenario not run                    -> FAIL; listed scenario not run -> FAIL (stale entry)
//
// Output: one line per scenario (`PASS|FAIL|XFAIL  scenario [required]  detail`), then
//   `others: PASS|FAIL  detail`  -- the verdict on every scenario that is not required, as one check
//   `conformance scenarios: ...` -- counts
// Exit 0 when nothing is wrong, 1 otherwise.
//
// usage: node conformance-verdict.mjs RESULTS_DIR EXPECTED_FAILURES_FILE REQUIRED_CSV
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const [resultsDir, expectedFile, requiredCsv = ''] = process.argv.slice(2);
if (!resultsDir || !expectedFile) {
  console.error('usage: node conformance-verdict.mjs RESULTS_DIR EXPECTED_FAILURES_FILE REQUIRED_CSV');
  process.exit(2);
}
const required = new Set(requiredCsv.split(',').map((s) => s.trim()).filter(Boolean));

// expected-failures.txt: `scenario "expected error" # reason`, one per line; blank lines and `#`
// lines ignored. The expected error is text that every failing check's message must contain
// (the JSON-RPC code and message, e.g. "MCP error -32602: unknown tool").
const expected = new Map();
const problems = [];
const entry = /^([a-z0-9-]+)\s+"([^"]+)"\s+#\s*(\S.*)$/;
for (const [i, raw] of readFileSync(expectedFile, 'utf8').split('\n').entries()) {
  const line = raw.trim();
  if (!line || line.startsWith('#')) continue;
  const m = entry.exec(line);
  if (!m) {
    problems.push(`expected-failures.txt:${i + 1}`);
    console.log(`FAIL  expected-failures.txt:${i + 1}  needs 'scenario "expected error" # reason': ${line}`);
    continue;
  }
  expected.set(m[1], { error: m[2], reason: m[3] });
}

// Result folders are `server-<scenario>-<ISO timestamp with dashes>`.
const results = new Map();
const stamp = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
for (const dir of existsSync(resultsDir) ? readdirSync(resultsDir).sort() : []) {
  if (!dir.startsWith('server-') || !stamp.test(dir)) continue;
  const file = join(resultsDir, dir, 'checks.json');
  if (!existsSync(file)) continue;
  results.set(dir.slice('server-'.length).replace(stamp, ''), JSON.parse(readFileSync(file, 'utf8')));
}

const counts = { pass: 0, xfail: 0, fail: 0 };
const others = { pass: 0, xfail: 0, fail: 0 };
const problem = (scenario) => {
  problems.push(scenario);
  counts.fail += 1;
  if (!required.has(scenario)) others.fail += 1;
};
if (results.size === 0) {
  problems.push('no results');
  console.log(`FAIL  conformance  no scenario results in ${resultsDir}`);
}
const why = (c) => c.errorMessage || c.details?.message || c.description || c.id;
for (const [scenario, checks] of [...results].sort()) {
  const failures = checks.filter((c) => c.status === 'FAILURE' || c.status === 'ERROR');
  const warnings = checks.filter((c) => c.status === 'WARNING');
  const tag = required.has(scenario) ? ' [required]' : '';
  const listed = expected.get(scenario);
  if (failures.length > 0 && listed) {
    const other = failures.filter((c) => !String(why(c)).includes(listed.error));
    if (other.length === 0) {
      counts.xfail += 1;
      if (!tag) others.xfail += 1;
      console.log(`XFAIL ${scenario}${tag}  ${why(failures[0])} -- listed: ${listed.reason}`);
    } else {
      problem(scenario);
      console.log(
        `FAIL  ${scenario}${tag}  fails for another reason than the listed one: ` +
          `${other.map(why).join('; ')} (expected "${listed.error}")`,
      );
    }
  } else if (failures.length > 0) {
    problem(scenario);
    console.log(`FAIL  ${scenario}${tag}  ${failures.map(why).join('; ')}`);
  } else if (listed) {
    problem(scenario);
    console.log(`FAIL  ${scenario}${tag}  passes but is listed in expected-failures.txt (stale entry: remove it)`);
  } else {
    counts.pass += 1;
    if (!tag) others.pass += 1;
    const note = warnings.length ? `  warning: ${warnings.map(why).join('; ')}` : '';
    console.log(`PASS  ${scenario}${tag}${note}`);
  }
}
for (const scenario of required) {
  if (!results.has(scenario)) {
    problems.push(scenario);
    counts.fail += 1;
    console.log(`FAIL  ${scenario} [required]  was not run (renamed or dropped by this suite version?)`);
  }
}
for (const scenario of expected.keys()) {
  if (!results.has(scenario) && results.size > 0) {
    problem(scenario);
    console.log(`FAIL  ${scenario}  listed in expected-failures.txt but not run (stale entry)`);
  }
}
// The scenarios that are not required, judged as one check: each failed with its listed error.
const othersBad = others.fail > 0 || results.size === 0 || problems.some((p) => p.startsWith('expected-failures.txt'));
console.log(
  `others: ${othersBad ? 'FAIL' : 'PASS'}  ${others.xfail} fail with their listed error, ` +
    `${others.pass} pass, ${others.fail} unexpected` + (results.size === 0 ? ' (no results)' : ''),
);
console.log(
  `conformance scenarios: ${counts.pass} pass, ${counts.xfail} expected failures, ${counts.fail} unexpected`,
);
process.exit(problems.length === 0 ? 0 : 1);
