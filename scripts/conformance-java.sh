#!/usr/bin/env bash
# Runs the Java client conformance checks (conformance/java: kafka-clients and
# its Admin client) against a floe broker started here on free ports with a
# temp data dir, or against a given cluster:
#
#   ./scripts/conformance-java.sh                      # start floe, run every check
#   ./scripts/conformance-java.sh --against HOST:PORT  # run against a running cluster
#   ./scripts/conformance-java.sh --against-kafka      # start Apache Kafka 4.4 (scripts/kafka-local.sh)
#                                                      # and run the checks against it, proving them
#   ./scripts/conformance-java.sh [--against ...] REGEX  # only the checks whose name matches
#
# It prints one line per check and a summary:
#
#   PASS describe-cluster
#   FAIL delete-records: DeleteRecords low watermark: expected 5, got 0
#   ...
#   19 passed, 1 failed
#
# Maven and a JDK (17+) must be installed; the Maven dependencies are
# fetched once into a cached local repository, nothing is installed system-wide.
#
# Environment:
#   FLOE_M2           Maven local repository (default ~/.cache/floe-m2)
#   CHECK_TIMEOUT     seconds each check may take (default 60)
#   BROKER_LOG_LEVEL  the broker's --log-level (default info)
#   KEEP=1            keep the work dir (broker log) for inspection
#
# Exit status: that of the checks (0 when nothing failed). The broker's log is
# in $work/broker.log; on a failure its tail is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

against=""
filter=""
while [ $# -gt 0 ]; do
  case "$1" in
    --against) against="${2:?--against needs HOST:PORT}"; shift 2 ;;
    --against=*) against="${1#--against=}"; shift ;;
    --against-kafka) against=kafka; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) filter="$1"; shift ;;
  esac
done

m2="${FLOE_M2:-$HOME/.cache/floe-m2}"
work="$(mktemp -d)"
broker_pid=""
. scripts/kafka-local.sh
cleanup() {
  kafka_stop
  if [ -n "$broker_pid" ]; then
    kill "$broker_pid" 2>/dev/null || true
    wait "$broker_pid" 2>/dev/null || true
  fi
  if [ "${KEEP:-0}" = 1 ]; then
    echo "work dir kept: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# Build the checks and write their runtime classpath.
project=conformance/java
if ! mvn -q -B -Dmaven.repo.local="$m2" -f "$project/pom.xml" package >"$work/mvn.log" 2>&1; then
  echo "maven build failed:" >&2; tail -40 "$work/mvn.log" >&2; exit 1
fi
classpath="$project/target/classes:$(cat "$project/target/classpath.txt")"

bootstrap="$against"
if [ "$against" = kafka ]; then
  kafka_start "$work/kafka"
  bootstrap="$kafka_bootstrap"
  echo "kafka-clients conformance against Apache Kafka 4.4.0 at $bootstrap" >&2
elif [ -z "$bootstrap" ]; then
  go build -o "$work/broker" ./cmd/broker
  kafka_port="$(free_port)"
  http_port="$(free_port)"
  "$work/broker" --data-dir "$work/data" \
    --kafka-addr "127.0.0.1:$kafka_port" --http-addr "127.0.0.1:$http_port" \
    --log-level "${BROKER_LOG_LEVEL:-info}" >"$work/broker.log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 1 300); do
    if curl -sf "http://127.0.0.1:$http_port/healthz" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$broker_pid" 2>/dev/null; then
      echo "broker exited:" >&2; cat "$work/broker.log" >&2; exit 1
    fi
    sleep 0.1
  done
  bootstrap="127.0.0.1:$kafka_port"
  echo "kafka-clients conformance against floe at $bootstrap" >&2
else
  echo "kafka-clients conformance against $bootstrap" >&2
fi

status=0
start=$SECONDS
java -Dconformance.check.timeout.s="${CHECK_TIMEOUT:-60}" -cp "$classpath" floe.conformance.Main \
  "$bootstrap" ${filter:+"$filter"} || status=$?
echo "($((SECONDS - start)) s)" >&2
if [ "$status" -ne 0 ] && [ -n "$broker_pid" ]; then
  echo "--- tail of the broker's log (all of it in $work/broker.log with KEEP=1):" >&2
  tail -40 "$work/broker.log" >&2
elif [ "$status" -ne 0 ] && [ -n "$kafka_pid" ]; then
  echo "--- Kafka's log: $kafka_log (kept with KEEP=1)" >&2
fi
exit "$status"
