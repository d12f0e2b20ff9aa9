#!/usr/bin/env bash
# Apache Kafka as the benchmark peer: starts a single-node Apache Kafka 4.4
# (KRaft, from Maven Central's jars, data in a temp dir on this machine's
# disk, its shipped server.properties and default flush settings; see
# scripts/kafka-local.sh), floe on the embedded default (local directory) and
# floe on a MinIO started here, and runs the same loadtest workloads against
# each, one system after the other (all three running, but saturation one at
# a time):
#
#   saturation   4 producers flat out, 1 KiB records, 8 partitions, linger 2ms
#   low load     1 producer, 20 records/s, one request in flight, 1 partition
#   end to end   2 producers at E2E_RATE, 1 consumer, 8 partitions; E2E_RATE
#                defaults to half the lowest of the three saturation rates, so
#                every system gets the same offered load
#   3 groups     2 producers at GROUPS_RATE (default E2E_RATE/2), 3 consumer
#                groups of 1 consumer each reading the topic; its warmup
#                (GROUPS_WARMUP, default 6s) leaves out the joins, which on
#                Kafka wait group.initial.rebalance.delay.ms (3 s by default)
#
# Every workload uses acks=all (idempotent except low load), random 1 KiB
# values, no /kv lookups (floe-only). It ends with a Markdown table of each
# figure side by side with floe's ratio to Kafka (throughput: >1 is floe
# faster; latency: <1 is floe faster). Not part of the test suite; it takes
# about 6 minutes with the defaults.
#
#   ./scripts/bench-vs-kafka.sh
#   DURATION=30s E2E_RATE=20000 ./scripts/bench-vs-kafka.sh
#
# Environment: DURATION (each workload, default 15s), WARMUP (default 3s),
# SAT_DURATION, SAT_WARMUP (saturation, default 60s and 5s; the systems run
# it one at a time, each deleting its data after it, as it writes GBs),
# E2E_RATE, GROUPS_RATE (records/s), JSON_DIR (keep the loadtest JSON
# reports there), FLOE_M2 (Maven repository, default ~/.cache/floe-m2),
# MINIO_BROKER_FLAGS (the flags of the broker on MinIO; default
# "--ingest-put-budget none": a MinIO of one's own bills nothing per PUT, so
# the broker rolls and uploads for latency, not for the S3 bill; set it to
# "--ingest-put-budget s3" for the PUT budget of AWS).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-15s}"
WARMUP="${WARMUP:-3s}"
# Saturation is measured sustained: Kafka acks from the page cache, so for
# its first seconds (until the dirty pages reach vm.dirty_ratio) it runs
# faster than the disk can write, and a short run measures that burst
# instead of what it keeps up. 60s writes about 17 GB per system here; each
# deletes its data after its run.
SAT_DURATION="${SAT_DURATION:-60s}"
SAT_WARMUP="${SAT_WARMUP:-5s}"
. scripts/bench-lib.sh
. scripts/kafka-local.sh
trap 'kafka_stop; cleanup' EXIT
trap 'exit 130' INT TERM

out="${JSON_DIR:-$work/json}"
mkdir -p "$out"

declare -A boot metrics spid
MINIO_BROKER_FLAGS="${MINIO_BROKER_FLAGS---ingest-put-budget none}"
read -r -a minio_flags <<< "$MINIO_BROKER_FLAGS"
minio_pid=""
# start_sys SYSTEM: starts kafka, dir (floe embedded) or minio (MinIO and floe on it).
start_sys() {
  case "$1" in
    kafka) kafka_start "$work/kafka"; boot[kafka]="$kafka_bootstrap"; metrics[kafka]="" ;;
    dir) start_broker dir "$work/data-dir"; boot[dir]="$kafka"; metrics[dir]="http://$http/metrics"; spid[dir]=$broker_pid ;;
    minio) start_minio
      start_broker minio "$work/data-minio" ${minio_flags[@]+"${minio_flags[@]}"}; boot[minio]="$kafka"; metrics[minio]="http://$http/metrics"; spid[minio]=$broker_pid ;;
  esac
}
# stop_sys SYSTEM: stops it and deletes its data (the disk holds one run at a time).
stop_sys() {
  case "$1" in
    kafka) kafka_stop; rm -rf "$work/kafka" ;;
    dir) kill "${spid[dir]}"; wait "${spid[dir]}" 2>/dev/null || true; rm -rf "$work/data-dir" ;;
    minio) kill "${spid[minio]}"; wait "${spid[minio]}" 2>/dev/null || true
      stop_minio; rm -rf "$work/data-minio" "$work"/minio-* ;;
  esac
}
systems=(kafka dir minio)
echo "work dir $work; free disk: $(df -h --output=avail "$work" | tail -1)" >&2

# lt SYSTEM NAME loadtest-flags...: one workload against one system.
lt() {
  local sys="$1" name="$2"; shift 2
  local m=()
  [ -n "${metrics[$sys]}" ] && m=(--metrics-url "${metrics[$sys]}")
  echo "=== $sys: $name" >&2
  "$work/loadtest" --brokers "${boot[$sys]}" "${m[@]}" --progress 0 --log-level warn \
    --topic "$name" --create-topic --record-size 1024 --duration "$DURATION" --warmup "$WARMUP" \
    --json "$out/$name-$sys.json" "$@" >"$out/$name-$sys.txt" 2>&1 || {
      echo "loadtest failed:" >&2; cat "$out/$name-$sys.txt" >&2; return 1; }
  sed -n '/throughput/,/^errors/p' "$out/$name-$sys.txt" >&2
}

