#!/usr/bin/env bash
# Runs the KafkaJS conformance checks (conformance/kafkajs: kafkajs 2.2.4, the
# pure JavaScript client, with kafkajs-snappy) against a floe broker started
# here on free ports with a temp data dir, or against a given cluster:
#
#   ./scripts/conformance-kafkajs.sh                      # start floe, run every check
#   ./scripts/conformance-kafkajs.sh --against HOST:PORT  # run against a running cluster
#   ./scripts/conformance-kafkajs.sh --against-kafka      # start Apache Kafka 4.4 (scripts/kafka-local.sh)
#                                                         # and run the checks against it, proving them
#   ./scripts/conformance-kafkajs.sh [--against ...] REGEX  # only the checks whose name matches
#
# It prints one line per check and a summary ("11 passed, 0 failed"; 10 against Kafka, which
# has no hierarchical topics for the floe-view check). Node.js
# 18+ and npm must be installed; the packages pinned by
# conformance/kafkajs/package-lock.json are installed once into a cache
# (FLOE_NPM_CACHE, default ~/.cache/floe-npm/kafkajs), nothing system-wide.
# --against-kafka also needs Java 17+ and Maven.
#
# Environment:
#   FLOE_NPM_CACHE    where the packages go (default ~/.cache/floe-npm/kafkajs)
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

cache="${FLOE_NPM_CACHE:-$HOME/.cache/floe-npm/kafkajs}"
mkdir -p "$cache"
# installed.lock is written only after a successful install.
if ! cmp -s conformance/kafkajs/package-lock.json "$cache/installed.lock"; then
  rm -f "$cache/installed.lock"
  cp conformance/kafkajs/package.json conformance/kafkajs/package-lock.json "$cache/"
  (cd "$cache" && npm ci --ignore-scripts --no-audit --no-fund >"$work/npm.log" 2>&1) ||
    { echo "npm ci failed:" >&2; cat "$work/npm.log" >&2; exit 1; }
  cp conformance/kafkajs/package-lock.json "$cache/installed.lock"
fi
client_target kafkajs
NODE_PATH="$cache/node_modules" client_run node conformance/kafkajs/checks.js
