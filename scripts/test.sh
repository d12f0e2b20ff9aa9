#!/usr/bin/env bash
# Runs floe's whole test suite: installs the tools the integration tests need
# (MinIO into a cached GOBIN; kcat, the librdkafka client, with apt-get),
# then runs every package's tests with the race detector. CI runs exactly
# this (.ci/run).
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

go vet ./...
go test -race -timeout 20m "$@" ./...
