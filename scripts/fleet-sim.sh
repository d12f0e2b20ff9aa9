#!/usr/bin/env bash
# The fleet simulator against a real coordinator (issue 39): builds the
# binaries, starts a 3-node NATS cluster with JetStream and one coordinator
# leading its log at --replicas $REPLICAS, all on 127.0.0.1 and free ports,
# runs cmd/fleetsim with the sizes below, prints its report and stops
# everything. No object store: the coordinator needs none for commits and
# finds (see package loadtest/fleet).
#
#   ./scripts/fleet-sim.sh                                   # 8 brokers, 1,000 partitions, 100 objects/s of 10 batches, 30 s
#   BROKERS=256 PARTITIONS=100000 TOPICS=100 RATE=1300 BATCHES=600 ./scripts/fleet-sim.sh   # the 10 GiB/s cluster
#   REPLICAS=1 ./scripts/fleet-sim.sh                        # an R1 log, for comparison
#   PROFILE=20 ./scripts/fleet-sim.sh                        # and a 20 s CPU profile of the leader after the warmup
#   SHARDS=4 PROFILE=20 PROFILE_SHARD=1 ./scripts/fleet-sim.sh # ... of shard 1's leader
#   SHARDS=4 ./scripts/fleet-sim.sh                          # a coordinator of 4 shards, one process each (--shards, --shard)
#   SHARDS=4 CPUS="0 1 0 1" ./scripts/fleet-sim.sh           # shard i pinned to CPU ${CPUS[i]} (taskset)
#
# Sizes: BROKERS (8), PARTITIONS (1000), TOPICS (10), RATE objects/s (100),
# BATCHES per object (10), CONSUMERS (8), CONSUMER_PARTITIONS (32),
# CONSUMER_GROUPS (4), DURATION (30s), WARMUP (5s); FLEETSIM_FLAGS adds fleetsim
# flags, COORDINATOR_FLAGS coordinator flags. OUT (a new directory) keeps
# the JSON report (report.json), the profiles (cpu.pprof, heap.pprof after
# the load, with the coordinator binary beside them) and the logs.
set -euo pipefail
cd "$(dirname "$0")/.."
gobin="${FLOE_GOBIN:-$HOME/.cache/floe-gobin}"
REPLICAS="${REPLICAS:-3}" SHARDS="${SHARDS:-1}"
read -r -a cpus <<< "${CPUS:-}"
BROKERS="${BROKERS:-8}" PARTITIONS="${PARTITIONS:-1000}" TOPICS="${TOPICS:-10}"
RATE="${RATE:-100}" BATCHES="${BATCHES:-10}"
CONSUMERS="${CONSUMERS:-8}" CONSUMER_PARTITIONS="${CONSUMER_PARTITIONS:-32}" CONSUMER_GROUPS="${CONSUMER_GROUPS:-4}"
DURATION="${DURATION:-30s}" WARMUP="${WARMUP:-5s}" PROFILE="${PROFILE:-0}" PROFILE_SHARD="${PROFILE_SHARD:-0}"
read -r -a fleetsim_flags <<< "${FLEETSIM_FLAGS:-}"
read -r -a coordinator_flags <<< "${COORDINATOR_FLAGS:-}"
work="$(mktemp -d)"
out="${OUT:-$work/out}"
mkdir -p "$out"
pids=()
cleanup() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -z "${OUT:-}" ]; then rm -rf "$work"; else rm -rf "$work/nats-"* "$work/coordinator"*; fi
}
trap cleanup EXIT

