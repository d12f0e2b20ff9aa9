#!/usr/bin/env bash
# A local floe cluster backed by MinIO, from binaries (no Docker needed):
# MinIO, a 3-node NATS cluster with JetStream, two coordinators (one leads,
# the other stands by) and three brokers, all on 127.0.0.1. State lives
# under dev/.cluster/ (or $FLOE_DEV_DIR).
#
#   dev/cluster.sh up       # build, start everything, print the addresses
#   dev/cluster.sh status   # what runs, which coordinator leads, the addresses
#   dev/cluster.sh down     # stop everything (data is kept; rm -rf dev/.cluster to wipe)
#
# Ports can be moved with FLOE_DEV_PORT_BASE (default 19000):
#   MinIO +0 (console +1)
#   NATS clients +2, +5, +6 (nats-1..3), cluster routes +30..+32,
#     monitoring (/healthz) +40..+42
#   coordinators' HTTP (/healthz, /metrics) +3 (coordinator-1), +7 (coordinator-2)
#   brokers Kafka +10..+12 and HTTP +20..+22
#   the S3 latency proxy +50 (with S3_PROFILE)
#
# S3_PROFILE=s3-standard (s3-express, slow-tail, none; see package
# s3latency) puts cmd/s3-latency-proxy between MinIO and the coordinators
# and brokers, so that the cluster sees real S3's latency (and the brokers
# keep S3's PUT budget; without a profile they run --ingest-put-budget none,
# as a MinIO of one's own bills nothing per PUT). BROKER_FLAGS adds flags to
# every broker.
#
# SHARDS=3 dev/cluster.sh up starts a coordinator of 3 shards
# (docs/design/coordinator-shards.md): coordinator-1 and -2 serve shard 0
# as above, and each shard i above 0 has two more, coordinator-s<i>-1 and
# -2 (HTTP +60+2i and +61+2i), one leading and one standing by; the brokers
# route by it. The count is kept with the cluster's state: a later up
# without SHARDS starts the same count, and another count is refused (adding
# shards to a running cluster is done by hand: docs/operations.md).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
dir="${FLOE_DEV_DIR:-$root/dev/.cluster}"
base="${FLOE_DEV_PORT_BASE:-19000}"
gobin="${FLOE_GOBIN:-$HOME/.cache/floe-gobin}"
minio_version=v0.0.0-20260212201848-7aac2a2c5b7c
nats_version=$(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)

minio_port=$base; console_port=$((base + 1))
nats_port() { case $1 in 1) echo $((base + 2)) ;; 2) echo $((base + 5)) ;; 3) echo $((base + 6)) ;; esac; }
route_port() { echo $((base + 30 + $1 - 1)); }
monitor_port() { echo $((base + 40 + $1 - 1)); }
coord_http() { case $1 in 1) echo $((base + 3)) ;; 2) echo $((base + 7)) ;; esac; }
kafka_port() { echo $((base + 10 + $1 - 1)); }
http_port() { echo $((base + 20 + $1 - 1)); }
nats_urls="nats://127.0.0.1:$(nats_port 1),nats://127.0.0.1:$(nats_port 2),nats://127.0.0.1:$(nats_port 3)"
routes="nats://127.0.0.1:$(route_port 1),nats://127.0.0.1:$(route_port 2),nats://127.0.0.1:$(route_port 3)"

export AWS_ACCESS_KEY_ID=floe AWS_SECRET_ACCESS_KEY=floe-secret
proxy_port=$((base + 50))
s3_endpoint="http://127.0.0.1:$minio_port"
if [ -n "${S3_PROFILE:-}" ]; then s3_endpoint="http://127.0.0.1:$proxy_port"; fi
s3=(--s3-bucket floe --s3-endpoint "$s3_endpoint" --s3-path-style --s3-region us-east-1)
# A MinIO of one's own bills nothing per PUT: brokers roll and upload for
# latency (--ingest-put-budget none), unless a latency profile plays S3.
budget=(--ingest-put-budget none)
if [ -n "${S3_PROFILE:-}" ]; then budget=(); fi
read -r -a broker_flags <<< "${BROKER_FLAGS:-}"
saved_shards=$(cat "$dir/shards" 2>/dev/null || true)
shards="${SHARDS:-${saved_shards:-1}}"
shard_http() { echo $((base + 60 + 2 * $1 + $2 - 1)); } # shard i > 0, coordinator j (1 or 2)

