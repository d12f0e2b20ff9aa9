# Shared helpers of the benchmark scripts: build the binaries, start a
# broker on the local directory or on a MinIO started here, clean up.
# Source it; it sets $work and cleans up on exit.
#
# S3_PROFILE=s3-standard (or s3-express, slow-tail; see package s3latency)
# puts cmd/s3-latency-proxy with that profile between the brokers and
# MinIO, so that every S3 request costs what it costs on AWS. S3_PROFILE=none
# puts the proxy there with no latency: the same CPU for the proxy's copies,
# to compare a profile with.
set -euo pipefail
FLOE_GOBIN="${FLOE_GOBIN:-$HOME/.cache/floe-gobin}"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/broker" ./cmd/broker
go build -o "$work/loadtest" ./cmd/loadtest
S3_PROFILE="${S3_PROFILE:-}"
if [ -n "$S3_PROFILE" ]; then
  go build -o "$work/s3-latency-proxy" ./cmd/s3-latency-proxy
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

wait_http() {
  for _ in $(seq 1 300); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "timed out waiting for $1" >&2
  return 1
}

# start_minio: starts MinIO on free ports (and, with S3_PROFILE, the latency
# proxy in front of it) and sets $s3_args for brokers, $minio_pid and
# $proxy_pid; stop_minio stops both.
start_minio() {
  local mport cport
  mport=$(free_port); cport=$(free_port)
  if [ ! -x "$FLOE_GOBIN/minio" ]; then
    GOBIN="$FLOE_GOBIN" go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
  fi
  MINIO_ROOT_USER=floe MINIO_ROOT_PASSWORD=floe-secret "$FLOE_GOBIN/minio" server --quiet \
    --address "127.0.0.1:$mport" --console-address "127.0.0.1:$cport" "$work/minio-$mport" >"$work/minio.log" 2>&1 &
  minio_pid=$!
  pids+=($minio_pid)
  wait_http "http://127.0.0.1:$mport/minio/health/live"
  export AWS_ACCESS_KEY_ID=floe AWS_SECRET_ACCESS_KEY=floe-secret
  s3_endpoint="http://127.0.0.1:$mport"
  if [ -n "$S3_PROFILE" ]; then
    local pport
    pport=$(free_port)
    "$work/s3-latency-proxy" --listen "127.0.0.1:$pport" --upstream "$s3_endpoint" --profile "$S3_PROFILE" --report 0 2>"$work/s3-latency-proxy.log" &
    proxy_pid=$!
    pids+=($proxy_pid)
    wait_http "http://127.0.0.1:$pport/minio/health/live"
    s3_endpoint="http://127.0.0.1:$pport"
    echo "S3 profile $S3_PROFILE: brokers reach MinIO through $s3_endpoint" >&2
  fi
  s3_args=(--s3-bucket bench --s3-endpoint "$s3_endpoint" --s3-path-style --s3-region us-east-1 --s3-create-bucket)
}

proxy_pid=""
stop_minio() {
  kill "$minio_pid" ${proxy_pid:+"$proxy_pid"} 2>/dev/null || true
  wait "$minio_pid" ${proxy_pid:+"$proxy_pid"} 2>/dev/null || true
  proxy_pid=""
}

# start_broker STORE DATADIR [broker flags...]: starts a broker on STORE
# (dir, or minio after start_minio) and sets $kafka, $http, $broker_pid.
start_broker() {
  local store="$1" data="$2"; shift 2
  local kport hport args=()
  kport=$(free_port); hport=$(free_port)
  args=(--data-dir "$data" --kafka-addr "127.0.0.1:$kport" --http-addr "127.0.0.1:$hport" --log-level warn)
  if [ "$store" = minio ]; then
    args+=("${s3_args[@]}")
  fi
  "$work/broker" "${args[@]}" "$@" >>"$work/broker.log" 2>&1 &
  broker_pid=$!
  pids+=($broker_pid)
  kafka="127.0.0.1:$kport"
  http="127.0.0.1:$hport"
  wait_http "http://$http/healthz"
}

stop_broker() { kill "$broker_pid"; wait "$broker_pid" 2>/dev/null || true; }

# metric NAME: the sum of a Prometheus counter/gauge on the broker.
metric() {
  curl -s -m 10 "http://$http/metrics" | awk -v n="$1" '$1 == n || index($1, n"{") == 1 { s += $2 } END { printf "%.0f\n", s }'
}
