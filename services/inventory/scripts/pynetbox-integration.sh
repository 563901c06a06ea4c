#!/bin/bash
# Runs pynetbox's own integration suite (tests/integration of a pynetbox checkout, e.g. v7.8.0) against this service.
# usage: services/inventory/scripts/pynetbox-integration.sh <pynetbox-checkout> [--postgres <database-url>] [pytest args]
# Needs python3 with requests, packaging, pyyaml and pytest. Starts the service on a free loopback port with a fresh SQLite
# directory (or PostgreSQL schema), gives user admin the password "admin" (pynetbox's fixtures call create_token("admin", "admin")),
# points pynetbox's conftest at it (-p no:docker --url-override), and stops the service afterwards.
set -euo pipefail
CHECKOUT=$(cd "$1" && pwd); shift
DB=()
PGURL=""
if [ "${1:-}" = "--postgres" ]; then PGURL="$2"; DB=(--database-url "$2" --pg-schema "pynetbox_$$"); shift 2; fi
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
DATA=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(20))')
cd "$ROOT"
node --import tsx services/inventory/src/main.ts --port "$PORT" --data-dir "$DATA" --admin-token "$TOKEN" "${DB[@]}" > "$DATA/server.log" 2>&1 &
SERVER=$!
cleanup() {
  kill "$SERVER" 2>/dev/null || true
  wait "$SERVER" 2>/dev/null || true
  rm -rf "$DATA"
  if [ -n "$PGURL" ]; then psql "$PGURL" -qc "drop schema if exists pynetbox_$$ cascade; drop schema if exists pynetbox_$$_worker cascade" > /dev/null 2>&1 || true; fi
}
trap cleanup EXIT
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break; sleep 1; done
ADMIN_ID=$(curl -sf -H "Authorization: Token $TOKEN" "http://127.0.0.1:$PORT/api/users/users/?username=admin" | python3 -c 'import json, sys; print(json.load(sys.stdin)["results"][0]["id"])')
curl -sf -X PATCH -H "Authorization: Token $TOKEN" -H 'Content-Type: application/json' -d '{"password": "admin"}' "http://127.0.0.1:$PORT/api/users/users/$ADMIN_ID/" > /dev/null
cd "$CHECKOUT"
python3 -m pytest tests/integration -p no:docker -p no:cacheprovider --url-override "http://127.0.0.1:$PORT" --netbox-versions 4.3 -q "$@"