# Every process, in start order; down stops them in reverse. nats and
# coordinator are the names of the earlier one-NATS, one-coordinator layout,
# stopped by down if they still run.
names=(minio s3-proxy nats-1 nats-2 nats-3 coordinator-1 coordinator-2)
for ((sh = 1; sh < shards; sh++)); do names+=("coordinator-s$sh-1" "coordinator-s$sh-2"); done
names+=(broker-1 broker-2 broker-3)

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

# coord_role prints coordinator i's /healthz line ("leader term=...",
# "standby leader=...", "starting"), or nothing when it does not answer.
coord_role() { curl -s --max-time 2 "http://127.0.0.1:$(coord_http "$1")/healthz" 2>/dev/null || true; }

# wait_leader waits until one of the coordinators of shard $1 (default 0)
# says it leads.
wait_leader() {
  local i sh=${1:-0} port
  for _ in $(seq 1 600); do
    for i in 1 2; do
      if [ "$sh" = 0 ]; then port=$(coord_http "$i"); else port=$(shard_http "$sh" "$i"); fi
      case "$(curl -s --max-time 2 "http://127.0.0.1:$port/healthz" 2>/dev/null || true)" in leader*) return 0 ;; esac
    done
    sleep 0.1
  done
  echo "timed out waiting for a coordinator of shard $sh to lead (logs in $dir)" >&2
  return 1
}

# create_bucket creates the bucket the coordinators keep their snapshots in
# (they lead only once they can list it; the brokers would create it too,
# but start after a coordinator leads). 409: it exists already.
create_bucket() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -X PUT "http://127.0.0.1:$minio_port/floe") || true
  case $code in
    200 | 409) ;;
    *) echo "creating bucket floe on MinIO: HTTP $code (curl 7.75 or later is needed for --aws-sigv4)" >&2; return 1 ;;
  esac
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
  go build -o "$dir/bin/s3-latency-proxy" ./cmd/s3-latency-proxy
}

status() {
  local name i role
  for name in "${names[@]}"; do
    if running "$name"; then echo "$name: running (pid $(cat "$dir/$name.pid"))"; else echo "$name: stopped"; fi
  done
  echo
  for i in 1 2; do
    role=$(coord_role "$i")
    echo "coordinator-$i: http://127.0.0.1:$(coord_http "$i")  ${role:-not answering}"
  done
  local sh
  for ((sh = 1; sh < shards; sh++)); do
    for i in 1 2; do
      role=$(curl -s --max-time 2 "http://127.0.0.1:$(shard_http "$sh" "$i")/healthz" 2>/dev/null || true)
      echo "coordinator-s$sh-$i (shard $sh): http://127.0.0.1:$(shard_http "$sh" "$i")  ${role:-not answering}"
    done
  done
  echo "bootstrap servers: 127.0.0.1:$(kafka_port 1),127.0.0.1:$(kafka_port 2),127.0.0.1:$(kafka_port 3)"
  echo "broker HTTP (/kv, /metrics, /healthz): http://127.0.0.1:$(http_port 1) http://127.0.0.1:$(http_port 2) http://127.0.0.1:$(http_port 3)"
  echo "NATS: $nats_urls (monitoring http://127.0.0.1:$(monitor_port 1) .. $(monitor_port 3))"
  if running s3-proxy; then echo "S3 latency proxy: $s3_endpoint (profile ${S3_PROFILE:-?}) in front of MinIO"; fi
  echo "MinIO: http://127.0.0.1:$minio_port (console http://127.0.0.1:$console_port, user floe / floe-secret, bucket floe)"
}