nats_version=$(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
if [ ! -x "$gobin/nats-server" ]; then
  GOBIN="$gobin" go install "github.com/nats-io/nats-server/v2@$nats_version"
fi
go build -o "$out/coordinator" ./cmd/coordinator
go build -o "$work/fleetsim" ./cmd/fleetsim

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_http() { # url, what it must start with (optional)
  local body
  for _ in $(seq 1 600); do
    if body=$(curl -sf "$1" 2>/dev/null) && [[ $body == "${2:-}"* ]]; then return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for $1 (logs in $out)" >&2
  return 1
}

client=() route=() monitor=()
for i in 1 2 3; do client+=("$(free_port)"); route+=("$(free_port)"); monitor+=("$(free_port)"); done
routes="nats://127.0.0.1:${route[0]},nats://127.0.0.1:${route[1]},nats://127.0.0.1:${route[2]}"
nats_urls="nats://127.0.0.1:${client[0]},nats://127.0.0.1:${client[1]},nats://127.0.0.1:${client[2]}"
for i in 0 1 2; do
  "$gobin/nats-server" --server_name "nats-$i" -a 127.0.0.1 -p "${client[i]}" -m "${monitor[i]}" -js -sd "$work/nats-$i" \
    --cluster_name fleet --cluster "nats://127.0.0.1:${route[i]}" --routes "$routes" >"$out/nats-$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do wait_http "http://127.0.0.1:${monitor[i]}/healthz?js-enabled-only=true"; done

# One coordinator process a shard, shard 0 first (the others follow its
# topics); shard i's logs in coordinator-$i.log (shard 0's in
# coordinator.log).
shard_pids=() shard_http=()
for ((s = 0; s < SHARDS; s++)); do
  port=$(free_port)
  pin=()
  if [ ${#cpus[@]} -gt 0 ]; then pin=(taskset -c "${cpus[s % ${#cpus[@]}]}"); fi
  log="$out/coordinator.log"; [ "$s" = 0 ] || log="$out/coordinator-$s.log"
  ${pin[@]+"${pin[@]}"} "$out/coordinator" --coordinator-id "fleet-coordinator-$s" --data-dir "$work/coordinator-$s" --nats-url "$nats_urls" \
    --replicas "$REPLICAS" --http-addr "127.0.0.1:$port" --pprof --consolidation-enabled=false --shards "$SHARDS" --shard "$s" \
    ${coordinator_flags[@]+"${coordinator_flags[@]}"} >"$log" 2>&1 &
  shard_pids+=($!) shard_http+=("$port")
  pids+=($!)
  wait_http "http://127.0.0.1:$port/healthz" leader
done
coordinator_pid=${shard_pids[0]} http_port=${shard_http[0]}
others=$(IFS=,; echo "${shard_pids[*]:1}")
echo "NATS $nats_urls; coordinator pids ${shard_pids[*]} lead $SHARDS shard(s), R$REPLICAS logs, http://127.0.0.1:$http_port (shard 0)" >&2

if [ "$PROFILE" != 0 ]; then
  # After the warmup and the topics' creation (a few seconds at 100,000
  # partitions), for PROFILE seconds.
  ( sleep "$(( ${WARMUP%s} + 5 ))"
    curl -sf -o "$out/cpu.pprof" "http://127.0.0.1:${shard_http[PROFILE_SHARD]}/debug/pprof/profile?seconds=$PROFILE" &&
      echo "CPU profile of shard $PROFILE_SHARD's leader: go tool pprof -top $out/coordinator $out/cpu.pprof" >&2 ) &
  pids+=($!)
fi

status=0
"$work/fleetsim" --nats-url "$nats_urls" --brokers "$BROKERS" --partitions "$PARTITIONS" --topics "$TOPICS" \
  --objects-per-second "$RATE" --batches-per-object "$BATCHES" --consumers "$CONSUMERS" \
  --consumer-partitions "$CONSUMER_PARTITIONS" --groups "$CONSUMER_GROUPS" --duration "$DURATION" --warmup "$WARMUP" \
  --coordinator-pid "$coordinator_pid" --coordinator-metrics-url "http://127.0.0.1:$http_port/metrics" \
  --shards "$SHARDS" --shard-pids "$others" \
  --report "$out/report.json" ${fleetsim_flags[@]+"${fleetsim_flags[@]}"} || status=$?
if [ "$PROFILE" != 0 ]; then wait "${pids[-1]}" 2>/dev/null || true; fi
# The leader's heap after the load: what its memory per partition and per
# object is made of (go tool pprof -sample_index=inuse_space -top).
curl -sf -o "$out/heap.pprof" "http://127.0.0.1:$http_port/debug/pprof/heap" || true
# The other processes' CPU (10 ms ticks), since their start: on one machine
# they share its cores with the coordinator.
cpu_s() { awk '{ split($0, a, ") "); split(a[2], f, " "); printf "%.1f", (f[12] + f[13]) / 100 }' "/proc/$1/stat"; }
coords=""; for p in "${shard_pids[@]}"; do coords="$coords $(cpu_s "$p")"; done
echo "CPU seconds since start: nats-server $(cpu_s "${pids[0]}") $(cpu_s "${pids[1]}") $(cpu_s "${pids[2]}"), coordinator (by shard)$coords" >&2
echo "report: $out/report.json" >&2
exit "$status"
