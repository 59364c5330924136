// Chataigne over the official TypeScript MCP SDK: Streamable HTTP at /mcp with sessions and SSE
// answers, DNS-rebinding protection, bearer tokens checked by the SDK's middleware, and the 17
// tools registered at the low level (their JSON Schemas published as written, their arguments
// validated by us so that a bad argument is a tool error envelope, not a protocol error).
//
//   tsx src/server.ts [--port 18282] [--log server.log] [--dataset ../../fixtures/dataset.json]

import { randomUUID } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import express, { type NextFunction, type Request, type Response } from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { getOAuthProtectedResourceMetadataUrl, mcpAuthMetadataRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { hostHeaderValidation } from '@modelcontextprotocol/sdk/server/middleware/hostHeaderValidation.js';
import {
  CallToolRequestSchema, ErrorCode, isInitializeRequest, ListToolsRequestSchema, McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { descriptor, SCOPES, TOOLS } from './catalogue.js';
import { Store } from './store.js';
import { Chataigne, type Principal } from './tools.js';

const here = dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.PORT ?? '18282' },
    log: { type: 'string', default: process.env.CHATAIGNE_LOG ?? 'server.log' },
    dataset: { type: 'string', default: resolve(here, '../../../fixtures/dataset.json') },
    issuer: { type: 'string', default: 'https://auth.chataigne.example/' },
  },
});
const port = Number(flags.port);
const resource = new URL(`http://127.0.0.1:${port}/mcp`);
const store = Store.load(flags.dataset!);
const app = new Chataigne(store);

// One line per tool call: tool, outcome, duration. Never arguments, texts, keys or tokens.
const log: WriteStream = createWriteStream(flags.log!, { flags: 'a' });
function logCall(tool: string, outcome: string, started: number, requestId?: string): void {
  const ms = (performance.now() - started).toFixed(1);
  log.write(`${new Date().toISOString()} tool=${tool} outcome=${outcome} duration_ms=${ms}${requestId ? ` request_id=${requestId}` : ''}\n`);
}

// Static tokens, one per persona of the dataset: ts-token-<persona>. The user, OAuth client,
// scopes and audience are the persona's.
const tokens = new Map<string, AuthInfo>();
for (const p of store.personas) {
  tokens.set(`ts-token-${p.persona}`, {
    token: `ts-token-${p.persona}`,
    clientId: p.client_id,
    scopes: p.scopes,
    expiresAt: Math.floor(Date.now() / 1000) + 10 * 365 * 24 * 3600,
    resource: new URL(p.audience ?? resource.href),
    extra: { userId: p.user_id },
  });
}
const verifier = {
  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const info = tokens.get(token);
    if (!info) throw new InvalidTokenError('Unknown token');
    return info;
  },
};

/** One MCP server per session, as the SDK examples do; they share the store and the guards. */
function mcpServer(): McpServer {
  const server = new McpServer({ name: 'chataigne-typescript', version: '0.1.0' }, { capabilities: { tools: {} } });
  const listed = TOOLS.map(descriptor);
  server.server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }));
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const started = performance.now();
    const name = request.params.name;
    if (!app.has(name)) {
      logCall('(unknown)', `jsonrpc${ErrorCode.InvalidParams}`, started);
      throw new McpError(ErrorCode.InvalidParams, 'Unknown tool');
    }
    const auth = extra.authInfo!;
    const who: Principal = { clientId: auth.clientId, userId: String(auth.extra?.userId), scopes: auth.scopes };
    const out = await app.call(name, request.params.arguments, who);
    logCall(name, out.outcome, started, out.requestId);
    return out.result;
  });
  return server;
}

const transports = new Map<string, { transport: StreamableHTTPServerTransport; seen: number }>();

const http = express();
http.disable('x-powered-by');
// DNS-rebinding protection: the SDK's Host check first, then the Origin (a browser's), before
// anything else is read; the transport checks both again with the port.
const hosts = [`127.0.0.1:${port}`, `localhost:${port}`];
const origins = hosts.map((h) => `http://${h}`);
http.use(hostHeaderValidation(['127.0.0.1', 'localhost']));
http.use((req: Request, res: Response, next: NextFunction) => {
  const origin = req.headers.origin;
  if (origin !== undefined && !origins.includes(origin)) {
    res.status(403).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Forbidden: Origin not allowed' }, id: null });
    return;
  }
  next();
});
http.use(mcpAuthMetadataRouter({
  oauthMetadata: {
    issuer: flags.issuer!,
    authorization_endpoint: new URL('authorize', flags.issuer).href,
    token_endpoint: new URL('token', flags.issuer).href,
    response_types_supported: ['code'],
  },
  resourceServerUrl: resource,
  scopesSupported: SCOPES,
  resourceName: 'Chataigne (TypeScript SDK acceptance server)',
}));
const bearer = requireBearerAuth({
  verifier,
  expectedResource: resource,
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(resource),
});
http.use('/mcp', express.json({ limit: '1mb' }));

function rpcError(res: Response, status: number, code: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

http.post('/mcp', bearer, async (req: Request, res: Response) => {
  const body: unknown = req.body;
  const sessionId = req.headers['mcp-session-id'] as string | undefined;
  const known = sessionId ? transports.get(sessionId) : undefined;
  let transport: StreamableHTTPServerTransport;
  if (known) {
    known.seen = Date.now();
    transport = known.transport;
  } else if (sessionId) {
    rpcError(res, 404, -32001, 'Session not found');
    return;
  } else if (isInitializeRequest(body)) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => { transports.set(id, { transport, seen: Date.now() }); },
      enableDnsRebindingProtection: true,
      allowedHosts: hosts,
      allowedOrigins: origins,
      maxRequestBodySize: 1024 * 1024,
    });
    transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
    await mcpServer().connect(transport);
  } else {
    rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    return;
  }
  await transport.handleRequest(req, res, body);
});

// GET (the standalone SSE stream) and DELETE (end of session) go to the session's transport.
const bySession = async (req: Request, res: Response) => {
  const sessionId = req.headers['mcp-session-id'] as string | undefined;
  const known = sessionId ? transports.get(sessionId) : undefined;
  if (!known) {
    if (sessionId) rpcError(res, 404, -32001, 'Session not found');
    else rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    return;
  }
  known.seen = Date.now();
  await known.transport.handleRequest(req, res);
};
http.get('/mcp', bearer, bySession);
http.delete('/mcp', bearer, bySession);

// Body errors from express.json(), as JSON-RPC errors rather than an HTML page.
http.use((err: { type?: string; status?: number }, _req: Request, res: Response, next: NextFunction) => {
  if (res.headersSent) return next(err);
  if (err.type === 'entity.too.large') rpcError(res, 413, -32000, 'Payload Too Large: the request body exceeds 1 MiB');
  else if (err.type === 'entity.parse.failed') rpcError(res, 400, -32700, 'Parse error: Invalid JSON');
  else if (err.status && err.status >= 400 && err.status < 500) rpcError(res, err.status, -32000, 'Bad Request');
  else rpcError(res, 500, -32603, 'Internal error');
});

// Sessions idle for an hour are closed.
setInterval(() => {
  const cutoff = Date.now() - 3_600_000;
  for (const [, s] of transports) if (s.seen < cutoff) void s.transport.close();
}, 60_000).unref();

http.listen(port, '127.0.0.1', () => {
  process.stderr.write(`chataigne-typescript listening on ${resource.href} (log: ${flags.log})\n`);
});
