#!/usr/bin/env bash
# Issue 38's target workload: a 3-broker cluster (dev/cluster.sh: MinIO, a
# 3-node NATS, two coordinators at --replicas 3, three brokers) with MinIO
# behind an S3 latency profile (S3_PROFILE, default s3-standard), 1 KiB
# records at RATE records/s (default 51,200: 50 MiB/s) from 2 producers to
# 16 partitions, acks=all, idempotent, with 3 consumer groups reading
# everything. Prints loadtest's report (produce and end-to-end latency,
# PUTs and GETs per GiB over the three brokers) and the CPU seconds each
# process ran. Not part of the test suite.
#
#   ./scripts/bench-s3-cluster.sh
#   S3_PROFILE=slow-tail RATE=20000 DURATION=60s ./scripts/bench-s3-cluster.sh
#   BROKER_FLAGS="--ingest-linger 100ms" LINGER=50ms ./scripts/bench-s3-cluster.sh
#
# GROUPS_N sets the consumer groups, LINGER the producers' linger (5ms).
set -euo pipefail
cd "$(dirname "$0")/.."
export S3_PROFILE="${S3_PROFILE:-s3-standard}"
RATE="${RATE:-51200}"
DURATION="${DURATION:-30s}"
GROUPS_N="${GROUPS_N:-3}"
LINGER="${LINGER:-5ms}" # the producers' linger.ms (Kafka 4's default: 5 ms)
export FLOE_DEV_DIR
FLOE_DEV_DIR="$(mktemp -d)"
export FLOE_DEV_PORT_BASE="${FLOE_DEV_PORT_BASE:-$((20000 + RANDOM % 20000))}"
cleanup() { dev/cluster.sh down >/dev/null 2>&1 || true; rm -rf "$FLOE_DEV_DIR"; }
trap cleanup EXIT
dev/cluster.sh up >/dev/null
go build -o "$FLOE_DEV_DIR/bin/loadtest" ./cmd/loadtest
b=$FLOE_DEV_PORT_BASE
brokers="127.0.0.1:$((b + 10)),127.0.0.1:$((b + 11)),127.0.0.1:$((b + 12))"
metrics="http://127.0.0.1:$((b + 20))/metrics,http://127.0.0.1:$((b + 21))/metrics,http://127.0.0.1:$((b + 22))/metrics"

# cpu NAME: the CPU seconds the cluster's process ran (user and system).
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$(cat "$FLOE_DEV_DIR/$1.pid")/stat"; }
procs=(minio s3-proxy nats-1 nats-2 nats-3 coordinator-1 coordinator-2 broker-1 broker-2 broker-3)
declare -A cpu0
for p in "${procs[@]}"; do cpu0[$p]=$(cpu "$p" 2>/dev/null || echo 0); done

echo "=== $S3_PROFILE: 3 brokers, $RATE records/s of 1 KiB, 16 partitions, 2 producers, $GROUPS_N consumer groups, $DURATION ==="
"$FLOE_DEV_DIR/bin/loadtest" --brokers "$brokers" --metrics-url "$metrics" --progress 0 --log-level warn \
  --topic bench --create-topic --partitions 16 --record-size 1024 --rate "$RATE" --duration "$DURATION" --warmup 5s \
  --producers 2 --consumers 1 --consumer-groups "$GROUPS_N" --linger "$LINGER"
line="cpu seconds:"
for p in "${procs[@]}"; do
  line+=" $p $(python3 -c "print(round($(cpu "$p" 2>/dev/null || echo 0) - ${cpu0[$p]}, 1))")"
done
echo "$line"

# What the brokers saw, summed over the three: quantiles of their
# histograms (the upper bound of the bucket that holds the quantile).
python3 - "${metrics//,/ }" <<'PY'
import re, sys, urllib.request
want = {
    "Produce, broker side": ('floe_kafka_request_duration_seconds_bucket', 'api="Produce"'),
    "PUT": ('floe_objectstore_request_duration_seconds_bucket', 'op="put"'),
    "commit": ('floe_ingest_commit_duration_seconds_bucket', ''),
}
buckets = {k: {} for k in want}
for url in sys.argv[1].split():
    for line in urllib.request.urlopen(url, timeout=10).read().decode().splitlines():
        for k, (name, label) in want.items():
            if line.startswith(name + "{") and label in line:
                le = re.search(r'le="([^"]+)"', line).group(1)
                buckets[k][le] = buckets[k].get(le, 0) + float(line.rsplit(" ", 1)[1])
hedges = {}
for url in sys.argv[1].split():
    for line in urllib.request.urlopen(url, timeout=10).read().decode().splitlines():
        if line.startswith("floe_objectstore_hedges_total{"):
            key = re.search(r'op="(\w+)"', line).group(1) + (" won" if 'won="true"' in line else " lost")
            hedges[key] = hedges.get(key, 0) + float(line.rsplit(" ", 1)[1])
print("hedged requests: " + (", ".join(f"{k} {int(v)}" for k, v in sorted(hedges.items())) or "none"))
for k, b in buckets.items():
    if not b:
        print(f"{k}: no samples"); continue
    les = sorted(b, key=lambda x: float("inf") if x == "+Inf" else float(x))
    total = b["+Inf"]
    out = []
    for q in (0.5, 0.99, 0.999):
        le = next(l for l in les if b[l] >= q * total)
        out.append(f"p{q*100:g} <= {le if le == '+Inf' else round(float(le)*1000, 1)} ms")
    print(f"{k}: {int(total)} samples, " + ", ".join(out))
PY
