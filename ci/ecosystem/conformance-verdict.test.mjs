// The verdict's own tests (node --test; ci/ecosystem.sh runs them before the suite): each case is
// a made-up run of the conformance suite and a baseline, and the exit status and the line the
// verdict must print. Needs the `yaml` package of $ECOSYSTEM_DIR, like the verdict.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const verdict = join(dirname(fileURLToPath(import.meta.url)), 'conformance-verdict.mjs');
const ok = (id) => ({ id, status: 'SUCCESS' });
const failed = (id, errorMessage) => ({ id, status: 'FAILURE', errorMessage });
const REQUIREMENTS = `server:
  - tools-list
  - tools-call-simple-text
  - server-sse-multiple-streams
not_scored:
  - scenario: tasks-lifecycle
    leg: server
    reason: extension
`;
const FIXTURE_ENTRY = '  - tools-call-simple-text:tools-call-simple-text # "unknown tool" fixture: test_simple_text';
const HEALTHY = {
  'tools-list': [ok('tools-list')],
  'tools-call-simple-text': [ok('wire-schema-valid'), failed('tools-call-simple-text', 'Failed: unknown tool')],
  'server-sse-multiple-streams': [ok('server-accepts-multiple-post-streams')],
};

/** Runs the verdict on `results` (scenario -> checks, or a string for a raw checks.json). */
function judge(results, baselineLines, required = 'tools-list') {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-'));
  try {
    for (const [scenario, checks] of Object.entries(results)) {
      const folder = join(dir, 'results', `server-${scenario}-2026-12-03T10-00-00-000Z`);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, 'checks.json'), typeof checks === 'string' ? checks : JSON.stringify(checks));
    }
    mkdirSync(join(dir, 'results'), { recursive: true });
    writeFileSync(join(dir, 'baseline.yaml'), ['server:', ...baselineLines].join('\n') + '\n');
    writeFileSync(join(dir, '2026-07-28.yaml'), REQUIREMENTS);
    const run = spawnSync(
      process.execPath,
      [verdict, join(dir, 'results'), join(dir, 'baseline.yaml'), join(dir, '2026-07-28.yaml'), required],
      { encoding: 'utf8' },
    );
    return { status: run.status, out: run.stdout + run.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a healthy run with its fixture listed passes', () => {
  const { status, out } = judge(HEALTHY, [FIXTURE_ENTRY]);
  assert.equal(status, 0, out);
  assert.match(out, /^PASS  tools-list \[required\]/m);
  assert.match(out, /^XFAIL tools-call-simple-text {2}tools-call-simple-text: fixture/m);
});

test('a required scenario in the baseline fails the run, even when it fails as listed', () => {
  const results = { ...HEALTHY, 'tools-list': [ok('x'), failed('tools-list', 'boom')] };
  const { status, out } = judge(results, [FIXTURE_ENTRY, '  - tools-list:tools-list # "boom" tempting']);
  assert.equal(status, 1, out);
  assert.match(out, /^FAIL {2}tools-list \[required\] {2}listed in the baseline/m);
  assert.match(out, /^FAIL {2}tools-list \[required\] {2}tools-list FAILURE: boom/m);
});

test('a scenario whose checks.json is empty is a failure, not a pass', () => {
  const { status, out } = judge({ ...HEALTHY, 'server-sse-multiple-streams': [] }, [FIXTURE_ENTRY]);
  assert.equal(status, 1, out);
  assert.match(out, /^FAIL {2}server-sse-multiple-streams {2}checked nothing: checks.json is empty/m);
});

test('an empty required scenario is a failure too', () => {
  const { status, out } = judge({ ...HEALTHY, 'tools-list': [] }, [FIXTURE_ENTRY]);
  assert.equal(status, 1, out);
  assert.match(out, /^FAIL {2}tools-list \[required\] {2}checked nothing/m);
});

