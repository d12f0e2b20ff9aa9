#!/usr/bin/env bash
# A local floe cluster backed by MinIO, from binaries (no Docker needed):
# MinIO, nats-server with JetStream, one coordinator and three brokers, all
# on 127.0.0.1. State lives under dev/.cluster/ (or $FLOE_DEV_DIR).
#
#   dev/cluster.sh up       # build, start everything, print the addresses
#   dev/cluster.sh status   # what runs, and the addresses
#   dev/cluster.sh down     # stop everything (data is kept; rm -rf dev/.cluster to wipe)
#
# Ports can be moved with FLOE_DEV_PORT_BASE (default 19000): MinIO +0
# (console +1), NATS +2, coordinator HTTP +3, brokers Kafka +10..+12 and
# HTTP +20..+22.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
dir="${FLOE_DEV_DIR:-$root/dev/.cluster}"
base="${FLOE_DEV_PORT_BASE:-19000}"
gobin="${FLOE_GOBIN:-$HOME/.cache/floe-gobin}"
minio_version=v0.0.0-20260212201848-7aac2a2c5b7c
nats_version=$(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)

minio_port=$base; console_port=$((base + 1)); nats_port=$((base + 2)); coord_http=$((base + 3))
kafka_port() { echo $((base + 10 + $1 - 1)); }
http_port() { echo $((base + 20 + $1 - 1)); }

export AWS_ACCESS_KEY_ID=floe AWS_SECRET_ACCESS_KEY=floe-secret
s3=(--s3-bucket floe --s3-endpoint "http://127.0.0.1:$minio_port" --s3-path-style --s3-region us-east-1)

running() { [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }

start() { # name, command...
  local name=$1; shift
  if running "$name"; then echo "$name already running"; return; fi
  "$@" >"$dir/$name.log" 2>&1 &
  echo $! >"$dir/$name.pid"
}

wait_http() {
  for _ in $(seq 1 300); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "timed out waiting for $1 (logs in $dir)" >&2
  return 1
}

install_tools() {
  mkdir -p "$gobin"
  if [ ! -x "$gobin/minio" ]; then
    echo "installing minio@$minio_version into $gobin"
    GOBIN="$gobin" GOFLAGS=-buildvcs=false go install "github.com/minio/minio@$minio_version"
  fi
  if [ ! -x "$gobin/nats-server" ]; then
    echo "installing nats-server@$nats_version into $gobin"
    GOBIN="$gobin" go install "github.com/nats-io/nats-server/v2@$nats_version"
  fi
  mkdir -p "$dir/bin"
  go build -o "$dir/bin/broker" ./cmd/broker
  go build -o "$dir/bin/coordinator" ./cmd/coordinator
}

status() {
  local name
  for name in minio nats coordinator broker-1 broker-2 broker-3; do
    if running "$name"; then echo "$name: running (pid $(cat "$dir/$name.pid"))"; else echo "$name: stopped"; fi
  done
  echo
  echo "bootstrap servers: 127.0.0.1:$(kafka_port 1),127.0.0.1:$(kafka_port 2),127.0.0.1:$(kafka_port 3)"
  echo "broker HTTP (/kv, /metrics, /healthz): http://127.0.0.1:$(http_port 1) http://127.0.0.1:$(http_port 2) http://127.0.0.1:$(http_port 3)"
  echo "coordinator HTTP: http://127.0.0.1:$coord_http   NATS: nats://127.0.0.1:$nats_port"
  echo "MinIO: http://127.0.0.1:$minio_port (console http://127.0.0.1:$console_port, user floe / floe-secret, bucket floe)"
}

up() {
  mkdir -p "$dir"
  install_tools
  MINIO_ROOT_USER=floe MINIO_ROOT_PASSWORD=floe-secret start minio "$gobin/minio" server --quiet \
    --address "127.0.0.1:$minio_port" --console-address "127.0.0.1:$console_port" "$dir/minio"
  wait_http "http://127.0.0.1:$minio_port/minio/health/live"
  start nats "$gobin/nats-server" -a 127.0.0.1 -p "$nats_port" -js -sd "$dir/nats" -m "$((base + 4))"
  wait_http "http://127.0.0.1:$((base + 4))/healthz"
  start coordinator "$dir/bin/coordinator" --data-dir "$dir/coordinator" --nats-url "nats://127.0.0.1:$nats_port" \
    --http-addr "127.0.0.1:$coord_http" --kv-index-enabled "${s3[@]}"
  wait_http "http://127.0.0.1:$coord_http/healthz"
  local i
  for i in 1 2 3; do
    start "broker-$i" "$dir/bin/broker" --node-id "$i" --nats-url "nats://127.0.0.1:$nats_port" \
      --data-dir "$dir/broker-$i" --kafka-addr "127.0.0.1:$(kafka_port "$i")" --http-addr "127.0.0.1:$(http_port "$i")" \
      --kv-index-enabled --s3-create-bucket "${s3[@]}"
    wait_http "http://127.0.0.1:$(http_port "$i")/healthz"
  done
  status
}

down() {
  local name
  for name in broker-3 broker-2 broker-1 coordinator nats minio; do
    if running "$name"; then
      kill "$(cat "$dir/$name.pid")"
      for _ in $(seq 1 100); do running "$name" || break; sleep 0.1; done
      running "$name" && kill -9 "$(cat "$dir/$name.pid")"
      echo "$name: stopped"
    fi
    rm -f "$dir/$name.pid"
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