up() {
  if [ -d "$dir/nats" ] && [ ! -d "$dir/nats-1" ]; then
    echo "$dir holds the state of the earlier one-NATS, one-coordinator layout;" >&2
    echo "run dev/cluster.sh down && rm -rf $dir to start the 3-node cluster afresh" >&2
    exit 1
  fi
  if [ -n "$saved_shards" ] && [ "$shards" != "$saved_shards" ]; then
    echo "$dir holds a cluster of $saved_shards coordinator shard(s); SHARDS=$shards would move partitions," >&2
    echo "which this script does not do (docs/operations.md says how to add shards by hand): run dev/cluster.sh down && rm -rf $dir to start afresh" >&2
    exit 1
  fi
  mkdir -p "$dir"
  echo "$shards" >"$dir/shards"
  install_tools
  MINIO_ROOT_USER=floe MINIO_ROOT_PASSWORD=floe-secret start minio "$gobin/minio" server --quiet \
    --address "127.0.0.1:$minio_port" --console-address "127.0.0.1:$console_port" "$dir/minio"
  wait_http "http://127.0.0.1:$minio_port/minio/health/live"
  create_bucket
  if [ -n "${S3_PROFILE:-}" ]; then
    start s3-proxy "$dir/bin/s3-latency-proxy" --listen "127.0.0.1:$proxy_port" \
      --upstream "http://127.0.0.1:$minio_port" --profile "$S3_PROFILE" --report 0
    wait_http "http://127.0.0.1:$proxy_port/minio/health/live"
  fi
  local i
  for i in 1 2 3; do
    start "nats-$i" "$gobin/nats-server" --server_name "nats-$i" -a 127.0.0.1 -p "$(nats_port "$i")" \
      -m "$(monitor_port "$i")" -js -sd "$dir/nats-$i" \
      --cluster_name floe-dev --cluster "nats://127.0.0.1:$(route_port "$i")" --routes "$routes"
  done
  for i in 1 2 3; do
    wait_http "http://127.0.0.1:$(monitor_port "$i")/healthz?js-enabled-only=true"
  done
  for i in 1 2; do
    start "coordinator-$i" "$dir/bin/coordinator" --coordinator-id "coordinator-$i" --data-dir "$dir/coordinator-$i" \
      --nats-url "$nats_urls" --replicas 3 --http-addr "127.0.0.1:$(coord_http "$i")" --kv-index-enabled \
      --shards "$shards" "${s3[@]}"
  done
  wait_leader 0
  local sh
  for ((sh = 1; sh < shards; sh++)); do
    for i in 1 2; do
      start "coordinator-s$sh-$i" "$dir/bin/coordinator" --coordinator-id "coordinator-s$sh-$i" \
        --data-dir "$dir/coordinator-s$sh-$i" --nats-url "$nats_urls" --replicas 3 \
        --http-addr "127.0.0.1:$(shard_http "$sh" "$i")" --kv-index-enabled --shards "$shards" --shard "$sh" "${s3[@]}"
    done
    wait_leader "$sh"
  done
  for i in 1 2 3; do
    start "broker-$i" "$dir/bin/broker" --node-id "$i" --nats-url "$nats_urls" --coordinator-shards "$shards" \
      --data-dir "$dir/broker-$i" --kafka-addr "127.0.0.1:$(kafka_port "$i")" --http-addr "127.0.0.1:$(http_port "$i")" \
      --kv-index-enabled --s3-create-bucket "${s3[@]}" ${budget[@]+"${budget[@]}"} ${broker_flags[@]+"${broker_flags[@]}"}
    wait_http "http://127.0.0.1:$(http_port "$i")/healthz"
  done
  status
}

down() {
  local i name
  for ((i = ${#names[@]} - 1; i >= 0; i--)); do
    name=${names[i]}
    case $name in
      coordinator-1) stop coordinator ;; # the earlier layout's
      nats-1) stop nats ;;
    esac
    stop "$name"
  done
}

stop() {
  local name=$1
  if running "$name"; then
    kill "$(cat "$dir/$name.pid")"
    for _ in $(seq 1 100); do running "$name" || break; sleep 0.1; done
    running "$name" && kill -9 "$(cat "$dir/$name.pid")"
    echo "$name: stopped"
  fi
  rm -f "$dir/$name.pid"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
