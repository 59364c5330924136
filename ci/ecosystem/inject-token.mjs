// Header-injecting reverse proxy for the official MCP conformance suite, which cannot send an
// Authorization header. Listens on 127.0.0.1:LISTEN_PORT, adds `Authorization: Bearer TOKEN`
// to every request, and forwards it to the target origin, streaming bodies both ways (SSE
// responses included). Loopback only.
//
// usage: node inject-token.mjs LISTEN_PORT TARGET_URL [TOKEN]
//   e.g. node inject-token.mjs 18081 http://127.0.0.1:18080 dev-token-owner
import http from 'node:http';

const [listenPort, target, token = 'dev-token-owner'] = process.argv.slice(2);
if (!listenPort || !target) {
  console.error('usage: node inject-token.mjs LISTEN_PORT TARGET_URL [TOKEN]');
  process.exit(2);
}
const upstream = new URL(target);
if (!['127.0.0.1', 'localhost', '[::1]'].includes(upstream.hostname)) {
  console.error(`refusing a non-loopback target: ${upstream.hostname}`);
  process.exit(2);
}

const server = http.createServer((req, res) => {
  // Keep every header as sent (Host and Origin included: the conformance suite's
  // DNS-rebinding scenario depends on them reaching the server unchanged); only add the token.
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const proxied = http.request(
    {
      hostname: upstream.hostname.replace(/^\[|\]$/g, ''),
      port: upstream.port || 80,
      method: req.method,
      path: req.url,
      headers,
    },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.statusMessage, up.rawHeaders);
      res.flushHeaders();
      up.pipe(res);
      up.on('error', () => res.destroy());
    },
  );
  proxied.on('error', (err) => {
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy error: ${err.message}\n`);
    } else {
      res.destroy();
    }
  });
  // A client that goes away (e.g. closes an SSE stream) tears the upstream request down too.
  res.on('close', () => proxied.destroy());
  req.pipe(proxied);
});

server.listen(Number(listenPort), '127.0.0.1', () => {
  console.error(`inject-token: 127.0.0.1:${listenPort} -> ${upstream.origin}`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
