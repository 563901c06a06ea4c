#!/usr/bin/env bash
# Runs the Python SDK's own tests (honcho-ai, `tests/sdk` of a plastic-labs/honcho checkout,
# with the SDK from its `sdks/python`) against this service started over real HTTP.
#   HONCHO_REPO=/path/to/honcho PYTHON=/path/to/venv/bin/python services/memory/test/python-sdk/run.sh
# The venv needs httpx, pydantic, pytest and pytest-asyncio. DATABASE_URL=postgres://… selects PostgreSQL
# (schema PG_SCHEMA, default memory_pysdk); AUTH=1 turns scoped keys on and drives the tests with the admin key.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
: "${HONCHO_REPO:?set HONCHO_REPO to a plastic-labs/honcho checkout}"
PYTHON="${PYTHON:-python3}"
PORT="${PORT:-8923}"
work="$(mktemp -d)"
trap 'if [ -n "${pgid:-}" ]; then kill -- "-$pgid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
mkdir -p "$work/tests" "$work/sdks" "$work/fastapi" "$work/data"
cp -r "$HONCHO_REPO/tests/sdk" "$work/tests/sdk"
cp -r "$HONCHO_REPO/sdks/python" "$work/sdks/python"
cp "$here/conftest.py" "$work/tests/sdk/conftest.py"
: > "$work/fastapi/__init__.py"
printf 'class TestClient:  # annotations only: the tests run over real HTTP\n    pass\n' > "$work/fastapi/testclient.py"
env_auth=()
if [ "${AUTH:-0}" = 1 ]; then
  env_auth=(AUTH_USE_AUTH=true AUTH_JWT_SECRET=python-sdk-run)
  export HONCHO_KEY="$(cd "$root" && AUTH_JWT_SECRET=python-sdk-run npx tsx services/memory/src/admin-key.ts)"
fi
cd "$root"
# setsid: the service (npx, tsx, node) gets a process group of its own, ended as a whole on exit.
env "${env_auth[@]}" PG_SCHEMA="${PG_SCHEMA:-memory_pysdk}" LOG_REQUESTS=0 LOG_LEVEL=warn \
  setsid npx tsx services/memory/src/main.ts --port "$PORT" --data-dir "$work/data" > "$work/server.log" 2>&1 < /dev/null &
pgid=$!
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break; sleep 0.5; done
cd "$work" && HONCHO_URL="http://127.0.0.1:$PORT" "$PYTHON" -m pytest tests/sdk -q -p no:cacheprovider -o asyncio_mode=auto "$@"
