#!/usr/bin/env bash
# Security benchmark (issue 17): produce and fetch throughput of one broker
# with TLS + SASL SCRAM-SHA-512 against the same broker plaintext, in one
# run, on the local-directory store. Each mode runs 4 producers and 4
# consumers flat out with 1 KiB records on 8 partitions. Prints the
# loadtest reports and a summary line; not part of the test suite.
#
#   ./scripts/bench-security.sh
#   DURATION=30s ROUNDS=2 ./scripts/bench-security.sh
#   PIN=1 ./scripts/bench-security.sh   # broker on CPU 0, load generator on
#                                       # CPU 1 (taskset), as if apart
DURATION="${DURATION:-20s}"
ROUNDS="${ROUNDS:-1}"
. scripts/bench-lib.sh

# A CA and a server certificate for 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=floe bench CA" \
  -keyout "$work/ca-key.pem" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
  -keyout "$work/server-key.pem" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$work/san.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca-key.pem" -CAcreateserial -days 1 \
  -extfile "$work/san.ext" -out "$work/server.pem" 2>/dev/null
printf 'bench:bench-secret\n' >"$work/users"

# cpu_ticks PID: the process's user+system CPU time in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

run_mode() {
  local mode="$1" out="$2"; shift 2
  local extra=() lt_sec=()
  if [ "$mode" = secure ]; then
    extra=(--tls-cert "$work/server.pem" --tls-key "$work/server-key.pem"
      --sasl-mechanisms SCRAM-SHA-512 --sasl-users-file "$work/users")
    lt_sec=(--tls --tls-ca "$work/ca.pem" --sasl-mechanism SCRAM-SHA-512 --sasl-user bench --sasl-password bench-secret)
  fi
  local kport hport
  kport=$(free_port); hport=$(free_port)
  local pin_broker=() pin_lt=()
  if [ "${PIN:-0}" = 1 ]; then pin_broker=(taskset -c 0); pin_lt=(taskset -c 1); fi
  "${pin_broker[@]}" "$work/broker" --data-dir "$work/data-$mode-$out" --kafka-addr "127.0.0.1:$kport" --http-addr "127.0.0.1:$hport" \
    --log-level warn "${extra[@]}" >>"$work/broker.log" 2>&1 &
  broker_pid=$!
  pids+=($broker_pid)
  for _ in $(seq 1 300); do
    curl -sfk "https://127.0.0.1:$hport/healthz" >/dev/null 2>&1 && break
    curl -sf "http://127.0.0.1:$hport/healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "=== $mode: 4 producers + 4 consumers, 1 KiB records, 8 partitions, flat out, $DURATION ==="
  local before after
  before=$(cpu_ticks "$broker_pid")
  "${pin_lt[@]}" "$work/loadtest" --brokers "127.0.0.1:$kport" "${lt_sec[@]}" --topic bench --create-topic --partitions 8 \
    --producers 4 --consumers 4 --record-size 1024 --max-buffered 20000 --linger 2ms --duration "$DURATION" \
    --progress 0 --log-level warn --json "$work/$out.json"
  after=$(cpu_ticks "$broker_pid")
  echo "$(( after - before ))" >"$work/$out.cpu"
  stop_broker
}

for r in $(seq 1 "$ROUNDS"); do
  run_mode plain "plain-$r"
  run_mode secure "secure-$r"
  python3 - "$work/plain-$r.json" "$work/secure-$r.json" "$(cat "$work/plain-$r.cpu")" "$(cat "$work/secure-$r.cpu")" "$hz" <<'PY'
import json, sys
p, s = (json.load(open(f)) for f in sys.argv[1:3])
pc, sc, hz = (float(x) for x in sys.argv[3:6])
def cpu_per_gib(r, ticks):
    gib = (r["produce"]["bytes"] + r["consume"]["bytes"]) / 2**30
    return ticks / hz / gib if gib else float("nan")
a, b = cpu_per_gib(p, pc), cpu_per_gib(s, sc)
print(f"broker CPU per GiB moved (produced + consumed): plaintext {a:.2f} s, TLS+SCRAM {b:.2f} s ({b / a:.2f}x)")
for side in ("produce", "consume"):
    a, b = p[side]["mib_per_s"], s[side]["mib_per_s"]
    print(f"{side}: plaintext {a:.1f} MiB/s, TLS+SCRAM-SHA-512 {b:.1f} MiB/s, ratio {b / a if a else float('nan'):.2f}")
lat = lambda r: r["produce"]["latency"]
print(f"produce p50: plaintext {lat(p).get('p50_ms')} ms, TLS+SCRAM {lat(s).get('p50_ms')} ms")
PY
done
