#!/usr/bin/env bash
# Storage lifecycle soak (issue 12): sustained produce on the embedded
# default (local-directory store) with consolidation and retention on, two
# consumer groups reading along, and every INTERVAL a line of what must
# level off: broker RSS, the coordinator's objects and WAL/segment bytes,
# its Pebble state, and the bytes in the store. Not part of the test suite.
#
#   ./scripts/soak-tiered.sh                          # 30 min at ~60 MiB/s, retention.ms 5 min
#   DURATION=5m RATE=30000 ./scripts/soak-tiered.sh   # records/s of RECORD_SIZE bytes
#   CONSOLIDATION=false ./scripts/soak-tiered.sh      # the same with consolidation off
#   CONSUMER_GROUPS=0 ./scripts/soak-tiered.sh                 # produce only
#
# KV_RATE (records/s, default 0: none) adds a compacted, indexed topic
# (kv.index.enabled) produced with KV_KEYS keys and read by KV_LOOKUPS
# GET /kv lookups a second, reported at the end with their latency. Issue
# 38's lifecycle soak (point 5) is
#
#   DURATION=20m RATE=20480 PARTITIONS=16 WAL_RETENTION=2m GC_GRACE=10m \
#     KV_RATE=2000 KV_LOOKUPS=471 ./scripts/soak-tiered.sh
#
# DATA_DIR puts the broker's data directory (its objects and its Pebble
# state) under another directory, e.g. a file system mounted for the run,
# instead of the temporary one; the run's subdirectory is removed at the end.
DURATION="${DURATION:-30m}"
RATE="${RATE:-61440}"                 # 60 MiB/s of 1 KiB records
RECORD_SIZE="${RECORD_SIZE:-1024}"
PARTITIONS="${PARTITIONS:-8}"
RETENTION_MS="${RETENTION_MS:-300000}"
WAL_RETENTION="${WAL_RETENTION:-1m}"
CONSOLIDATION="${CONSOLIDATION:-true}"
CONSUMER_GROUPS="${CONSUMER_GROUPS:-2}"
INTERVAL="${INTERVAL:-60}"
GC_GRACE="${GC_GRACE:-1m}"
KV_RATE="${KV_RATE:-0}"
KV_LOOKUPS="${KV_LOOKUPS:-471}"
KV_KEYS="${KV_KEYS:-100000}"
BROKER_FLAGS="${BROKER_FLAGS:-}"     # more broker flags, e.g. --memory-limit=1275068416
PROGRESS="${PROGRESS:-0}"           # e.g. 30s: a progress line with that interval's p99s
STORE="${STORE:-dir}"
. scripts/bench-lib.sh
data="$work/data"
if [ -n "${DATA_DIR:-}" ]; then
  data="$(mktemp -d "$DATA_DIR/soak-XXXXXX")"
  trap 'cleanup; rm -rf "$data"' EXIT
fi

[ "$STORE" = minio ] && start_minio
start_broker "$STORE" "$data" --wal-retention "$WAL_RETENTION" --gc-grace "$GC_GRACE" \
  --consolidation-enabled="$CONSOLIDATION" --tier-interval 5s --tier-poll-interval 1s --kv-index-enabled $BROKER_FLAGS
echo "broker pid $broker_pid, data in $data, $DURATION at $RATE records/s of $RECORD_SIZE B, retention.ms=$RETENTION_MS, wal retention $WAL_RETENTION, consolidation=$CONSOLIDATION, $CONSUMER_GROUPS groups"

consumers=(--consumers 0)
if [ "$CONSUMER_GROUPS" -gt 0 ]; then consumers=(--consumers 1 --group soak --consumer-groups "$CONSUMER_GROUPS"); fi
"$work/loadtest" --brokers "$kafka" --topic soak --create-topic --partitions "$PARTITIONS" \
  --topic-config "retention.ms=$RETENTION_MS,segment.bytes=134217728" \
  --producers 4 --rate "$RATE" --record-size "$RECORD_SIZE" --max-buffered 20000 --linger 5ms \
  "${consumers[@]}" --duration "$DURATION" --progress "$PROGRESS" --log-level warn --metrics-url "http://$http/metrics" \
  >"$work/loadtest.out" 2>&1 &
lt=$!
pids+=($lt)
if [ "$KV_RATE" != 0 ]; then
  "$work/loadtest" --brokers "$kafka" --topic soak-kv --create-topic --partitions 4 \
    --topic-config "cleanup.policy=compact,kv.index.enabled=true" \
    --producers 1 --rate "$KV_RATE" --record-size "$RECORD_SIZE" --key-space "$KV_KEYS" --consumers 0 \
    --kv-url "http://$http" --kv-lookups-rate "$KV_LOOKUPS" --duration "$DURATION" --progress 0 --log-level warn \
    >"$work/loadtest-kv.out" 2>&1 &
  pids+=($!)
fi

printf "%6s %9s %10s %9s %12s %12s %10s %12s %10s %12s\n" min rss_MiB objects live_obj wal_MiB seg_MiB segments meta_MiB store_MiB produced_MiB
start=$(date +%s)
# Sampling must not end the run: du races the collector's deletes, a
# scrape can time out under load.
set +e +o pipefail
num() { [ -n "$1" ] && echo "$1" || echo 0; }
while kill -0 "$lt" 2>/dev/null; do
  sleep "$INTERVAL"
  kill -0 "$lt" 2>/dev/null || break
  rss=$(awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$broker_pid/status")
  objs=$(metric floe_coordinator_objects)
  live=$(curl -s "http://$http/metrics" | awk '/^floe_coordinator_objects\{.*state="live"/ {s+=$2} END {printf "%.0f", s}')
  wal=$(num "$(metric floe_partition_wal_bytes)"); seg=$(num "$(metric floe_partition_segment_bytes)")
  segs=$(metric floe_partition_segments); meta=$(num "$(metric floe_coordinator_metadata_bytes)")
  store=$(du -sm "$data/objects" 2>/dev/null | cut -f1)
  [ "$STORE" = minio ] && store=$(du -smc "$work"/minio-* 2>/dev/null | tail -1 | cut -f1)
  prod=$(num "$(metric floe_ingest_object_size_bytes_sum)")
  printf "%6.1f %9s %10s %9s %12.0f %12.0f %10s %12.1f %10s %12.0f\n" "$(echo "($(date +%s)-$start)/60" | bc -l)" \
    "$rss" "$objs" "$live" "$((wal / 1048576))" "$((seg / 1048576))" "$segs" "$(echo "$meta/1048576" | bc -l)" "$store" "$((prod / 1048576))"
done
wait "$lt" || true
cat "$work/loadtest.out"
if [ "$KV_RATE" != 0 ]; then
  wait "${pids[-1]}" || true
  echo "=== the compacted, indexed topic and its /kv lookups"
  cat "$work/loadtest-kv.out"
fi
