#!/usr/bin/env bash
# Start the Python SDK Chataigne server: serve.sh [PORT] [LOGFILE]   (serve.sh --setup: only the venv)
# Creates (or reuses) a virtual environment under $REPO/target/acceptance/python-venv, installs
# requirements.txt into it only when that file changed, then execs the server in the foreground.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PORT="${1:-18181}"
LOG="${2:-$REPO/target/acceptance/python-server.log}"
VENV="$REPO/target/acceptance/python-venv"
STAMP="$VENV/.requirements.sha256"

if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p "$(dirname "$VENV")"
  # Debian without python3-venv cannot bootstrap pip inside the venv: use the system's pip then.
  python3 -m venv "$VENV" 2>/dev/null || { rm -rf "$VENV"; python3 -m venv --without-pip "$VENV"; }
fi
want="$(sha256sum "$HERE/requirements.txt" | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]; then
  echo "serve.sh: installing $HERE/requirements.txt into $VENV" >&2
  if [ -x "$VENV/bin/pip" ]; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt" >&2
  else
    python3 -m pip --python "$VENV/bin/python" install --quiet --disable-pip-version-check \
      -r "$HERE/requirements.txt" >&2
  fi
  echo "$want" > "$STAMP"
fi
[ "${1:-}" = "--setup" ] && exit 0
mkdir -p "$(dirname "$LOG")"
exec "$VENV/bin/python" "$HERE/server.py" --port "$PORT" --log-file "$LOG"
