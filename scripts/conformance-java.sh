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

. scripts/conformance-lib.sh
client_args "$@"
. scripts/kafka-local.sh
on_exit+=(kafka_stop)

# Build the checks and take their runtime classpath.
maven_classpath conformance/java
classpath="conformance/java/target/classes:$classpath"

# The SASL and ACL check (sasl-scram-acls) runs on a second listener that
# requires SASL and authorizes with ACLs: a second floe broker, or Kafka's
# SASL_PLAINTEXT listener (KAFKA_SASL=1); against another cluster it is left out.
sasl_bootstrap=""
if [ "$against" = kafka ]; then
  KAFKA_SASL=1 kafka_start "$work/kafka"
  export CONFORMANCE_KAFKA=1 # leaves out the floe-* checks of floe's own features
  bootstrap="$kafka_bootstrap"
  sasl_bootstrap="$kafka_sasl_bootstrap"
  echo "kafka-clients conformance against Apache Kafka 4.4.0 at $bootstrap (SASL at $sasl_bootstrap)" >&2
elif [ -z "$against" ]; then
  printf 'admin:admin-secret\nalice:alice-secret\n' >"$work/users"
  FLOE_INSTANCE=-sasl start_floe --sasl-mechanisms SCRAM-SHA-512,PLAIN --sasl-users-file "$work/users" \
    --acls-enabled --super-users User:admin
  sasl_bootstrap="$bootstrap"
  start_floe --share-groups-enabled # the share-* checks
  echo "kafka-clients conformance against floe at $bootstrap (SASL and ACLs at $sasl_bootstrap)" >&2
else
  bootstrap="$against"
  echo "kafka-clients conformance against $bootstrap" >&2
fi

status=0
start=$SECONDS
java -Dconformance.check.timeout.s="${CHECK_TIMEOUT:-60}" -Dconformance.sasl.bootstrap="$sasl_bootstrap" \
  -cp "$classpath" floe.conformance.Main \
  "$bootstrap" ${filter:+"$filter"} || status=$?
echo "($((SECONDS - start)) s)" >&2
if [ "$status" -ne 0 ] && [ -n "$broker_pid" ]; then
  broker_log_tail
elif [ "$status" -ne 0 ] && [ -n "$kafka_pid" ]; then
  echo "--- Kafka's log: $kafka_log (kept with KEEP=1)" >&2
fi
exit "$status"
