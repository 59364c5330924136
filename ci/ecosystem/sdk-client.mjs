// Drives the reference server with the official TypeScript SDK (@modelcontextprotocol/sdk):
// connect, list tools, read a restaurant, and replay a keyed write. The envelope's
// `meta.replayed` must be there on every success (ENV-1): `false` on the read and the first
// write, `true` on the replay (IDEM-2); its absence is a failure, not a "not replayed".
//
// usage: node sdk-client.mjs http  http://127.0.0.1:PORT/mcp
//        node sdk-client.mjs stdio path/to/chataigne-mock
// The SDK is loaded from $ECOSYSTEM_DIR (default: <repo>/.ecosystem), where ci/ecosystem.sh
// installs it. Prints one line per check; exits 1 on any mismatch, 2 on a usage error.
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const TOKEN = process.env.CHATAIGNE_TOKEN_FOR_TEST ?? 'dev-token-owner';
const EXPECTED_TOOLS = 17;
const here = dirname(fileURLToPath(import.meta.url));
const ecosystem = resolve(process.env.ECOSYSTEM_DIR ?? join(here, '..', '..', '.ecosystem'));
const require = createRequire(join(ecosystem, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport, getDefaultEnvironment } = require('@modelcontextprotocol/sdk/client/stdio.js');
const sdkVersion = JSON.parse(
  readFileSync(join(ecosystem, 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8'),
).version;

const [mode, target] = process.argv.slice(2);
if (!['http', 'stdio'].includes(mode) || !target) {
  console.error('usage: node sdk-client.mjs http URL | stdio SERVER_BINARY');
  process.exit(2);
}

let failures = 0;
function check(name, ok, detail = '') {
  console.log(`  ${ok ? 'PASS' : 'FAIL'} sdk/${mode} ${name}${detail ? ` (${detail})` : ''}`);
  if (!ok) failures += 1;
  return ok;
}

let stderr = '';
let transport;
if (mode === 'http') {
  transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
} else {
  transport = new StdioClientTransport({
    command: resolve(target),
    args: ['--stdio'],
    env: { ...getDefaultEnvironment(), CHATAIGNE_TOKEN: TOKEN },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
}

const client = new Client({ name: 'chataigne-ecosystem-check', version: '1.0.0' });
const timeout = setTimeout(() => {
  console.error(`sdk/${mode}: timed out after 60 s`);
  process.exit(1);
}, 60_000);

// A field's value as JSON, or "absent" (so a missing field never reads as `undefined` == false).
function show(object, field) {
  return object && Object.hasOwn(object, field) ? JSON.stringify(object[field]) : 'absent';
}

async function call(name, args) {
  const result = await client.callTool({ name, arguments: args });
  return { result, sc: result.structuredContent ?? {} };
}

try {
  await client.connect(transport);
  const info = client.getServerVersion();
  check('connect', info?.name === 'chataigne-mock', `sdk ${sdkVersion}, server ${info?.name} ${info?.version}`);

  const { tools } = await client.listTools();
  check('tools/list', tools.length === EXPECTED_TOOLS, `${tools.length} tools, expected ${EXPECTED_TOOLS}`);

  const restaurant = await call('get_restaurant', { restaurant_id: 'rst_central' });
  const restaurantId = restaurant.sc.data?.restaurant?.id;
  check(
    'get_restaurant',
    restaurant.result.isError !== true && restaurantId === 'rst_central' && restaurant.sc.meta?.replayed === false,
    `data.restaurant.id=${restaurantId}, meta.replayed=${show(restaurant.sc.meta, 'replayed')}`,
  );

  const args = {
    restaurant_id: 'rst_central',
    conversation_id: 'cnv_long',
    text: 'Your table is ready (ecosystem check)',
    idempotency_key: `eco-${mode}-${randomBytes(6).toString('hex')}`,
  };
  const first = await call('send_message', args);
  const second = await call('send_message', args);
  const firstId = first.sc.data?.message?.id;
  const secondId = second.sc.data?.message?.id;
  check(
    'send_message first call',
    first.result.isError !== true && typeof firstId === 'string' && first.sc.meta?.replayed === false,
    `message.id=${firstId}, meta.replayed=${show(first.sc.meta, 'replayed')}`,
  );
  check(
    'send_message replay',
    second.result.isError !== true && second.sc.meta?.replayed === true && secondId === firstId,
    `message.id=${secondId}, meta.replayed=${show(second.sc.meta, 'replayed')}`,
  );
} catch (error) {
  check('no exception', false, error instanceof Error ? error.message : String(error));
  if (stderr) console.error(stderr.split('\n').slice(-20).join('\n'));
} finally {
  clearTimeout(timeout);
  await client.close().catch(() => {});
}
process.exit(failures === 0 ? 0 : 1);
