#!/usr/bin/env bash
# A single-node Apache Kafka (KRaft, broker and controller in one process)
# from Maven Central's jars, for the conformance checks and the benchmark
# peer. Its data is in a temp dir on this machine's disk; its configuration is
# the server.properties Kafka ships (config/server.properties) on free
# 127.0.0.1 ports, everything else default, flush settings as shipped.
#
#   ./scripts/kafka-local.sh        # start Kafka, print its bootstrap address, run until Ctrl-C
#   . scripts/kafka-local.sh        # from another script: defines the functions below
#
#   kafka_start WORKDIR   resolves the classpath (Maven, cached), writes
#                         WORKDIR/server.properties, formats WORKDIR/kafka-logs,
#                         starts Kafka and waits until it serves; sets
#                         $kafka_bootstrap (HOST:PORT), $kafka_pid, $kafka_log
#   kafka_stop            stops it (the caller's EXIT trap should call it)
#
# With KAFKA_SASL=1, kafka_start also opens a SASL_PLAINTEXT listener
# (SCRAM-SHA-512 and PLAIN; users admin/admin-secret and alice/alice-secret)
# and authorizes with Kafka's StandardAuthorizer, super users admin and
# ANONYMOUS (the PLAINTEXT listener's principal, so that it stays open);
# it sets $kafka_sasl_bootstrap.
#
# Environment:
#   FLOE_M2           Maven local repository (default ~/.cache/floe-m2)
#   KAFKA_HEAP_OPTS   default "-Xmx1G -Xms1G", as kafka-server-start.sh sets
#   KAFKA_JVM_PERFORMANCE_OPTS  default that of kafka-run-class.sh
#
# Java 17+ and Maven must be installed.

kafka_pid=""
kafka_bootstrap=""
kafka_sasl_bootstrap=""
kafka_log=""

_kafka_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

_kafka_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# kafka_classpath: resolves Kafka's server classpath into $kafka_cp.
kafka_classpath() {
  local m2="${FLOE_M2:-$HOME/.cache/floe-m2}" project="$_kafka_root/conformance/kafka-server" log
  log="$(mktemp)"
  if ! mvn -q -B -Dmaven.repo.local="$m2" -f "$project/pom.xml" package >"$log" 2>&1; then
    echo "maven (kafka-server classpath) failed:" >&2; tail -40 "$log" >&2; rm -f "$log"; return 1
  fi
  rm -f "$log"
  kafka_cp="$(cat "$project/target/classpath.txt")"
}

kafka_start() {
  local dir="${1:?kafka_start WORKDIR}" port cport sport="" cluster_id sasl_format=()
  mkdir -p "$dir"
  kafka_classpath || return 1
  port="$(_kafka_free_port)"; cport="$(_kafka_free_port)"
  # Kafka 4.4's config/server.properties, with the ports and log.dirs changed.
  cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=$dir/kafka-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
EOF
  if [ "${KAFKA_SASL:-0}" = 1 ]; then
    sport="$(_kafka_free_port)"
    sed -i "s|^listeners=.*|&,SASL_PLAINTEXT://127.0.0.1:$sport|; s|^advertised.listeners=.*|&,SASL_PLAINTEXT://127.0.0.1:$sport|" "$dir/server.properties"
    cat >>"$dir/server.properties" <<EOF
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin;User:ANONYMOUS
EOF
    sasl_format=(--add-scram 'SCRAM-SHA-512=[name=admin,password=admin-secret]' --add-scram 'SCRAM-SHA-512=[name=alice,password=alice-secret]')
  fi
  # A cluster id as `kafka-storage random-uuid` prints it (16 random bytes, base64url).
  cluster_id="$(python3 -c 'import base64,os; print(base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("="))')"
  kafka_log="$dir/kafka.log"
  local jvm=(${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}
    ${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true})
  if ! java -Xmx256M -cp "$kafka_cp" kafka.tools.StorageTool format -t "$cluster_id" \
      -c "$dir/server.properties" --standalone ${sasl_format[@]+"${sasl_format[@]}"} >"$dir/format.log" 2>&1; then
    echo "kafka storage format failed:" >&2; cat "$dir/format.log" >&2; return 1
  fi
  java "${jvm[@]}" -cp "$kafka_cp" kafka.Kafka "$dir/server.properties" >"$kafka_log" 2>&1 &
  kafka_pid=$!
  kafka_bootstrap="127.0.0.1:$port"
  if [ -n "$sport" ]; then kafka_sasl_bootstrap="127.0.0.1:$sport"; fi
  local i
  for i in $(seq 1 600); do
    if grep -q "Kafka Server started" "$kafka_log" 2>/dev/null; then
      return 0
    fi
    if ! kill -0 "$kafka_pid" 2>/dev/null; then
      echo "kafka exited:" >&2; tail -40 "$kafka_log" >&2; kafka_pid=""; return 1
    fi
    sleep 0.1
  done
  echo "kafka did not start in 60 s:" >&2; tail -40 "$kafka_log" >&2
  return 1
}

kafka_stop() {
  if [ -n "$kafka_pid" ]; then
    kill "$kafka_pid" 2>/dev/null || true
    local i
    for i in $(seq 1 300); do kill -0 "$kafka_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$kafka_pid" 2>/dev/null || true
    wait "$kafka_pid" 2>/dev/null || true
    kafka_pid=""
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in -h|--help) sed -n '2,/^# Java 17/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
  _kafka_work="$(mktemp -d)"
  trap 'kafka_stop; rm -rf "$_kafka_work"' EXIT
  trap 'exit 130' INT TERM
  kafka_start "$_kafka_work"
  echo "Apache Kafka 4.4.0 (KRaft, single node) at $kafka_bootstrap; log $kafka_log; Ctrl-C stops it" >&2
  echo "$kafka_bootstrap"
  wait "$kafka_pid"
fi
