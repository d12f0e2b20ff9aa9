#!/usr/bin/env bash
# Runs the sarama conformance checks (conformance/sarama: IBM/sarama, the Go
# client that picks each request's version from the Kafka version it is
# configured for) against a floe broker started here on free ports with a
# temp data dir, or against a given cluster:
#
#   ./scripts/conformance-sarama.sh                      # start floe, run every check
#   ./scripts/conformance-sarama.sh --against HOST:PORT  # run against a running cluster
#   ./scripts/conformance-sarama.sh --against-kafka      # start Apache Kafka 4.4 (scripts/kafka-local.sh)
#                                                        # and run the checks against it, proving them
#   ./scripts/conformance-sarama.sh [--against ...] REGEX  # only the checks whose name matches
#
# It prints one line per check and a summary ("16 passed, 0 failed"; 15 against Kafka, which
# has no hierarchical topics for the floe-view check). The
# checks are a Go module of their own (conformance/sarama/go.mod), so that
# sarama stays out of floe's dependencies; Go fetches it from the module proxy
# once. --against-kafka also needs Java 17+ and Maven.
#
# Environment:
#   CHECK_TIMEOUT     seconds each check may take (default 60)
#   CONFORMANCE_KAFKA=1  leave out the floe-* checks (set by --against-kafka; set
#                     it for --against HOST:PORT of another Kafka-compatible broker)
#   BROKER_LOG_LEVEL  the broker's --log-level (default info)
#   KEEP=1            keep the work dir (broker log) for inspection
#
# Exit status: that of the checks (0 when nothing failed). On a failure the
# tail of the broker's log is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/conformance-lib.sh
client_args "$@"

(cd conformance/sarama && go build -o "$work/sarama-checks" .)
client_target sarama
client_run "$work/sarama-checks"
