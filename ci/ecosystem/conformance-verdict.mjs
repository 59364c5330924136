// Judges one run of the official MCP conformance suite (`conformance server --requirements REV
// -o DIR`, 0.2.x) against our per-check baseline, ci/ecosystem/expected-failures/<REV>.yaml.
//
// Each scenario's checks.json holds checks with a status: SUCCESS; FAILURE, ERROR, or WARNING (a
// SHOULD not met: the suite's own baseline counts it as failed, and so do we); INFO or SKIPPED (no
// verdict). A scenario the revision scores, or one we require, is
//   PASS   at least one SUCCESS and no FAILURE, ERROR or WARNING;
//   XFAIL  every FAILURE/ERROR/WARNING check is a baseline entry whose expected text its message
//          contains; when nothing succeeded, at least one entry (on any of its checks) says why;
//   FAIL   otherwise, in particular:
//          - a failing check without its entry, or failing with another message than the entry's;
//          - a scenario that checked nothing: checks.json empty, unreadable or missing, or no
//            SUCCESS check at all (only INFO/SKIPPED/WARNING) with no entry saying why;
//          - a required scenario (REQUIRED_CSV) with any baseline entry: a required scenario is
//            never an expected failure, so the entry fails it (and the run);
//          - a scored or required scenario that did not run.
// An entry that matches nothing in this run is stale and fails the run, as does a malformed line
// or one the suite's own YAML parser reads differently. Scenarios the requirement set runs without
// scoring them (extensions, pending ones) are shown as NOTE with their counts, judged only when
// required.
//
// Baseline lines (YAML that the suite's --expected-failures reads too; the comment is ours):
//   server:
//     - scenario:check-id # "text the check's message contains" why the server fails it
//
// Output: one line per scenario (`PASS|XFAIL|FAIL|NOTE  scenario [required|not scored: why]  detail`),
// then `others: PASS|FAIL  detail` (the judged scenarios that are not required, and the baseline
// itself, as one check) and `conformance REV: ...` (counts). Exit 0 when nothing is wrong, else 1.
//
// usage: node conformance-verdict.mjs RESULTS_DIR BASELINE_FILE REQUIREMENTS_YAML REQUIRED_CSV
//   REQUIREMENTS_YAML: the suite's own requirements/<REV>.yaml (which scenarios are scored), read
//   with the `yaml` package the suite depends on, from $ECOSYSTEM_DIR (default <repo>/.ecosystem).
import { createRequire } from 'node:module';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [resultsDir, baselineFile, requirementsFile, requiredCsv = ''] = process.argv.slice(2);
if (!resultsDir || !baselineFile || !requirementsFile) {
  console.error('usage: node conformance-verdict.mjs RESULTS_DIR BASELINE_FILE REQUIREMENTS_YAML REQUIRED_CSV');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const ecosystem = resolve(process.env.ECOSYSTEM_DIR ?? join(here, '..', '..', '.ecosystem'));
const YAML = createRequire(join(ecosystem, 'node_modules/@modelcontextprotocol/conformance/package.json'))('yaml');

const required = new Set(requiredCsv.split(',').map((s) => s.trim()).filter(Boolean));
const requirements = YAML.parse(readFileSync(requirementsFile, 'utf8'));
const revision = basename(requirementsFile).replace(/\.ya?ml$/, '');
const scored = new Set(requirements.server ?? []);
const notScored = new Map(
  (requirements.not_scored ?? []).filter((e) => e.leg === 'server').map((e) => [e.scenario, e.reason]),
);
const problems = [];
const fail = (line) => {
  problems.push(line);
  console.log(line);
};

// --- The baseline: every entry one line, per check, with its expected text and its reason.
const entries = new Map(); // "scenario:check" -> { scenario, check, text, reason, used }
const entryLine = /^\s*-\s+([a-z0-9-]+):([A-Za-z0-9_.-]+)\s+#\s+"([^"]+)"\s+(\S.*)$/;
let inServer = false;
for (const [i, raw] of readFileSync(baselineFile, 'utf8').split('\n').entries()) {
  const line = raw.replace(/\s+$/, '');
  if (!line.trim() || line.trim().startsWith('#')) continue;
  if (/^[a-z_]+:\s*(\[\])?$/.test(line)) {
    inServer = line.startsWith('server:');
    if (!inServer) fail(`FAIL  baseline:${i + 1}  only a server: list belongs here: ${line}`);
    continue;
  }
  const m = entryLine.exec(line);
  if (!inServer || !m) {
    fail(`FAIL  baseline:${i + 1}  needs '- scenario:check-id # "expected text" reason' under server: -- ${line.trim()}`);
    continue;
  }
  const [, scenario, check, text, reason] = m;
  const key = `${scenario}:${check}`;
  if (entries.has(key)) fail(`FAIL  baseline:${i + 1}  ${key} is listed twice`);
  entries.set(key, { scenario, check, text, reason, used: false });
}
// What the suite's parser reads must be exactly what we read (nothing hidden from either).
const parsed = YAML.parse(readFileSync(baselineFile, 'utf8')) ?? {};
const theirs = new Set((parsed.server ?? []).map(String));
if (theirs.size !== entries.size || [...entries.keys()].some((k) => !theirs.has(k))) {
  fail(`FAIL  baseline  the suite reads ${theirs.size} entries, this script ${entries.size}: a line is not in the one-line form`);
}
for (const [key, entry] of entries) {
  if (required.has(entry.scenario)) {
    fail(`FAIL  ${entry.scenario} [required]  listed in the baseline (${key}): a required scenario can never be an expected failure`);
    entry.used = true; // reported once, here
  }
}

// --- The results: folders `server-<scenario>-<ISO timestamp with dashes>`.
const stamp = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
const results = new Map(); // scenario -> checks array, or an Error saying why there are none
for (const dir of existsSync(resultsDir) ? readdirSync(resultsDir).sort() : []) {
  if (!dir.startsWith('server-') || !stamp.test(dir)) continue;
  const scenario = dir.slice('server-'.length).replace(stamp, '');
  const file = join(resultsDir, dir, 'checks.json');
  try {
    const checks = JSON.parse(readFileSync(file, 'utf8'));
    results.set(scenario, Array.isArray(checks) ? checks : new Error('checks.json is not an array'));
  } catch (error) {
    results.set(scenario, new Error(existsSync(file) ? `checks.json unreadable: ${error.message}` : 'no checks.json'));
  }
}
if (results.size === 0) fail(`FAIL  conformance  no scenario results in ${resultsDir}`);

const why = (c) => String(c.errorMessage || c.details?.message || c.description || c.id);
const bad = (c) => c.status === 'FAILURE' || c.status === 'ERROR' || c.status === 'WARNING';
const counts = { pass: 0, xfail: 0, fail: 0, notScored: 0 };
const others = { pass: 0, xfail: 0, fail: 0 };
for (const [scenario, checks] of [...results].sort()) {
  const isRequired = required.has(scenario);
  const isScored = scored.has(scenario);
  const tag = isRequired ? ' [required]' : isScored ? '' : ` [not scored: ${notScored.get(scenario) ?? 'not in the set'}]`;
  if (!isRequired && !isScored) {
    // Run for visibility by the suite, outside the revision's conformance: shown, not judged.
    counts.notScored += 1;
    const n = (s) => (Array.isArray(checks) ? checks.filter((c) => c.status === s).length : 0);
    const detail = Array.isArray(checks) ? `${n('SUCCESS')} success, ${checks.filter(bad).length} failing` : checks.message;
    console.log(`NOTE  ${scenario}${tag}  ${detail}`);
    continue;
  }
  const verdict = (status, detail) => {
    const key = status === 'PASS' ? 'pass' : status === 'XFAIL' ? 'xfail' : 'fail';
    counts[key] += 1;
    if (!isRequired) others[key] += 1;
    const line = `${status.padEnd(5)} ${scenario}${tag}  ${detail}`;
    if (status === 'FAIL') problems.push(line);
    console.log(line);
  };
  if (!Array.isArray(checks)) {
    verdict('FAIL', `checked nothing: ${checks.message}`);
    continue;
  }
  if (checks.length === 0) {
    verdict('FAIL', 'checked nothing: checks.json is empty');
    continue;
  }
  const succeeded = checks.some((c) => c.status === 'SUCCESS');
  const failing = checks.filter(bad);
  if (succeeded && failing.length === 0) {
    verdict('PASS', `${checks.filter((c) => c.status === 'SUCCESS').length} SUCCESS, none failing`);
    continue;
  }
  // Every failing check needs its entry; when nothing succeeded, at least one entry must say why
  // (on a failing check, or on the INFO/SKIPPED check in which the suite explains itself).
  const explained = [];
  const unexplained = [];
  for (const c of checks) {
    const entry = isRequired ? undefined : entries.get(`${scenario}:${c.id}`);
    if (entry && why(c).includes(entry.text)) {
      entry.used = true;
      explained.push(`${c.id}: ${entry.reason}`);
    } else if (entry && bad(c)) {
      entry.used = true; // reported here, not again as stale
      unexplained.push(`${c.id} ${c.status}: ${why(c)} (the baseline expects "${entry.text}")`);
    } else if (bad(c)) {
      unexplained.push(`${c.id} ${c.status}: ${why(c)}`);
    }
  }
  const reasons = [...new Set(explained)].join('; ');
  if (!succeeded && explained.length === 0) {
    const seen = checks.map((c) => `${c.id} ${c.status}`).join(', ');
    verdict('FAIL', `checked nothing (no SUCCESS check: ${seen})${unexplained.length ? ': ' + unexplained.join('; ') : ''}`);
  } else if (unexplained.length > 0) {
    verdict('FAIL', unexplained.join('; '));
  } else {
    verdict('XFAIL', (succeeded ? '' : 'checked nothing, as listed: ') + reasons);
  }
}
for (const scenario of new Set([...scored, ...required])) {
  if (!results.has(scenario) && results.size > 0) {
    counts.fail += 1;
    if (!required.has(scenario)) others.fail += 1;
    fail(`FAIL  ${scenario}${required.has(scenario) ? ' [required]' : ''}  was not run (renamed or dropped by this suite version?)`);
  }
}
for (const [key, entry] of entries) {
  if (!entry.used) {
    fail(`FAIL  baseline ${key}  matches nothing that failed in this run (stale entry: remove it)`);
  }
}
const baselineBad = problems.some((p) => p.includes(' baseline'));
const othersBad = others.fail > 0 || results.size === 0 || baselineBad;
console.log(
  `others: ${othersBad ? 'FAIL' : 'PASS'}  ${others.pass} pass, ${others.xfail} fail only as listed in the baseline, ` +
    `${others.fail} unexpected${baselineBad ? ', and the baseline has a bad or stale entry' : ''}`,
);
console.log(
  `conformance ${revision}: ${counts.pass + counts.xfail + counts.fail} judged (${counts.pass} pass, ` +
    `${counts.xfail} fail only as listed, ${counts.fail} unexpected), ${counts.notScored} not scored (shown); ` +
    `baseline ${entries.size} checks`,
);
process.exit(problems.length === 0 ? 0 : 1);
