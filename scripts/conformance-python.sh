#!/usr/bin/env bash
# Runs the Python client conformance checks (conformance/python: confluent-kafka
# on librdkafka, the pure Python kafka-python, and aiokafka) against a floe broker
# started here on free ports with a temp data dir, or against a given cluster:
#
#   ./scripts/conformance-python.sh                      # start floe, run every check
#   ./scripts/conformance-python.sh --against HOST:PORT  # run against a running cluster
#   ./scripts/conformance-python.sh --against-kafka      # start Apache Kafka 4.4 (scripts/kafka-local.sh)
#                                                        # and run the checks against it, proving them
#   ./scripts/conformance-python.sh [--against ...] REGEX  # only the checks whose name matches
#
# It prints one line per check and a summary ("28 passed, 0 failed"; 26 against Kafka, which
# has no hierarchical topics for the floe-view-* checks). Python
# 3.9+ with venv must be installed; the packages pinned by
# conformance/python/requirements.txt go into a cached virtualenv
# (FLOE_VENV, default ~/.cache/floe-venv/python-clients), nothing system-wide.
# --against-kafka also needs Java 17+ and Maven.
#
# Environment:
#   FLOE_VENV         the virtualenv (default ~/.cache/floe-venv/python-clients)
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

venv="${FLOE_VENV:-$HOME/.cache/floe-venv/python-clients}"
if ! cmp -s conformance/python/requirements.txt "$venv/requirements.txt"; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install -q -r conformance/python/requirements.txt >"$work/pip.log" 2>&1; then
    echo "pip install failed:" >&2; cat "$work/pip.log" >&2; rm -rf "$venv"; exit 1
  fi
  cp conformance/python/requirements.txt "$venv/requirements.txt"
fi
client_target python
client_run "$venv/bin/python" conformance/python/checks.py
