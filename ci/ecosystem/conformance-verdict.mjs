// Judges a run of the official MCP conformance suite (`conformance server -o DIR`) against
// ci/ecosystem/expected-failures.txt. A scenario fails when one of its checks is FAILURE.
//   failed, not listed            -> FAIL (regression)
//   failed, listed                -> XFAIL (known; the reason is printed)
//   passed, listed                -> FAIL (stale entry: remove it)
//   passed, not listed            -> PASS (warnings, if any, are printed)
//   required scenario not run     -> FAIL; listed scenario not run -> FAIL (stale entry)
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

// expected-failures.txt: `scenario # reason`, one per line; blank lines and `#` lines ignored.
const expected = new Map();
let badLines = 0;
for (const [i, raw] of readFileSync(expectedFile, 'utf8').split('\n').entries()) {
  const line = raw.trim();
  if (!line || line.startsWith('#')) continue;
  const hash = line.indexOf('#');
  const name = (hash < 0 ? line : line.slice(0, hash)).trim();
  const reason = hash < 0 ? '' : line.slice(hash + 1).trim();
  if (!/^[a-z0-9-]+$/.test(name) || !reason) {
    console.log(`FAIL  expected-failures.txt:${i + 1}  needs "scenario # reason": ${line}`);
    badLines += 1;
    continue;
  }
  expected.set(name, reason);
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

let problems = badLines;
const counts = { pass: 0, xfail: 0, fail: 0 };
if (results.size === 0) {
  console.log(`FAIL  conformance  no scenario results in ${resultsDir}`);
  problems += 1;
}
for (const [scenario, checks] of [...results].sort()) {
  const failures = checks.filter((c) => c.status === 'FAILURE' || c.status === 'ERROR');
  const warnings = checks.filter((c) => c.status === 'WARNING');
  const tag = required.has(scenario) ? ' [required]' : '';
  const why = (c) => c.errorMessage || c.details?.message || c.description || c.id;
  if (failures.length > 0 && expected.has(scenario)) {
    counts.xfail += 1;
    console.log(`XFAIL ${scenario}${tag}  ${why(failures[0])} -- listed: ${expected.get(scenario)}`);
  } else if (failures.length > 0) {
    counts.fail += 1;
    problems += 1;
    console.log(`FAIL  ${scenario}${tag}  ${failures.map(why).join('; ')}`);
  } else if (expected.has(scenario)) {
    counts.fail += 1;
    problems += 1;
    console.log(`FAIL  ${scenario}${tag}  passes but is listed in expected-failures.txt (stale entry: remove it)`);
  } else {
    counts.pass += 1;
    const note = warnings.length ? `  warning: ${warnings.map(why).join('; ')}` : '';
    console.log(`PASS  ${scenario}${tag}${note}`);
  }
}
for (const scenario of required) {
  if (!results.has(scenario)) {
    problems += 1;
    console.log(`FAIL  ${scenario} [required]  was not run (renamed or dropped by this suite version?)`);
  }
}
for (const scenario of expected.keys()) {
  if (!results.has(scenario) && results.size > 0) {
    problems += 1;
    console.log(`FAIL  ${scenario}  listed in expected-failures.txt but not run (stale entry)`);
  }
}
console.log(
  `conformance scenarios: ${counts.pass} pass, ${counts.xfail} expected failures, ${counts.fail} unexpected`,
);
process.exit(problems === 0 ? 0 : 1);
