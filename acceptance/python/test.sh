#!/usr/bin/env bash
# Our own checks of the Python SDK server (pytest), in the venv serve.sh prepares.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$(cd "$HERE/../.." && pwd)/target/acceptance/python-venv"
"$HERE/serve.sh" --setup
STAMP="$VENV/.requirements-test.sha256"
want="$(sha256sum "$HERE/requirements-test.txt" | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]; then
  if [ -x "$VENV/bin/pip" ]; then pip=("$VENV/bin/pip"); else pip=(python3 -m pip --python "$VENV/bin/python"); fi
  "${pip[@]}" install --quiet --disable-pip-version-check -r "$HERE/requirements-test.txt" >&2
  echo "$want" > "$STAMP"
fi
cd "$HERE"
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider test_server.py "$@"