json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$@"; }

# Saturation writes GBs: one system at a time, its data deleted after it.
for s in "${systems[@]}"; do
  start_sys "$s"
  lt "$s" sat --partitions 8 --producers 4 --consumers 0 --max-buffered 20000 --linger 2ms \
    --duration "$SAT_DURATION" --warmup "$SAT_WARMUP"
  stop_sys "$s"
done
for s in "${systems[@]}"; do start_sys "$s"; done
echo "kafka ${boot[kafka]}, floe dir ${boot[dir]}, floe minio ${boot[minio]}" >&2
if [ -z "${E2E_RATE:-}" ]; then
  E2E_RATE=$(for s in "${systems[@]}"; do json "$out/sat-$s.json" 'd["produce"]["records_per_s"]'; done |
    sort -g | head -1 | awk '{ printf "%d\n", int($1 / 2 / 1000) * 1000 }')
fi
GROUPS_RATE="${GROUPS_RATE:-$((E2E_RATE / 2))}"
echo "end-to-end rate $E2E_RATE records/s, 3-group rate $GROUPS_RATE records/s" >&2
for s in "${systems[@]}"; do
  lt "$s" low --partitions 1 --producers 1 --consumers 0 --rate 20 --idempotent=false --max-inflight 1
done
for s in "${systems[@]}"; do
  lt "$s" e2e --partitions 8 --producers 2 --consumers 1 --rate "$E2E_RATE"
done
for s in "${systems[@]}"; do
  lt "$s" groups --partitions 8 --producers 2 --consumers 1 --consumer-groups 3 --group bench --rate "$GROUPS_RATE" \
    --warmup "${GROUPS_WARMUP:-6s}"
done

python3 - "$out" "$E2E_RATE" "$GROUPS_RATE" "$(nproc)" "${MINIO_BROKER_FLAGS:-}" <<'EOF'
import json, sys, os
out, e2e_rate, groups_rate, cores, minio_flags = sys.argv[1:6]
def r(name, sys_):
    return json.load(open(os.path.join(out, f"{name}-{sys_}.json")))
rows = [
    ("saturation produce", "MiB/s", "sat", lambda d: d["produce"]["mib_per_s"], True),
    ("saturation produce", "records/s", "sat", lambda d: d["produce"]["records_per_s"], True),
    ("saturation produce", "produce p99 ms", "sat", lambda d: d["produce"]["latency"]["p99_ms"], False),
    ("low load (20/s)", "produce p50 ms", "low", lambda d: d["produce"]["latency"]["p50_ms"], False),
    ("low load (20/s)", "produce p99 ms", "low", lambda d: d["produce"]["latency"]["p99_ms"], False),
    (f"end to end ({e2e_rate}/s)", "produced records/s", "e2e", lambda d: d["produce"]["records_per_s"], True),
    (f"end to end ({e2e_rate}/s)", "e2e p50 ms", "e2e", lambda d: d["consume"]["end_to_end"]["p50_ms"], False),
    (f"end to end ({e2e_rate}/s)", "e2e p99 ms", "e2e", lambda d: d["consume"]["end_to_end"]["p99_ms"], False),
    (f"3 groups ({groups_rate}/s)", "produced records/s", "groups", lambda d: d["produce"]["records_per_s"], True),
    (f"3 groups ({groups_rate}/s)", "e2e p50 ms", "groups", lambda d: d["consume"]["end_to_end"]["p50_ms"], False),
    (f"3 groups ({groups_rate}/s)", "e2e p99 ms", "groups", lambda d: d["consume"]["end_to_end"]["p99_ms"], False),
]
def fmt(v):
    return f"{v:,.0f}" if v >= 1000 else (f"{v:.1f}" if v >= 10 else f"{v:.2f}")
print()
minio_col = f"floe on MinIO (`{minio_flags}`)" if minio_flags else "floe on MinIO"
print(f"| workload | figure | Kafka 4.4 (local disk) | floe embedded | floe/Kafka | {minio_col} | floe/Kafka |")
print("|---|---|--:|--:|--:|--:|--:|")
notes = []
for wl, fig, name, f, _ in rows:
    k, d, m = (f(r(name, s)) for s in ("kafka", "dir", "minio"))
    ratio = lambda v: f"{v / k:.2f}×" if k else "-"
    print(f"| {wl} | {fig} | {fmt(k)} | {fmt(d)} | {ratio(d)} | {fmt(m)} | {ratio(m)} |")
for name in ("sat", "low", "e2e", "groups"):
    for s in ("kafka", "dir", "minio"):
        d = r(name, s)
        if d.get("errors_total"):
            notes.append(f"{name} on {s}: {d['errors_total']} errors {d['errors']}")
        if name in ("e2e", "groups") and not d["consume"].get("caught_up", True):
            notes.append(f"{name} on {s}: consumers did not catch up")
print()
print(f"1 KiB records, acks=all; {cores} cores; throughput ratio > 1 and latency ratio < 1 favour floe.")
for n in notes:
    print("note:", n)
EOF
