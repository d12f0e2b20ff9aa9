#!/usr/bin/env bash
# Runs franz-go's own integration tests (github.com/twmb/franz-go/pkg/kgo,
# at the version in go.mod, from the module cache) against a floe broker
# started here on free ports with a temp data dir (and a second one with
# SASL SCRAM for the SCRAM tests), and prints one line per test and a
# summary:
#
#   PASS TestGroupETL
#   FAIL TestTxnEtl
#   ...
#   12 passed, 3 failed
#
# Environment:
#   RUN               -run regexp (default: every kgo test that talks to a broker,
#                     but those in EXCLUDE)
#   EXCLUDE           tests left out of the default set, space-separated
#                     (default: none)
#   KGO_TEST_RECORDS  records per produce/consume test (default 50000; kgo's own default is 500000)
#   TIMEOUT           go test -timeout (default 10m); tests still running then are FAIL
#   KGO_LOG_LEVEL     kgo client logs in the test log: none, info, debug (default none)
#   KEEP=1            keep the work dir (broker and test logs) for inspection
#
# Exit status: 0 when nothing failed. The full go test output is in
# $work/kgo-test.log, the broker's log in $work/broker.log.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/conformance-lib.sh

kgo_module=github.com/twmb/franz-go
kgo_dir="$(go list -m -f '{{.Dir}}' "$kgo_module")"
kgo_version="$(go list -m -f '{{.Version}}' "$kgo_module")"
if [ -z "$kgo_dir" ] || [ ! -d "$kgo_dir/pkg/kgo" ]; then
  go mod download "$kgo_module" >/dev/null
  kgo_dir="$(go list -m -f '{{.Dir}}' "$kgo_module")"
fi

# The integration tests are those whose body reaches a broker through the
# test helpers (adm, newTestClient, tmpTopic, tmpGroup, getSeedBrokers).
excluded=()
if [ -z "${RUN:-}" ]; then
  read -r -a excluded <<<"${EXCLUDE-}"
  tests="$(awk '
    /^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name) }
    /adm\(\)|newTestClient|tmpTopic|tmpGroup|getSeedBrokers/ {
      if (name != "" && !seen[name]++) print name
    }' "$kgo_dir"/pkg/kgo/*_test.go | sort -u | grep -vxF -f <(printf '%s\n' "${excluded[@]}" "") | paste -sd'|' -)"
  # The SCRAM tests dial KGO_TEST_SCRAM_SEEDS themselves.
  tests="$tests|TestSCRAMAuth|TestSCRAMAuthBadCredentials"
  RUN="^($tests)\$"
fi

# A second broker, with SASL SCRAM, for TestSCRAMAuth and
# TestSCRAMAuthBadCredentials (KGO_TEST_SCRAM_SEEDS, KGO_TEST_SCRAM).
printf 'kgo:kgo-secret\n' >"$work/users"
FLOE_INSTANCE=-scram start_floe --sasl-mechanisms SCRAM-SHA-256,SCRAM-SHA-512 --sasl-users-file "$work/users"
scram_bootstrap="$bootstrap"

# Share groups on: kgo's share tests run once ShareFetch and
# ShareAcknowledge v2 are advertised.
start_floe --auto-create-topics --share-groups-enabled

echo "franz-go $kgo_version kgo integration tests against floe at $bootstrap (SCRAM at $scram_bootstrap)" >&2
status=0
KGO_SEEDS="$bootstrap" KGO_TEST_RF=1 KGO_TEST_SCRAM_SEEDS="$scram_bootstrap" KGO_TEST_SCRAM="kgo:kgo-secret:512" \
  KGO_TEST_RECORDS="${KGO_TEST_RECORDS:-50000}" KGO_LOG_LEVEL="${KGO_LOG_LEVEL:-none}" \
  go test -count=1 -v -timeout "${TIMEOUT:-10m}" -run "$RUN" "$kgo_module/pkg/kgo" >"$work/kgo-test.log" 2>&1 || status=$?

# Top-level results only (subtests are indented).
grep -E '^--- (PASS|FAIL|SKIP): ' "$work/kgo-test.log" | sed -E 's/^--- (PASS|FAIL|SKIP): ([^ ]+).*/\1 \2/' >"$work/results" || true
# On a timeout, go test names the tests still running.
sed -n '/^panic: test timed out/,/^$/p' "$work/kgo-test.log" |
  sed -nE 's/^\t\t(Test[A-Za-z0-9_]+) \(.*/FAIL \1 (still running at the timeout)/p' >>"$work/results"
for t in "${excluded[@]}"; do echo "SKIP $t (excluded)" >>"$work/results"; done
cat "$work/results"
passed=$(grep -c '^PASS ' "$work/results" || true)
failed=$(grep -c '^FAIL ' "$work/results" || true)
skipped=$(grep -c '^SKIP ' "$work/results" || true)
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  # go test failed outside a test (build error, panic, timeout).
  echo "FAIL go test (exit $status):" >&2
  grep -E 'panic:|timed out|cannot|error' "$work/kgo-test.log" | head -20 >&2 || true
  failed=1
fi
[ "$skipped" -gt 0 ] && echo "($skipped skipped)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
