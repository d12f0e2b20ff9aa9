#!/usr/bin/env bash
# Objects a broker rolls on the embedded default's local directory under a
# steady produce load (issue 38, point 4): produce latency, objects a
# second and their mean size, from the broker's floe_ingest_object_size
# histogram. Not part of the test suite.
#
#   ./scripts/bench-object-rate.sh                          # 20 MiB/s from 2 producers, 30 s
#   RATE=96000 PARTITIONS=8 ./scripts/bench-object-rate.sh  # records/s of 1 KiB
#   BROKER_FLAGS=--ingest-early-roll-wait=-1ms ./scripts/bench-object-rate.sh  # without the early-roll wait
DURATION="${DURATION:-30s}"
RATE="${RATE:-20480}"
PRODUCERS="${PRODUCERS:-2}"
PARTITIONS="${PARTITIONS:-16}"
LINGER="${LINGER:-5ms}"
read -r -a broker_flags <<<"${BROKER_FLAGS:-}"
. scripts/bench-lib.sh

start_broker dir "$work/data" "${broker_flags[@]}"
count0=$(metric floe_ingest_object_size_bytes_count); sum0=$(metric floe_ingest_object_size_bytes_sum)
start=$(date +%s.%N)
"$work/loadtest" --brokers "$kafka" --topic objects --create-topic --partitions "$PARTITIONS" \
  --producers "$PRODUCERS" --rate "$RATE" --record-size 1024 --linger "$LINGER" --consumers 0 \
  --duration "$DURATION" --progress 0 --log-level warn
end=$(date +%s.%N)
count1=$(metric floe_ingest_object_size_bytes_count); sum1=$(metric floe_ingest_object_size_bytes_sum)
awk -v c=$((count1 - count0)) -v b=$((sum1 - sum0)) -v s="$start" -v e="$end" 'BEGIN {
  t = e - s
  printf "objects: %d in %.1f s = %.0f/s, mean %.0f KiB, %.0f per GiB\n", c, t, c / t, b / c / 1024, c / (b / 2^30)
}'
stop_broker
