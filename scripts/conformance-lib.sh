# Shared by the conformance scripts: a work dir removed on exit (kept with
# KEEP=1), free ports, a floe broker on the embedded default, and a Maven
# project's runtime classpath from the cached repository. Source it after
# `set -euo pipefail` and `cd` to the repository root.
#
#   on_exit+=(fn)                 run fn at exit, before the work dir goes
#   start_floe [broker flags...]  build and start a broker; sets bootstrap,
#                                 broker_pid (its log: $work/broker.log; with
#                                 FLOE_INSTANCE=x, data and log are suffixed x);
#                                 every broker started is stopped at exit
#   maven_classpath PROJECT       `mvn package` PROJECT into $FLOE_M2; sets
#                                 classpath (PROJECT/target/classpath.txt)
#   broker_log_tail               the broker log's tail, after a failure
#
# For a client's checks program that takes BOOTSTRAP [REGEXP] and prints
# PASS/FAIL lines (conformance-sarama.sh, -kafkajs.sh, -python.sh):
#
#   client_args "$@"              parse --against HOST:PORT, --against-kafka,
#                                 -h (the calling script's header) and REGEX;
#                                 sets against and filter
#   client_target LABEL           start floe or Apache Kafka (scripts/
#                                 kafka-local.sh) or take --against; sets
#                                 bootstrap and says which on stderr; against
#                                 Kafka exports CONFORMANCE_KAFKA=1, which
#                                 leaves out the floe-* checks
#   client_run CMD...             run CMD... "$bootstrap" [REGEX], then the
#                                 broker's or Kafka's log after a failure;
#                                 exits with CMD's status

m2="${FLOE_M2:-$HOME/.cache/floe-m2}"
work="$(mktemp -d)"
broker_pid=""
broker_pids=()
on_exit=()
conformance_cleanup() {
  local fn
  for fn in "${on_exit[@]}"; do "$fn" || true; done
  local pid
  for pid in ${broker_pids[@]+"${broker_pids[@]}"}; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "${KEEP:-0}" = 1 ]; then
    echo "work dir kept: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap conformance_cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

start_floe() {
  go build -o "$work/broker" ./cmd/broker
  local kafka_port http_port
  kafka_port="$(free_port)"
  http_port="$(free_port)"
  "$work/broker" --data-dir "$work/data${FLOE_INSTANCE:-}" \
    --kafka-addr "127.0.0.1:$kafka_port" --http-addr "127.0.0.1:$http_port" \
    --log-level "${BROKER_LOG_LEVEL:-info}" "$@" >"$work/broker${FLOE_INSTANCE:-}.log" 2>&1 &
  broker_pid=$!
  broker_pids+=("$broker_pid")
  for _ in $(seq 1 300); do
    if curl -sf "http://127.0.0.1:$http_port/healthz" >/dev/null 2>&1; then
      bootstrap="127.0.0.1:$kafka_port"
      return 0
    fi
    if ! kill -0 "$broker_pid" 2>/dev/null; then
      echo "broker exited:" >&2; cat "$work/broker${FLOE_INSTANCE:-}.log" >&2; exit 1
    fi
    sleep 0.1
  done
  echo "broker not healthy within 30s:" >&2; tail -40 "$work/broker${FLOE_INSTANCE:-}.log" >&2; exit 1
}

maven_classpath() {
  local project="$1"
  if ! mvn -q -B -Dmaven.repo.local="$m2" -f "$project/pom.xml" package >"$work/mvn.log" 2>&1; then
    echo "maven build of $project failed:" >&2; tail -40 "$work/mvn.log" >&2; exit 1
  fi
  classpath="$(cat "$project/target/classpath.txt")"
}

broker_log_tail() {
  echo "--- tail of the broker's log (all of it in $work/broker.log with KEEP=1):" >&2
  tail -40 "$work/broker.log" >&2
}

client_args() {
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
}

client_target() {
  local label="$1"
  if [ "$against" = kafka ]; then
    . scripts/kafka-local.sh
    on_exit+=(kafka_stop)
    kafka_start "$work/kafka"
    bootstrap="$kafka_bootstrap"
    # The floe-* checks exercise floe's own features (hierarchical topics).
    export CONFORMANCE_KAFKA=1
    echo "$label conformance against Apache Kafka 4.4.0 at $bootstrap" >&2
  elif [ -z "$against" ]; then
    unset CONFORMANCE_KAFKA # floe runs the floe-* checks too
    start_floe
    echo "$label conformance against floe at $bootstrap" >&2
  else
    bootstrap="$against"
    echo "$label conformance against $bootstrap" >&2
  fi
}

client_run() {
  local status=0 start=$SECONDS
  "$@" "$bootstrap" ${filter:+"$filter"} || status=$?
  echo "($((SECONDS - start)) s)" >&2
  if [ "$status" -ne 0 ] && [ -n "$broker_pid" ]; then
    broker_log_tail
  elif [ "$status" -ne 0 ] && [ "$against" = kafka ]; then
    echo "--- Kafka's log: $kafka_log (kept with KEEP=1)" >&2
  fi
  exit "$status"
}
