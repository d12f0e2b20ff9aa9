#!/usr/bin/env bash
# Installs the Iceberg readers that table/readers_test.go runs (PyIceberg and
# DuckDB with its iceberg extension, pinned by table/testdata/requirements.txt)
# into a cached virtualenv, FLOE_TABLE_VENV (default
# ~/.cache/floe-venv/table-readers), once per change of the pins, and prints
# the lines that point the tests at it:
#
#   eval "$(./scripts/table-readers-venv.sh)"
#   go test ./table/...
#
# Needs python3 3.9+ with venv; nothing is installed system-wide.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${FLOE_TABLE_VENV:-$HOME/.cache/floe-venv/table-readers}"
req=table/testdata/requirements.txt
if ! cmp -s "$req" "$venv/requirements.txt"; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  log=$(mktemp)
  if ! "$venv/bin/pip" install -q -r "$req" >"$log" 2>&1; then
    echo "pip install failed:" >&2; cat "$log" >&2; rm -rf "$venv" "$log"; exit 1
  fi
  rm -f "$log"
  cp "$req" "$venv/requirements.txt"
fi
echo "export FLOE_PYTHON=$venv/bin/python FLOE_DUCKDB_PYTHON=$venv/bin/python"
