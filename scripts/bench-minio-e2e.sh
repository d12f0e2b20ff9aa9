#!/usr/bin/env bash
# floe on MinIO under bench-vs-kafka.sh's end-to-end workload (2 producers at
# RATE, 1 consumer, 8 partitions, 1 KiB records, acks=all, idempotent), once
# per object size (--ingest-max-bytes): the produced rate, produce and
# end-to-end latency, PUTs per GiB and the mean PUT, and the CPU seconds
# MinIO, the broker and loadtest ran. It shows what floe on MinIO waits on
# when it falls behind the rate. Not part of the test suite.
#
#   ./scripts/bench-minio-e2e.sh
#   RATE=62000 OBJECT_BYTES="8388608 2097152" DURATION=30s ./scripts/bench-minio-e2e.sh
#   BROKER_FLAGS="--ingest-max-put-rate 25" OBJECT_BYTES=8388608 ./scripts/bench-minio-e2e.sh
#
# BROKER_FLAGS: more broker flags, the same for every object size.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE="${RATE:-70000}"
DURATION="${DURATION:-20s}"
OBJECT_BYTES="${OBJECT_BYTES:-8388608 4194304 2097152}"
read -r -a broker_flags <<< "${BROKER_FLAGS:-}"
. scripts/bench-lib.sh

# cpu PID: the CPU seconds the process has run (user and system).
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f\n", ($14 + $15) / hz }' "/proc/$1/stat"; }

for bytes in $OBJECT_BYTES; do
  start_minio
  start_broker minio "$work/data-$bytes" --ingest-max-bytes "$bytes" ${broker_flags[@]+"${broker_flags[@]}"}
  m0=$(cpu "$minio_pid"); b0=$(cpu "$broker_pid")
  echo "=== --ingest-max-bytes $bytes ${BROKER_FLAGS:-}, $RATE records/s ==="
  "$work/loadtest" --brokers "$kafka" --metrics-url "http://$http/metrics" --progress 0 --log-level warn \
    --topic e2e --create-topic --record-size 1024 --duration "$DURATION" --warmup 3s \
    --partitions 8 --producers 2 --consumers 1 --rate "$RATE" &
  lt_pid=$!
  lt_cpu=0
  while kill -0 "$lt_pid" 2>/dev/null; do lt_cpu=$(cpu "$lt_pid" 2>/dev/null || echo "$lt_cpu"); sleep 0.5; done
  wait "$lt_pid"
  echo "cpu seconds: MinIO $(python3 -c "print(round($(cpu "$minio_pid") - $m0, 1))"), broker $(python3 -c "print(round($(cpu "$broker_pid") - $b0, 1))"), loadtest $lt_cpu (of 2 cores)"
  stop_broker
  stop_minio
  rm -rf "$work/data-$bytes" "$work"/minio-*
done
