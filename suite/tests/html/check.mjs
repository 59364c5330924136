// Opens HTML reports of the suite (`--html`) in headless Chromium, as a person would, and checks
// them (run by scripts/test):
//   - the page loads with no console error, no script error and no request but itself (the
//     report is self-contained: no asset, no script);
//   - the verdict line is at the top, and the clause matrix has one row and one tile per clause;
//   - a report with failures has them folded in <details>: the request_id is hidden until the
//     fold is opened, and shown once it is (a click on its summary, as a person would);
//   - a screenshot of each page is saved next to it (<report>.png), to look at.
//
// usage: node suite/tests/html/check.mjs [--modules DIR] [--chromium PATH] \
//          --clean reports/report.html --failing reports/report-defect.html
// DIR holds node_modules/playwright-core (default target/html-check, where .ci/run installs
// it); PATH defaults to /usr/bin/chromium (Debian's package `chromium`).
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import fs from 'node:fs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const modules = path.resolve(option('--modules', 'target/html-check'));
const executablePath = option('--chromium', '/usr/bin/chromium');
const reports = [
  ['clean', option('--clean')],
  ['failing', option('--failing')],
].filter(([, file]) => file);
if (reports.length === 0) {
  console.error('html check: give --clean FILE and/or --failing FILE');
  process.exit(2);
}
if (!fs.existsSync(path.join(modules, 'node_modules', 'playwright-core'))) {
  console.error(`html check: no playwright-core under ${modules} (.ci/run installs it: npm install --prefix ${modules} playwright-core)`);
  process.exit(2);
}
if (!fs.existsSync(executablePath)) {
  console.error(`html check: no Chromium at ${executablePath} (Debian: apt-get install chromium)`);
  process.exit(2);
}
const require = createRequire(path.join(modules, 'package.json'));
const { chromium } = require('playwright-core');

let passed = 0;
let failed = 0;
const check = (what, ok, detail = '') => {
  if (ok) {
    passed += 1;
    console.log(`  ok    ${what}`);
  } else {
    failed += 1;
    console.log(`  FAIL  ${what}${detail ? `: ${detail}` : ''}`);
  }
};

// The flags Chromium needs on a machine without the internet (no background connections).
const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  for (const [kind, file] of reports) {
    console.log(`html check: ${kind} report ${file}`);
    const url = pathToFileURL(path.resolve(file)).href;
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [];
    const requests = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('request', (r) => { if (r.url() !== url && !r.url().startsWith('data:')) requests.push(r.url()); });
    await page.goto(url, { waitUntil: 'load' });

    const head = (await page.locator('#verdict .head').textContent()) ?? '';
    const expected = kind === 'clean' ? /^CERTIFIED at the (seed|full) level: / : /^NOT CERTIFIED at the (seed|full) level: /;
    check('the verdict line is at the top', expected.test(head), JSON.stringify(head));
    const firstBox = await page.locator('#verdict').boundingBox();
    check('the verdict is in the first screen', firstBox !== null && firstBox.y < 200, JSON.stringify(firstBox));
    const rows = await page.locator('table.matrix tbody tr').count();
    const tiles = await page.locator('ul.tiles a').count();
    check('the clause matrix has a row and a tile per clause', rows >= 40 && rows === tiles, `${rows} rows, ${tiles} tiles`);
    const headers = await page.locator('table.matrix thead th').allTextContents();
    const full = headers.indexOf('full verdict') + 1;
    const verdicts = full > 0 ? await page.locator(`table.matrix tbody tr td:nth-child(${full}) .badge`).count() : 0;
    check('each row has its full-level verdict', verdicts === rows, `${verdicts} of ${rows}`);

    const folds = page.locator('details.failure');
    const n = await folds.count();
    if (kind === 'clean') {
      check('a clean report has no failure', n === 0, `${n} folds`);
      await page.screenshot({ path: `${file}.png`, fullPage: true });
    } else {
      check('a failing report has folded failures', n > 0, `${n} folds`);
      // The first screen as a person sees it.
      await page.screenshot({ path: `${file}.png`, fullPage: false });
      const first = folds.first();
      check('every fold starts closed', (await page.locator('details.failure[open]').count()) === 0);
      const rid = first.locator('.rid code').first();
      check('the request_id is hidden while folded', !(await rid.isVisible()));
      await first.locator('summary').click();
      check('opening the fold shows the request_id', await rid.isVisible());
      const text = ((await rid.textContent()) ?? '').trim();
      check('the request_id is one', /^req_[A-Za-z0-9]{16,}$/.test(text), JSON.stringify(text));
      check('the fold shows the request and the response',
        (await first.locator('.exchange.request pre').isVisible()) && (await first.locator('.exchange.response').isVisible()));
      await first.screenshot({ path: `${file}.failure.png` });
    }
    check('no console or script error', errors.length === 0, errors.join(' | '));
    check('nothing fetched but the page', requests.length === 0, requests.join(' '));
    await page.close();
  }
} finally {
  await browser.close();
}
console.log(`html check: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
