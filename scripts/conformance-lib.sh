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
