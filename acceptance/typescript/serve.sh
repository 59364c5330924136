#!/usr/bin/env bash
# serve.sh [PORT] [LOGFILE]: install the pinned dependencies when needed, then run the server
# on 127.0.0.1:PORT (default 18282), one line per tool call appended to LOGFILE.
set -euo pipefail
port="${1:-18282}"
log="$(realpath -m "${2:-server.log}")"
cd "$(dirname "$(realpath "$0")")"
# npm ci only when node_modules is missing or package-lock.json changed since it was installed.
stamp=node_modules/.chataigne-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -d node_modules ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  npm ci --no-audit --no-fund >&2
  echo "$want" > "$stamp"
fi
exec node_modules/.bin/tsx src/server.ts --port "$port" --log "$log"
