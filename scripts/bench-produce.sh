#!/usr/bin/env bash
# Produce benchmark for the foundation issue: saturation throughput and
# low-load latency of one producer, on the local-directory store and on a
# real MinIO. Prints loadtest reports; not part of the test suite.
#
#   ./scripts/bench-produce.sh            # both stores
#   STORES=dir ./scripts/bench-produce.sh # one store
#   DURATION=20s ./scripts/bench-produce.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION="${DURATION:-15s}"
STORES="${STORES:-dir minio}"
FLOE_GOBIN="${FLOE_GOBIN:-$HOME/.cache/floe-gobin}"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/broker" ./cmd/broker
go build -o "$work/loadtest" ./cmd/loadtest

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

wait_http() {
  for _ in $(seq 1 300); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "timed out waiting for $1" >&2
  return 1
}

run_store() {
  local store="$1" kport hport args=()
  kport=$(free_port); hport=$(free_port)
  args=(--data-dir "$work/data-$store" --kafka-addr "127.0.0.1:$kport" --http-addr "127.0.0.1:$hport" --log-level warn)
  if [ "$store" = minio ]; then
    local mport cport
    mport=$(free_port); cport=$(free_port)
    if [ ! -x "$FLOE_GOBIN/minio" ]; then
      GOBIN="$FLOE_GOBIN" go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
    fi
    MINIO_ROOT_USER=floe MINIO_ROOT_PASSWORD=floe-secret "$FLOE_GOBIN/minio" server --quiet \
      --address "127.0.0.1:$mport" --console-address "127.0.0.1:$cport" "$work/minio" >"$work/minio.log" 2>&1 &
    pids+=($!)
    wait_http "http://127.0.0.1:$mport/minio/health/live"
    export AWS_ACCESS_KEY_ID=floe AWS_SECRET_ACCESS_KEY=floe-secret
    args+=(--s3-bucket bench --s3-endpoint "http://127.0.0.1:$mport" --s3-path-style --s3-region us-east-1 --s3-create-bucket)
  fi
  "$work/broker" "${args[@]}" >"$work/broker-$store.log" 2>&1 &
  local bpid=$!
  pids+=($bpid)
  wait_http "http://127.0.0.1:$hport/healthz"
  local lt=("$work/loadtest" --brokers "127.0.0.1:$kport" --metrics-url "http://127.0.0.1:$hport/metrics" --progress 0 --log-level warn)

  echo "=== $store: saturation (4 producers, 1 KiB records, 8 partitions, flat out) ==="
  "${lt[@]}" --topic sat --create-topic --partitions 8 --producers 4 --record-size 1024 --max-buffered 20000 \
    --linger 2ms --duration "$DURATION" --json "$work/$store-sat.json"
  echo "=== $store: low load (1 producer, 1 KiB records, one request in flight, 20 records/s) ==="
  "${lt[@]}" --topic low --create-topic --partitions 1 --producers 1 --record-size 1024 --rate 20 \
    --idempotent=false --max-inflight 1 --duration "$DURATION" --json "$work/$store-low.json"
  kill "$bpid"; wait "$bpid" 2>/dev/null || true
}

for s in $STORES; do run_store "$s"; done
