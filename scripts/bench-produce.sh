#!/usr/bin/env bash
# Produce benchmark for the foundation issue: saturation throughput and
# low-load latency of one producer, on the local-directory store and on a
# real MinIO. Prints loadtest reports; not part of the test suite.
#
#   ./scripts/bench-produce.sh            # both stores
#   STORES=dir ./scripts/bench-produce.sh # one store
#   DURATION=30s ./scripts/bench-produce.sh
DURATION="${DURATION:-15s}"
STORES="${STORES:-dir minio}"
. scripts/bench-lib.sh

run_store() {
  local store="$1"
  [ "$store" = minio ] && start_minio
  start_broker "$store" "$work/data-$store"
  local lt=("$work/loadtest" --brokers "$kafka" --metrics-url "http://$http/metrics" --progress 0 --log-level warn)
  echo "=== $store: saturation (4 producers, 1 KiB records, 8 partitions, flat out) ==="
  "${lt[@]}" --topic sat --create-topic --partitions 8 --producers 4 --consumers 0 --record-size 1024 --max-buffered 20000 \
    --linger 2ms --duration "$DURATION"
  echo "=== $store: low load (1 producer, 1 KiB records, one request in flight, 20 records/s) ==="
  "${lt[@]}" --topic low --create-topic --partitions 1 --producers 1 --consumers 0 --record-size 1024 --rate 20 \
    --idempotent=false --max-inflight 1 --duration "$DURATION"
  stop_broker
}

for s in $STORES; do run_store "$s"; done
