#!/usr/bin/env bash
# Read-path benchmark (chunk cache issue): end-to-end latency at half the
# saturation rate and at low load, GETs per GiB consumed by three consumer
# groups reading one topic through one broker, and the cache hit ratio of
# tailing consumers, and one consumer catching up from the store past the
# chunk cache (CATCHUP_RECORDS produced at saturation first, default
# 2,500,000: 2.4 GiB, several times --cache-bytes; the page cache dropped
# when run as root; read for CATCHUP_READ, default 5s, less than the
# catch-up takes). Prints loadtest reports and cache
# counters; not part of the test suite.
#
#   ./scripts/bench-read.sh                 # dir and minio
#   STORES=minio RATE=60000 ./scripts/bench-read.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-15s}"
STORES="${STORES:-dir minio}"
RATE="${RATE:-20000}"   # records/s of 1 KiB, produced while three reader sets consume on the same 2 cores
. scripts/bench-lib.sh

cache_line() {
  local h m
  h=$(metric floe_cache_hits_total); m=$(metric floe_cache_misses_total)
  echo "cache: hits $h, misses $m, GETs $(metric floe_cache_gets_total), hit ratio $(python3 -c "print(f'{$h/max($h+$m,1)*100:.2f}%')")"
}

run_store() {
  local store="$1"
  [ "$store" = minio ] && start_minio
  start_broker "$store" "$work/data-$store"
  local lt=("$work/loadtest" --brokers "$kafka" --metrics-url "http://$http/metrics" --progress 0 --log-level warn)
  echo "=== $store: tailing consumers at $RATE records/s (1 KiB, 8 partitions), 3 reader sets ==="
  "${lt[@]}" --topic tail --create-topic --partitions 8 --producers 2 --record-size 1024 --rate "$RATE" \
    --consumers 1 --consumer-groups 3 --duration "$DURATION"
  cache_line
  echo "=== $store: three reader sets catching up from the start (cold reads through one broker) ==="
  stop_broker
  start_broker "$store" "$work/data-$store"   # same data, empty cache
  lt=("$work/loadtest" --brokers "$kafka" --metrics-url "http://$http/metrics" --progress 0 --log-level warn)
  "${lt[@]}" --topic tail --partitions 8 --producers 1 --rate 1 --record-size 1024 \
    --consumers 1 --consumer-groups 3 --from-start --duration "$DURATION"
  cache_line
  echo "=== $store: low load end to end (1 producer, 50 records/s, 1 KiB) ==="
  "${lt[@]}" --topic low --create-topic --partitions 1 --producers 1 --record-size 1024 --rate 50 \
    --consumers 1 --duration "$DURATION"
  echo "=== $store: one consumer catching up past the cache (${CATCHUP_RECORDS:-2500000} records produced at saturation first) ==="
  "${lt[@]}" --topic catchup --create-topic --partitions 8 --producers 4 --record-size 1024 --linger 2ms \
    --max-buffered 20000 --consumers 0 --duration 0 --records "${CATCHUP_RECORDS:-2500000}" | grep -A1 throughput
  stop_broker
  # Nothing of it in memory: as root, the page cache is dropped too.
  if [ "$(id -u)" -eq 0 ]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi
  start_broker "$store" "$work/data-$store"   # same data, empty cache
  lt=("$work/loadtest" --brokers "$kafka" --metrics-url "http://$http/metrics" --progress 0 --log-level warn)
  # Shorter than the catch-up takes, so that the consume rate is the read
  # rate (loadtest divides by the whole window).
  "${lt[@]}" --topic catchup --partitions 8 --producers 1 --rate 1 --record-size 1024 \
    --consumers 1 --from-start --duration "${CATCHUP_READ:-5s}"
  stop_broker
}

for s in $STORES; do run_store "$s"; done
