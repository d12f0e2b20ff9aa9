#!/usr/bin/env bash
# The S3 cost knob, measured: for each early-roll budget
# (--ingest-max-put-rate, with --ingest-max-puts-per-gib at PER_GIB), a broker on a real MinIO runs a low load (one
# producer, 1 KiB records, 100 requests/s, one in flight) and a medium load
# (one producer at about 20 MiB/s, three tailing consumer groups), and the
# script prints one table row per budget: PUTs per second and per GiB
# produced, the PUT bill per broker per month at S3 Standard's list price
# ($0.005 per 1,000 PUTs), and produce p50/p99 at both loads. Not part of
# the test suite.
#
#   ./scripts/bench-put-budget.sh
#   BUDGETS="10 100" DURATION=30s ./scripts/bench-put-budget.sh
#   BUDGETS=10 PER_GIB=-1 ./scripts/bench-put-budget.sh   # no per-GiB budget
DURATION="${DURATION:-20s}"
BUDGETS="${BUDGETS:-1 10 25 100}"
PER_GIB="${PER_GIB:-512}" # the S3 default
. scripts/bench-lib.sh

start_minio
row() { # budget per-gib json-low json-medium
  python3 - "$@" <<'PY'
import json, sys
b, g, low, med = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
def puts(r):
    return r["object_store"]["puts"], r["elapsed_s"], r["object_store"]["puts_per_gib_produced"]
pl, el, _ = puts(low)
pm, em, gib = puts(med)
month = 30 * 24 * 3600
print(f"| {b} | {g} | {pl/el:.1f} | {pm/em:.1f} | {gib:,.0f} | ${pl/el*month*0.005/1000:,.0f} | ${pm/em*month*0.005/1000:,.0f} | "
      f"{low['produce']['latency']['p50_ms']:.1f} / {low['produce']['latency']['p99_ms']:.1f} | "
      f"{med['produce']['latency']['p50_ms']:.1f} / {med['produce']['latency']['p99_ms']:.1f} | {med['produce']['mib_per_s']:.1f} |")
PY
}
echo "| budget (PUT/s) | per GiB | PUT/s low | PUT/s medium | PUTs/GiB medium | \$/month low | \$/month medium | produce p50/p99 ms low | produce p50/p99 ms medium | MiB/s medium |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for b in $BUDGETS; do
  start_broker minio "$work/data-$b" --ingest-max-put-rate "$b" --ingest-max-puts-per-gib "$PER_GIB"
  lt=("$work/loadtest" --brokers "$kafka" --metrics-url "http://$http/metrics" --progress 0 --log-level warn)
  "${lt[@]}" --topic "low-$b" --create-topic --partitions 1 --producers 1 --consumers 0 --record-size 1024 --rate 100 \
    --idempotent=false --max-inflight 1 --duration "$DURATION" --json "$work/low-$b.json" >/dev/null
  "${lt[@]}" --topic "med-$b" --create-topic --partitions 8 --producers 1 --consumer-groups 3 --group "g-$b" --consumers 1 \
    --record-size 1024 --rate 20480 --duration "$DURATION" --json "$work/med-$b.json" >/dev/null
  stop_broker
  row "$b" "$PER_GIB" "$work/low-$b.json" "$work/med-$b.json"
done
