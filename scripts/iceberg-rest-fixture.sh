#!/usr/bin/env bash
# Runs Apache Iceberg's reference REST catalog server (RESTCatalogServer, the
# apache/iceberg-rest-fixture image's server: a JdbcCatalog on SQLite behind
# Iceberg's own REST servlet), the external catalog node's
# TestExternalRESTCatalog commits floe's tables to.
#
#   scripts/iceberg-rest-fixture.sh fetch
#       resolves its classpath (scripts/iceberg-rest-fixture.pom.xml) with
#       Maven into FLOE_ICEBERG_REST_CACHE (default ~/.cache/floe-iceberg-rest),
#       once per change of the pom; never into the repo.
#   scripts/iceberg-rest-fixture.sh run WAREHOUSE_URI [PORT]
#       fetches if needed, then serves on 127.0.0.1:PORT (default 0: a free
#       port) until killed, and prints
#       "iceberg-rest-fixture listening on http://127.0.0.1:PORT".
#       REST_TOKEN=t makes it refuse requests without "Bearer t".
#
# Needs Java 17+ and Maven (scripts/test.sh installs both).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${FLOE_ICEBERG_REST_CACHE:-$HOME/.cache/floe-iceberg-rest}"
pom="$here/iceberg-rest-fixture.pom.xml"

fetch() {
  command -v java >/dev/null || { echo "iceberg-rest-fixture: no java" >&2; exit 2; }
  if cmp -s "$pom" "$cache/pom.xml" && [ -f "$cache/lib/.complete" ]; then
    return
  fi
  command -v mvn >/dev/null || { echo "iceberg-rest-fixture: no mvn" >&2; exit 2; }
  rm -rf "$cache/lib"
  mkdir -p "$cache"
  cp "$pom" "$cache/pom.xml"
  log="$cache/mvn.log"
  if ! (cd "$cache" && mvn -B -q dependency:copy-dependencies -DoutputDirectory=lib >"$log" 2>&1); then
    echo "iceberg-rest-fixture: mvn dependency:copy-dependencies failed:" >&2
    cat "$log" >&2
    rm -f "$cache/pom.xml"
    exit 1
  fi
  touch "$cache/lib/.complete"
}

case "${1:-}" in
fetch)
  fetch
  ;;
run)
  [ $# -ge 2 ] || { echo "usage: $0 run WAREHOUSE_URI [PORT]" >&2; exit 2; }
  fetch
  export CATALOG_WAREHOUSE="$2" REST_PORT="${3:-0}" REST_HOST=127.0.0.1
  exec java -Xmx512m -XX:+UseSerialGC -cp "$cache/lib/*" "$here/IcebergRestFixture.java"
  ;;
*)
  echo "usage: $0 fetch | run WAREHOUSE_URI [PORT]" >&2
  exit 2
  ;;
esac
