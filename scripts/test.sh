#!/usr/bin/env bash
# Runs floe's whole test suite: installs the tools the integration tests need
# (MinIO into a cached GOBIN; kcat, the librdkafka client, with apt-get; a
# JDK and Maven with apt-get when missing), runs every package's tests with
# the race detector, then the Java client's conformance subset
# (conformance/java: kafka-clients 4.4 against a floe broker; its Maven
# dependencies go to a cached local repository, FLOE_M2, the first time).
# Then the other clients' conformance checks: sarama (Go); confluent-kafka,
# kafka-python and aiokafka (a cached virtualenv); kafkajs (packages cached;
# Node.js and npm with apt-get when missing). PyIceberg and DuckDB, table/'s
# readers, go to a cached virtualenv. Extra arguments go to go test and leave the
# conformance runs out. CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

export FLOE_GOBIN="${FLOE_GOBIN:-$HOME/.cache/floe-gobin}"
mkdir -p "$FLOE_GOBIN"
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
if [ ! -x "$FLOE_GOBIN/minio" ] || [ "$(cat "$FLOE_GOBIN/minio.version" 2>/dev/null)" != "$MINIO_VERSION" ]; then
  echo "installing minio@$MINIO_VERSION into $FLOE_GOBIN (once; cached)"
  GOBIN="$FLOE_GOBIN" GOFLAGS=-buildvcs=false go install "github.com/minio/minio@$MINIO_VERSION"
  echo "$MINIO_VERSION" > "$FLOE_GOBIN/minio.version"
fi
export FLOE_MINIO_BIN="$FLOE_GOBIN/minio"

# kcat (Debian's package, librdkafka 2.x) for the e2e tests of a real
# librdkafka client; FLOE_KCAT_BIN names another one.
if [ -z "${FLOE_KCAT_BIN:-}" ] && ! command -v kcat >/dev/null 2>&1; then
  echo "installing kcat with apt-get (once)"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y kcat
fi
export FLOE_KCAT_BIN="${FLOE_KCAT_BIN:-$(command -v kcat)}"

# A JDK (17+) and Maven for the Java client's conformance subset.
java_subset=$([ $# -eq 0 ] && echo yes || echo no)
if [ "$java_subset" = yes ] && { ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; }; then
  echo "installing a JDK, Maven and python3 with apt-get (once)"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y default-jdk-headless maven python3
fi
if [ "$java_subset" = yes ] && { ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; }; then
  echo "installing python3-venv, Node.js and npm with apt-get (once)"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv nodejs npm
fi

# The Iceberg readers nobody here wrote (PyIceberg, DuckDB's iceberg
# extension) that table/'s tests read floe's tables with: a cached
# virtualenv; with it named, those tests fail rather than skip.
if python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  eval "$(./scripts/table-readers-venv.sh)"
else
  echo "no python3 venv: table/'s reader tests will skip (apt-get install python3-venv)" >&2
fi

# Apache Iceberg's reference REST catalog, the external catalog that
# table/'s and node/'s tests commit to: its classpath, resolved by Maven once
# into ~/.cache/floe-iceberg-rest, before the tests' timeouts run.
if command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then
  ./scripts/iceberg-rest-fixture.sh fetch
fi

go vet ./...
go test -race -timeout 20m "$@" ./...

if [ "$java_subset" = yes ]; then
  # Every client runs, whichever failed before it, so that one run shows
  # all that a change broke; the suite fails at the end if any did.
  failed=()
  client() {
    if ! "$@"; then failed+=("$1"); fi
  }
  # The checks of each kind a Java application leans on (all of them:
  # ./scripts/conformance-java.sh, about 40 s more).
  client ./scripts/conformance-java.sh 'produce-consume-(none|zstd)|admin-(create-topic|describe-configs)|classic-group-commit-resume|consumer-group-kip848$|offsets-for-times|delete-records|txn-|streams-|floe-|sasl-'
  # Every check of the other clients (about 20 s each), but kafkajs's
  # group-rebalance, which waits 20 s on KafkaJS's own rejoin.
  client ./scripts/conformance-sarama.sh
  client ./scripts/conformance-python.sh
  client ./scripts/conformance-kafkajs.sh '^(?!group-rebalance)'
  if [ ${#failed[@]} -gt 0 ]; then
    echo "FAIL: conformance: ${failed[*]}" >&2
    exit 1
  fi
fi