test('a scenario with only INFO, SKIPPED or WARNING checks checked nothing', () => {
  const vacuous = [{ id: 'session', status: 'WARNING', details: { message: 'no session ID' } }, { id: 'i', status: 'INFO' }];
  const { status, out } = judge({ ...HEALTHY, 'server-sse-multiple-streams': vacuous }, [FIXTURE_ENTRY]);
  assert.equal(status, 1, out);
  assert.match(out, /^FAIL {2}server-sse-multiple-streams {2}checked nothing \(no SUCCESS check/m);
  const listed = '  - server-sse-multiple-streams:session # "no session ID" stateless';
  const again = judge({ ...HEALTHY, 'server-sse-multiple-streams': vacuous }, [FIXTURE_ENTRY, listed]);
  assert.equal(again.status, 0, again.out);
  assert.match(again.out, /^XFAIL server-sse-multiple-streams {2}checked nothing, as listed/m);
});

test('checks.json that is not an array, or not JSON, checked nothing', () => {
  for (const raw of ['{}', 'not json']) {
    const { status, out } = judge({ ...HEALTHY, 'tools-list': raw }, [FIXTURE_ENTRY]);
    assert.equal(status, 1, `${raw}: ${out}`);
    assert.match(out, /^FAIL {2}tools-list \[required\] {2}checked nothing/m);
  }
});

test('a WARNING is a failure to list, as in the suite baseline', () => {
  const results = { ...HEALTHY, 'tools-list': [ok('a'), { id: 'b', status: 'WARNING', errorMessage: 'SHOULD' }] };
  const { status, out } = judge(results, [FIXTURE_ENTRY]);
  assert.equal(status, 1, out);
  assert.match(out, /^FAIL {2}tools-list \[required\] {2}b WARNING: SHOULD/m);
});

test('a listed check failing with another message fails', () => {
  const results = { ...HEALTHY, 'tools-call-simple-text': [ok('w'), failed('tools-call-simple-text', 'timeout')] };
  const { status, out } = judge(results, [FIXTURE_ENTRY]);
  assert.equal(status, 1, out);
  assert.match(out, /the baseline expects "unknown tool"/);
});

test('an unlisted failure fails', () => {
  const { status, out } = judge(HEALTHY, []);
  assert.equal(status, 1, out);
  assert.match(out, /^FAIL {2}tools-call-simple-text {2}tools-call-simple-text FAILURE: Failed: unknown tool/m);
});

test('an entry that fails nothing is stale', () => {
  const results = { ...HEALTHY, 'tools-call-simple-text': [ok('tools-call-simple-text')] };
  const { status, out } = judge(results, [FIXTURE_ENTRY]);
  assert.equal(status, 1, out);
  assert.match(out, /^FAIL {2}baseline tools-call-simple-text:tools-call-simple-text {2}matches nothing/m);
});

test('an entry without its expected text or reason, or a whole scenario, is malformed', () => {
  for (const line of [
    '  - tools-call-simple-text:tools-call-simple-text',
    '  - tools-call-simple-text:tools-call-simple-text # "unknown tool"',
    '  - tools-call-simple-text # "unknown tool" whole scenario',
  ]) {
    const { status, out } = judge(HEALTHY, [line]);
    assert.equal(status, 1, `${line}: ${out}`);
    assert.match(out, /^FAIL {2}baseline:\d+ {2}needs/m, line);
  }
});

test('a scored or required scenario that did not run fails', () => {
  const { 'server-sse-multiple-streams': _, ...rest } = HEALTHY;
  const { status, out } = judge(rest, [FIXTURE_ENTRY]);
  assert.equal(status, 1, out);
  assert.match(out, /^FAIL {2}server-sse-multiple-streams {2}was not run/m);
});

test('a scenario the revision does not score is shown, not judged', () => {
  const results = { ...HEALTHY, 'tasks-lifecycle': [failed('t', 'unknown tool')] };
  const { status, out } = judge(results, [FIXTURE_ENTRY]);
  assert.equal(status, 0, out);
  assert.match(out, /^NOTE {2}tasks-lifecycle \[not scored: extension\] {2}0 success, 1 failing/m);
});
