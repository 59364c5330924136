#!/usr/bin/env bash
# A burst of one-request clients while a slowloris flood holds connections, for
# docs/RELIABILITY.md ("Caps and timeouts of the listener"): starts chataigne-mock with its
# default connection cap, then mock-server/examples/burst.rs holds SLOW connections that send a
# header byte a second and starts CLIENTS clients at once, each one `Connection: close` request.
# Exits 1 unless every client was answered 200.
# Usage: bench/burst.sh   (env: MOCK_BIN=target/debug/chataigne-mock BURST_BIN=target/debug/examples/burst
#        PORT=18097 CLIENTS=2000 SLOW=500 NO_BUILD=1; extra server flags in MOCK_ARGS)
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-18097}
MOCK_BIN=${MOCK_BIN:-target/debug/chataigne-mock}
BURST_BIN=${BURST_BIN:-target/debug/examples/burst}
[[ ${NO_BUILD:-} == 1 ]] || cargo build -q -p mock-server --bin chataigne-mock --example burst
# Both sides hold thousands of sockets: the server's cap stays 512 below a limit this high.
ulimit -n "$(ulimit -Hn)"
# shellcheck disable=SC2086 # MOCK_ARGS is a list of flags
"$MOCK_BIN" --listen "127.0.0.1:$PORT" --log-file /dev/null ${MOCK_ARGS:-} & mock_pid=$!
trap 'kill "$mock_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$PORT/.well-known/oauth-protected-resource" && break
  sleep 0.1
done
RUST_LIB_BACKTRACE=0 "$BURST_BIN" "127.0.0.1:$PORT"
