#!/usr/bin/env bash
# Runs Apache Kafka's own command-line tools (4.4, from Maven Central's jars:
# the main classes behind bin/kafka-*.sh) against a floe broker started here on
# free ports with a temp data dir, or against a given cluster, and checks what
# each prints:
#
#   ./scripts/conformance-kafka-tools.sh                      # start floe, run every check
#   ./scripts/conformance-kafka-tools.sh --against HOST:PORT  # a running cluster (no dump-log checks)
#
#   kafka-topics            org.apache.kafka.tools.TopicCommand
#   kafka-console-producer  org.apache.kafka.tools.ConsoleProducer
#   kafka-console-consumer  org.apache.kafka.tools.consumer.ConsoleConsumer
#   kafka-consumer-groups   org.apache.kafka.tools.consumer.group.ConsumerGroupCommand
#   kafka-configs           org.apache.kafka.tools.ConfigCommand
#   kafka-get-offsets       org.apache.kafka.tools.GetOffsetShell
#   kafka-dump-log          org.apache.kafka.tools.DumpLogSegments
#   kafka-transactions      org.apache.kafka.tools.TransactionsCommand
#   kafka-share-groups      org.apache.kafka.tools.consumer.group.ShareGroupCommand
#   kafka-console-share-consumer  org.apache.kafka.tools.consumer.ConsoleShareConsumer
#
# kafka-dump-log reads segment objects (tiered/doc.go): the broker started here
# consolidates a local.retention.ms=1 topic within seconds (--tier-interval
# 200ms), and each segment object under <data-dir>/objects/tiered/ is cut into
# <base offset>.log (its data part, meant to be a Kafka log segment byte for
# byte), .index and .timeindex, which the tool then parses.
#
# It prints one line per check and a summary:
#
#   PASS topics-create
#   FAIL configs-alter: describe after --alter: no retention.ms=3600000
#   ...
#   27 passed, 1 failed
#
# Maven and a JDK (17+) must be installed; the jars are fetched once into a
# cached local repository (conformance/kafka-tools/pom.xml resolves the
# classpath), nothing is installed system-wide.
#
# Environment:
#   FLOE_M2           Maven local repository (default ~/.cache/floe-m2)
#   CHECK_TIMEOUT     seconds each tool run may take (default 60)
#   BROKER_LOG_LEVEL  the broker's --log-level (default info)
#   KEEP=1            keep the work dir (broker log, each tool's output) for inspection
#
# Exit status 1 when a check failed. The broker's log is in $work/broker.log;
# on a failure its tail is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

against=""
while [ $# -gt 0 ]; do
  case "$1" in
    --against) against="${2:?--against needs HOST:PORT}"; shift 2 ;;
    --against=*) against="${1#--against=}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

. scripts/conformance-lib.sh

# Resolve the tools' classpath.
maven_classpath conformance/kafka-tools

data=""
if [ -z "$against" ]; then
  start_floe --tier-interval 200ms --tier-poll-interval 100ms --share-groups-enabled
  data="$work/data"
  echo "Kafka's tools against floe at $bootstrap" >&2
else
  bootstrap="$against"
  echo "Kafka's tools against $bootstrap" >&2
fi

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# run NAME CLASS ARGS...: runs a tool, stdout in $work/NAME.out, stderr in
# $work/NAME.err; its exit status is run's. The tools log WARN and above.
run() {
  local name="$1" class="$2"; shift 2
  timeout "${CHECK_TIMEOUT:-60}" java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$classpath" "$class" "$@" >"$work/$name.out" 2>"$work/$name.err"
}
# why NAME: the first lines of a tool's stderr (else stdout), on one line.
why() { { cat "$work/$1.err"; cat "$work/$1.out"; } | grep -v '^\s*$' | head -3 | tr '\n' ' ' | cut -c1-300; }

TOPICS=org.apache.kafka.tools.TopicCommand
PRODUCER=org.apache.kafka.tools.ConsoleProducer
CONSUMER=org.apache.kafka.tools.consumer.ConsoleConsumer
GROUPCMD=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand
CONFIGS=org.apache.kafka.tools.ConfigCommand
OFFSETS=org.apache.kafka.tools.GetOffsetShell
DUMP=org.apache.kafka.tools.DumpLogSegments
TXNS=org.apache.kafka.tools.TransactionsCommand
SHARECMD=org.apache.kafka.tools.consumer.group.ShareGroupCommand
SHARECONSUMER=org.apache.kafka.tools.consumer.ConsoleShareConsumer
B=(--bootstrap-server "$bootstrap")

suffix="$$-$RANDOM"
topic="tools-$suffix"
group="tools-group-$suffix"
n=100
start=$SECONDS

# --- kafka-topics ----------------------------------------------------------

if run topics-create $TOPICS "${B[@]}" --create --topic "$topic" --partitions 3 --replication-factor 1 &&
  grep -qx "Created topic $topic." "$work/topics-create.out"; then
  pass topics-create
else
  fail topics-create "$(why topics-create)"
fi

if run topics-create-again $TOPICS "${B[@]}" --create --topic "$topic" --partitions 3 --replication-factor 1; then
  fail topics-create-exists "a second --create of $topic succeeded"
elif grep -q "Topic '$topic' already exists" "$work/topics-create-again.out" "$work/topics-create-again.err"; then
  pass topics-create-exists
else
  fail topics-create-exists "want \"Topic '$topic' already exists\", got: $(why topics-create-again)"
fi

if run topics-list $TOPICS "${B[@]}" --list && grep -qx "$topic" "$work/topics-list.out"; then
  pass topics-list
else
  fail topics-list "$topic not listed: $(why topics-list)"
fi

# describe_ok NAME WANT: the --describe output in $work/NAME.out has
# PartitionCount WANT and WANT partition lines 0..WANT-1, each with a leader.
describe_ok() {
  local f="$work/$1.out" want="$2" p
  grep -q "^Topic: $topic	.*PartitionCount: $want	ReplicationFactor: 1" "$f" || return 1
  [ "$(grep -c "Partition: [0-9]*	Leader: [0-9]" "$f")" = "$want" ] || return 1
  for p in $(seq 0 $((want - 1))); do grep -q "Partition: $p	Leader: [0-9]" "$f" || return 1; done
}
if run topics-describe $TOPICS "${B[@]}" --describe --topic "$topic" && describe_ok topics-describe 3; then
  pass topics-describe
else
  fail topics-describe "want PartitionCount: 3 and partitions 0-2 with leaders, got: $(why topics-describe)"
fi

if ! run topics-alter $TOPICS "${B[@]}" --alter --topic "$topic" --partitions 5; then
  fail topics-alter-partitions "$(why topics-alter)"
elif run topics-describe-5 $TOPICS "${B[@]}" --describe --topic "$topic" && describe_ok topics-describe-5 5; then
  pass topics-alter-partitions
else
  fail topics-alter-partitions "after --alter --partitions 5: $(why topics-describe-5)"
fi

# --- kafka-console-producer / kafka-get-offsets / kafka-console-consumer ---

seq 1 $n | sed 's/.*/k&:v&/' >"$work/produced.txt"
if run producer $PRODUCER "${B[@]}" --topic "$topic" --producer-property acks=all \
    --reader-property parse.key=true --reader-property key.separator=: <"$work/produced.txt" &&
  ! grep -q "ERROR" "$work/producer.err"; then
  pass console-producer
else
  fail console-producer "$(why producer)"
fi

# sum_offsets NAME: the sum of the N in GetOffsetShell's topic:partition:N lines
# for $topic, and the number of partitions, as "SUM PARTITIONS".
sum_offsets() { awk -F: -v t="$topic" '$1 == t { s += $3; p++ } END { print s + 0, p + 0 }' "$work/$1.out"; }
if run offsets-latest $OFFSETS "${B[@]}" --topic "$topic" && [ "$(sum_offsets offsets-latest)" = "$n 5" ]; then
  pass get-offsets-latest
else
  fail get-offsets-latest "want the end offsets of 5 partitions summing to $n, got: $(why offsets-latest)"
fi
if run offsets-earliest $OFFSETS "${B[@]}" --topic "$topic" --time -2 && [ "$(sum_offsets offsets-earliest)" = "0 5" ]; then
  pass get-offsets-earliest
else
  fail get-offsets-earliest "want 5 partitions at 0, got: $(why offsets-earliest)"
fi
# --time -3 (max timestamp, KIP-734): each non-empty partition's offset of its largest timestamp.
if run offsets-maxts $OFFSETS "${B[@]}" --topic "$topic" --time -3 &&
  [ "$(awk -F: -v t="$topic" '$1 == t && $3 >= 0 { p++ } END { print p + 0 }' "$work/offsets-maxts.out")" = 5 ]; then
  pass get-offsets-max-timestamp
else
  fail get-offsets-max-timestamp "want an offset for each of 5 partitions, got: $(why offsets-maxts)"
fi

# consumed_ok NAME: the consumer printed exactly the produced key<TAB>value pairs.
consumed_ok() { cmp -s <(tr ':' '\t' <"$work/produced.txt" | sort) <(sort "$work/$1.out"); }
if run consumer $CONSUMER "${B[@]}" --topic "$topic" --group "$group" --from-beginning --max-messages $n --timeout-ms 20000 \
    --formatter-property print.key=true &&
  consumed_ok consumer && grep -q "Processed a total of $n messages" "$work/consumer.err"; then
  pass console-consumer
else
  fail console-consumer "want the $n produced key/value pairs, got $(wc -l <"$work/consumer.out") lines: $(why consumer)"
fi

# --- kafka-consumer-groups ---------------------------------------------------

if run groups-list $GROUPCMD "${B[@]}" --list && grep -qx "$group" "$work/groups-list.out"; then
  pass consumer-groups-list
else
  fail consumer-groups-list "$group not listed: $(why groups-list)"
fi

# group_sums NAME: from a --describe table, "ROWS CURRENT-SUM LAG-SUM" of $topic's rows.
group_sums() {
  awk -v g="$group" -v t="$topic" '$1 == g && $2 == t { r++; c += $4; l += $6 } END { print r + 0, c + 0, l + 0 }' "$work/$1.out"
}
if run groups-describe $GROUPCMD "${B[@]}" --describe --group "$group" &&
  grep -q "CURRENT-OFFSET  LOG-END-OFFSET  LAG" "$work/groups-describe.out" &&
  [ "$(group_sums groups-describe)" = "5 $n 0" ]; then
  pass consumer-groups-describe
else
  fail consumer-groups-describe "want 5 partitions, committed $n, lag 0 (rows, committed, lag: $(group_sums groups-describe)): $(why groups-describe)"
fi

if run groups-state $GROUPCMD "${B[@]}" --describe --group "$group" --state &&
  grep -q "^$group .* Empty  *0$" "$work/groups-state.out"; then
  pass consumer-groups-describe-state
else
  fail consumer-groups-describe-state "want state Empty with 0 members: $(why groups-state)"
fi

# reset_ok NAME WANT: every NEW-OFFSET of $topic's 5 partitions is WANT.
reset_ok() {
  [ "$(awk -v g="$group" -v t="$topic" -v w="$2" '$1 == g && $2 == t && $4 == w { r++ } END { print r + 0 }' "$work/$1.out")" = 5 ]
}
if run groups-reset-dry $GROUPCMD "${B[@]}" --reset-offsets --to-earliest --group "$group" --topic "$topic" --dry-run &&
  reset_ok groups-reset-dry 0 &&
  run groups-describe-dry $GROUPCMD "${B[@]}" --describe --group "$group" &&
  [ "$(group_sums groups-describe-dry)" = "5 $n 0" ]; then
  pass consumer-groups-reset-dry-run
else
  fail consumer-groups-reset-dry-run "want NEW-OFFSET 0 x5 and the committed offsets unchanged: $(why groups-reset-dry) / $(group_sums groups-describe-dry)"
fi

if run groups-reset $GROUPCMD "${B[@]}" --reset-offsets --to-earliest --group "$group" --topic "$topic" --execute &&
  reset_ok groups-reset 0 &&
  run groups-describe-reset $GROUPCMD "${B[@]}" --describe --group "$group" &&
  [ "$(group_sums groups-describe-reset)" = "5 0 $n" ]; then
  pass consumer-groups-reset-execute
else
  fail consumer-groups-reset-execute "want NEW-OFFSET 0 x5, then committed 0 and lag $n (rows, committed, lag: $(group_sums groups-describe-reset 2>/dev/null)): $(why groups-reset)"
fi

# The group consumes from its (reset) committed offsets: all n again.
if run consumer-again $CONSUMER "${B[@]}" --topic "$topic" --group "$group" --max-messages $n --timeout-ms 20000 \
    --formatter-property print.key=true && consumed_ok consumer-again; then
  pass console-consumer-after-reset
else
  fail console-consumer-after-reset "want the $n records again, got $(wc -l <"$work/consumer-again.out") lines: $(why consumer-again)"
fi

if run groups-reset-shift $GROUPCMD "${B[@]}" --reset-offsets --to-offset 1 --group "$group" --topic "$topic:0" --execute &&
  awk -v g="$group" -v t="$topic" '$1 == g && $2 == t && $3 == 0 && $4 == 1 { ok = 1 } END { exit !ok }' "$work/groups-reset-shift.out" &&
  run groups-describe-shift $GROUPCMD "${B[@]}" --describe --group "$group" --offsets &&
  awk -v g="$group" -v t="$topic" '$1 == g && $2 == t && $3 == 0 && $4 == 1 { ok = 1 } END { exit !ok }' "$work/groups-describe-shift.out"; then
  pass consumer-groups-reset-to-offset
else
  fail consumer-groups-reset-to-offset "want partition 0 committed at 1: $(why groups-reset-shift)"
fi

# --- kafka-configs -----------------------------------------------------------

if run configs-describe $CONFIGS "${B[@]}" --describe --entity-type topics --entity-name "$topic" &&
  grep -qx "Dynamic configs for topic $topic are:" "$work/configs-describe.out" &&
  [ "$(wc -l <"$work/configs-describe.out")" = 1 ]; then
  pass configs-describe
else
  fail configs-describe "want no dynamic configs: $(why configs-describe)"
fi

if ! run configs-alter $CONFIGS "${B[@]}" --alter --entity-type topics --entity-name "$topic" \
    --add-config retention.ms=3600000,max.message.bytes=2000000 ||
  ! grep -qx "Completed updating config for topic $topic." "$work/configs-alter.out"; then
  fail configs-alter "$(why configs-alter)"
elif run configs-describe-alter $CONFIGS "${B[@]}" --describe --entity-type topics --entity-name "$topic" &&
  grep -q "^  retention.ms=3600000 .*DYNAMIC_TOPIC_CONFIG:retention.ms=3600000" "$work/configs-describe-alter.out" &&
  grep -q "^  max.message.bytes=2000000 " "$work/configs-describe-alter.out"; then
  pass configs-alter
else
  fail configs-alter "describe after --add-config: $(why configs-describe-alter)"
fi

if ! run configs-delete $CONFIGS "${B[@]}" --alter --entity-type topics --entity-name "$topic" --delete-config retention.ms; then
  fail configs-delete "$(why configs-delete)"
elif run configs-describe-delete $CONFIGS "${B[@]}" --describe --entity-type topics --entity-name "$topic" &&
  ! grep -q "retention.ms=" "$work/configs-describe-delete.out" &&
  grep -q "^  max.message.bytes=2000000 " "$work/configs-describe-delete.out"; then
  pass configs-delete
else
  fail configs-delete "describe after --delete-config retention.ms: $(why configs-describe-delete)"
fi

if run configs-all $CONFIGS "${B[@]}" --describe --all --entity-type topics --entity-name "$topic" &&
  grep -q "^  retention.ms=604800000 .*DEFAULT_CONFIG" "$work/configs-all.out" &&
  grep -q "^  cleanup.policy=delete " "$work/configs-all.out" &&
  grep -q "^  max.message.bytes=2000000 " "$work/configs-all.out"; then
  pass configs-describe-all
else
  fail configs-describe-all "want the defaults (retention.ms=604800000, cleanup.policy=delete) and the dynamic max.message.bytes: $(why configs-all)"
fi

broker_id="$(sed -n 's/.*Partition: 0	Leader: \([0-9]*\).*/\1/p' "$work/topics-describe.out" | head -1)"
if run configs-broker $CONFIGS "${B[@]}" --describe --all --entity-type brokers --entity-name "${broker_id:-1}" &&
  grep -q "^  broker.id=${broker_id:-1} " "$work/configs-broker.out"; then
  pass configs-describe-broker
else
  fail configs-describe-broker "want broker.id=${broker_id:-1}: $(why configs-broker)"
fi

# --- kafka-topics --delete ---------------------------------------------------

if run topics-delete $TOPICS "${B[@]}" --delete --topic "$topic"; then
  gone=0
  for _ in $(seq 1 20); do
    if run topics-list-after $TOPICS "${B[@]}" --list && ! grep -qx "$topic" "$work/topics-list-after.out"; then gone=1; break; fi
    sleep 0.5
  done
  if [ "$gone" = 1 ]; then pass topics-delete; else fail topics-delete "$topic still listed 10 s after --delete"; fi
else
  fail topics-delete "$(why topics-delete)"
fi

# --- kafka-dump-log on segment objects --------------------------------------

if [ -n "$data" ]; then
  seg_topic="tools-seg-$suffix"
  per=1500
  codecs=(none gzip snappy lz4 zstd)
  total=$((per * ${#codecs[@]}))
  ok=1
  if ! run seg-create $TOPICS "${B[@]}" --create --topic "$seg_topic" --partitions 1 --replication-factor 1 \
      --config local.retention.ms=1; then
    ok=0; fail dump-produce "create $seg_topic: $(why seg-create)"
  else
    i=0
    for c in "${codecs[@]}"; do
      seq $((i * per)) $(((i + 1) * per - 1)) | sed 's/.*/key-&:value-&/' >"$work/seg-$c.txt"
      if ! run "seg-produce-$c" $PRODUCER "${B[@]}" --topic "$seg_topic" --compression-codec "$c" \
          --reader-property parse.key=true --reader-property key.separator=: <"$work/seg-$c.txt"; then
        ok=0; fail dump-produce "produce with $c: $(why "seg-produce-$c")"; break
      fi
      i=$((i + 1))
    done
    [ "$ok" = 1 ] && pass dump-produce
  fi

  # Wait for consolidation to cover offsets 0..total-1 with segments; cut each
  # segment object into <base>.log, .index and .timeindex in $work/dump.
  segments=()
  if [ "$ok" = 1 ]; then
    covered=""
    for _ in $(seq 1 120); do
      covered="$(python3 - "$data/objects/tiered" "$work/dump" <<'EOF'
import os, struct, sys
root, out = sys.argv[1], sys.argv[2]
segs = []
for d, _, files in os.walk(root):
    for f in files:
        if f.endswith(".seg"):
            segs.append(os.path.join(d, f))
os.makedirs(out, exist_ok=True)
last = -1
for p in sorted(segs, key=os.path.basename):
    b = open(p, "rb").read()
    if len(b) < 88 or b[-8:] != b"floeseg\x00":
        continue
    base, lastoff, _, count, dlen, oip, oil, tip, til = struct.unpack(">qqqQQQQQQ", b[-88:-16])
    name = os.path.join(out, "%020d" % base)
    for ext, lo, hi in ((".log", 0, dlen), (".index", oip, oip + oil), (".timeindex", tip, tip + til)):
        with open(name + ext, "wb") as w:
            w.write(b[lo:hi])
    with open(name + ".trailer", "w") as w:
        w.write("%d %d %d\n" % (base, lastoff, count))
    if base == last + 1:
        last = lastoff
print(last)
EOF
)"
      [ "$covered" = $((total - 1)) ] && break
      sleep 0.5
    done
    if [ "$covered" = $((total - 1)) ]; then
      segments=($(ls "$work/dump/"*.log))
      pass "dump-segments-written"
    else
      fail dump-segments-written "segments cover offsets up to ${covered:-none} of 0..$((total - 1)) after 60 s"
    fi
  fi

  if [ ${#segments[@]} -gt 0 ]; then
    files="$(IFS=,; echo "${segments[*]}")"
    # Batch level: every batch valid, contiguous, matching each trailer.
    if run dump-log $DUMP --files "$files"; then
      res="$(python3 - "$work/dump-log.out" "$work/dump" <<'EOF'
import re, sys, os
out, d = sys.argv[1], sys.argv[2]
errs, cur, segs, codecs = [], None, {}, set()
for line in open(out):
    m = re.match(r"Dumping (.*)\.log$", line.strip())
    if m:
        cur = os.path.basename(m.group(1)); segs[cur] = []; continue
    m = re.match(r"baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .* compresscodec: (\w+) crc: \d+ isvalid: (\w+)", line)
    if m:
        segs[cur].append(tuple(int(x) for x in m.groups()[:3]) + (m.group(5),))
        codecs.add(m.group(4)); continue
    if line.strip() and not line.startswith("Log starting offset"):
        errs.append("unexpected line: " + line.strip()[:200])
for name, batches in segs.items():
    base, last, count = map(int, open(os.path.join(d, name + ".trailer")).read().split())
    if len(batches) != count: errs.append("%s: %d batches, the trailer says %d" % (name, len(batches), count))
    if not batches: continue
    if batches[0][0] != base: errs.append("%s: first baseOffset %d, want %d" % (name, batches[0][0], base))
    if batches[-1][1] != last: errs.append("%s: last lastOffset %d, want %d" % (name, batches[-1][1], last))
    for i, (b, l, c, valid) in enumerate(batches):
        if valid != "true": errs.append("%s: batch at %d not valid" % (name, b))
        if l - b + 1 != c: errs.append("%s: batch %d..%d count %d" % (name, b, l, c))
        if i and b != batches[i - 1][1] + 1: errs.append("%s: batch %d after %d" % (name, b, batches[i - 1][1]))
want = {"none", "gzip", "snappy", "lz4", "zstd"}
if codecs != want: errs.append("codecs %s, want %s" % (sorted(codecs), sorted(want)))
print("; ".join(errs[:3]) if errs else "ok %d segments, %d batches" % (len(segs), sum(len(b) for b in segs.values())))
EOF
)"
      if [ "${res%% *}" = ok ]; then pass dump-log; else fail dump-log "$res"; fi
    else
      fail dump-log "$(why dump-log)"
    fi

    # Record level: every record, in offset order, with its key and value.
    # Kafka 4.4's DumpLogSegments starts its consecutive-offset check at -1, so
    # it reports "-1 is followed by B" for a file whose base offset B is not 0,
    # as it would for a Kafka segment: that one pair is not counted.
    if run dump-log-deep $DUMP --files "$files" --deep-iteration --print-data-log; then
      res="$(python3 - "$work/dump-log-deep.out" "$total" <<'EOF'
import re, sys
out, total = sys.argv[1], int(sys.argv[2])
errs, n, nxt, base, noncons = [], 0, 0, None, False
for line in open(out):
    line = line.rstrip("\n")
    m = re.match(r"\| offset: (\d+) .* key: (\S*) payload: (\S*)$", line)
    if m:
        o = int(m.group(1))
        if o != nxt: errs.append("record offset %d, want %d" % (o, nxt))
        if m.group(2) != "key-%d" % o or m.group(3) != "value-%d" % o:
            errs.append("offset %d: key %s payload %s" % (o, m.group(2), m.group(3)))
        n += 1; nxt = o + 1; continue
    m = re.match(r"Log starting offset: (\d+)", line)
    if m: base = int(m.group(1)); continue
    if line.startswith("Non-consecutive offsets in"): noncons = True; continue
    m = re.match(r"  (-?\d+) is followed by (\d+)$", line)
    if m and noncons:
        if not (m.group(1) == "-1"): errs.append(line.strip())
        continue
    if line.startswith(("Dumping ", "baseOffset: ")) or not line.strip(): continue
    errs.append("unexpected line: " + line.strip()[:200])
if n != total: errs.append("%d records, want %d" % (n, total))
print("; ".join(errs[:3]) if errs else "ok %d records" % n)
EOF
)"
      if [ "${res%% *}" = ok ]; then pass dump-log-deep-iteration; else fail dump-log-deep-iteration "$res"; fi
    else
      fail dump-log-deep-iteration "$(why dump-log-deep)"
    fi

    # The indexes: Kafka's layout (tiered/doc.go), so Kafka's sanity check
    # (entry sizes, offsets increasing, in the segment's range) must pass.
    idx="$(ls "$work/dump/"*.index "$work/dump/"*.timeindex | paste -sd,)"
    if run dump-index-sanity $DUMP --files "$idx" --index-sanity-check &&
      [ "$(grep -c "passed sanity check" "$work/dump-index-sanity.out")" = $((2 * ${#segments[@]})) ]; then
      pass dump-index-sanity
    else
      fail dump-index-sanity "$(why dump-index-sanity)"
    fi

    # Kafka's index verification (no --index-sanity-check) expects Kafka's
    # convention: a .index entry's offset is the LAST offset of the batch at
    # its position, a .timeindex entry's offset the last offset of the batch
    # holding its timestamp. floe's entries carry the batch's BASE offset
    # (tiered/doc.go), which Kafka's lookups also accept (they give a position
    # at or before the target and scan forward), so the tool reports every
    # entry of a multi-record batch as a mismatch. The check: each entry the
    # tool prints points at a batch start (dump-log's positions) with that
    # base offset, every mismatch it reports is exactly (base, last) of one
    # batch, and no timestamp mismatch; a NOTE line counts the differences.
    if run dump-index $DUMP --files "$idx"; then
      res="$(python3 - "$work/dump-log.out" "$work/dump-index.out" "$work/dump-index.err" <<'EOF'
import os, re, sys
batches, seg = {}, None   # segment name -> {position: (base, last)}
for line in open(sys.argv[1]):
    m = re.match(r"Dumping (.*)\.log$", line.strip())
    if m: seg = os.path.basename(m.group(1)); batches[seg] = {}; continue
    m = re.match(r"baseOffset: (\d+) lastOffset: (\d+) .* position: (\d+) ", line)
    if m: batches[seg][int(m.group(3))] = (int(m.group(1)), int(m.group(2)))
bylast = {(b, l) for s in batches.values() for b, l in s.values()}
bybase = {b: l for s in batches.values() for b, l in s.values()}
errs, entries, differ = [], 0, 0
for line in open(sys.argv[2]):
    line = line.strip()
    m = re.match(r"Dumping (.*)\.(time)?index$", line)
    if m: seg = os.path.basename(m.group(1)); continue
    m = re.match(r"offset: (\d+) position: (\d+)$", line)
    if m:
        entries += 1
        o, p = int(m.group(1)), int(m.group(2))
        if batches.get(seg, {}).get(p, (None,))[0] != o:
            errs.append("%s.index: offset %d position %d is not that batch's start" % (seg, o, p))
        continue
    m = re.match(r"timestamp: (\d+) offset: (\d+)$", line)
    if m:
        entries += 1
        if int(m.group(2)) not in bybase: errs.append("%s.timeindex: offset %s is no batch's base" % (seg, m.group(2)))
        continue
    if line and not line.startswith("Dumping "): errs.append("unexpected line: " + line[:200])
for line in open(sys.argv[3]):
    line = line.strip()
    m = re.match(r"(?:Index offset|Indexed offset): (\d+), (?:found )?log offset: (\d+)$", line)
    if m:
        differ += 1
        if (int(m.group(1)), int(m.group(2))) not in bylast: errs.append(line)
        continue
    if line.startswith(("Mismatches in :", "The following indexed offsets are not found in :")) or not line: continue
    errs.append("unexpected: " + line[:200])
print("; ".join(errs[:3]) if errs else "ok %d entries, %d with the base offset where Kafka writes the batch's last offset" % (entries, differ))
EOF
)"
      if [ "${res%% *}" = ok ]; then
        pass dump-index-entries
        echo "NOTE dump-index-entries: ${res#ok }"
      else
        fail dump-index-entries "$res"
      fi
    else
      fail dump-index-entries "$(why dump-index)"
    fi
  fi

  # The consolidated topic reads back in full (now from segments).
  if [ "$ok" = 1 ]; then
    cat "$work"/seg-{none,gzip,snappy,lz4,zstd}.txt | tr ':' '\t' >"$work/seg-all.txt"
    if run seg-consume $CONSUMER "${B[@]}" --topic "$seg_topic" --from-beginning --max-messages $total --timeout-ms 20000 \
        --formatter-property print.key=true && cmp -s "$work/seg-all.txt" "$work/seg-consume.out"; then
      pass console-consumer-from-segments
    else
      fail console-consumer-from-segments "want the $total records in order, got $(wc -l <"$work/seg-consume.out") lines: $(why seg-consume)"
    fi
  fi
fi

# --- kafka-configs: SCRAM users ---------------------------------------------

scram_user="tools-user-$suffix"
if ! run configs-scram-add $CONFIGS "${B[@]}" --alter --entity-type users --entity-name "$scram_user" \
    --add-config 'SCRAM-SHA-512=[iterations=8192,password=tools-secret]'; then
  fail configs-scram-users "$(why configs-scram-add)"
elif run configs-scram-describe $CONFIGS "${B[@]}" --describe --entity-type users --entity-name "$scram_user" &&
  grep -q "SCRAM-SHA-512=iterations=8192" "$work/configs-scram-describe.out"; then
  pass configs-scram-users
else
  fail configs-scram-users "describe after --add-config SCRAM-SHA-512: $(why configs-scram-describe)"
fi

# --- kafka-transactions ------------------------------------------------------

if run transactions-list $TXNS "${B[@]}" list && grep -q "TransactionalId" "$work/transactions-list.out"; then
  pass transactions-list
else
  fail transactions-list "$(why transactions-list)"
fi
# An idempotent console producer's state shows on the partition it wrote.
txn_topic="tools-producers-$suffix"
if ! run producers-topic $TOPICS "${B[@]}" --create --topic "$txn_topic" --partitions 1 --replication-factor 1 ||
  ! printf 'a\nb\n' | run producers-produce $PRODUCER "${B[@]}" --topic "$txn_topic" \
    --producer-property enable.idempotence=true --producer-property acks=all; then
  fail transactions-describe-producers "setup: $(why producers-produce)"
elif run transactions-producers $TXNS "${B[@]}" describe-producers --topic "$txn_topic" --partition 0 &&
  grep -q "ProducerId" "$work/transactions-producers.out" && [ "$(wc -l <"$work/transactions-producers.out")" -ge 2 ]; then
  pass transactions-describe-producers
else
  fail transactions-describe-producers "want the console producer's state: $(why transactions-producers)"
fi

# --- kafka-share-groups ------------------------------------------------------

# A share group (KIP-932) reads 10 records of a 1-partition topic through
# kafka-console-share-consumer (share.auto.offset.reset=earliest, a group
# config), then kafka-share-groups lists, describes, resets, deletes.
share_topic="tools-share-$suffix"
share_group="tools-share-group-$suffix"
SG=(--group "$share_group")
seq 1 10 >"$work/share-produced.txt"
if ! run share-topic $TOPICS "${B[@]}" --create --topic "$share_topic" --partitions 1 --replication-factor 1 ||
  ! run share-produce $PRODUCER "${B[@]}" --topic "$share_topic" --producer-property acks=all <"$work/share-produced.txt" ||
  ! run share-config $CONFIGS "${B[@]}" --alter --entity-type groups --entity-name "$share_group" --add-config share.auto.offset.reset=earliest; then
  fail share-groups-setup "$(why share-config)"
elif ! run share-consume $SHARECONSUMER "${B[@]}" --topic "$share_topic" "${SG[@]}" --max-messages 10 --timeout-ms 20000 ||
  ! cmp -s <(sort -n "$work/share-produced.txt") <(sort -n "$work/share-consume.out"); then
  fail share-groups-setup "want the 10 records through kafka-console-share-consumer, got $(wc -l <"$work/share-consume.out") lines: $(why share-consume)"
else
  if run share-list $SHARECMD "${B[@]}" --list && grep -qx "$share_group" "$work/share-list.out"; then
    pass share-groups-list
  else
    fail share-groups-list "$share_group not listed: $(why share-list)"
  fi

  # share_row NAME: "START-OFFSET LAG" of partition 0 in a --describe table.
  share_row() { awk -v g="$share_group" -v t="$share_topic" '$1 == g && $2 == t && $3 == 0 { print $4, $5 }' "$work/$1.out"; }
  # Every record accepted: lag 0 (start offset 10; Apache Kafka may still
  # show 0, moving it later).
  if run share-describe $SHARECMD "${B[@]}" --describe "${SG[@]}" &&
    grep -q "START-OFFSET  LAG" "$work/share-describe.out" &&
    { [ "$(share_row share-describe)" = "10 0" ] || [ "$(share_row share-describe)" = "0 0" ]; }; then
    pass share-groups-describe
  else
    fail share-groups-describe "want partition 0 at START-OFFSET 10, LAG 0 (got \"$(share_row share-describe)\"): $(why share-describe)"
  fi

  # --members while a consumer is in: one member, assigned partition 0.
  # (timeout passes the TERM below on to the JVM, which leaves the group.)
  timeout "${CHECK_TIMEOUT:-60}" java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$classpath" $SHARECONSUMER \
    "${B[@]}" --topic "$share_topic" "${SG[@]}" --timeout-ms 60000 >"$work/share-member.out" 2>"$work/share-member.err" &
  member_pid=$!
  members_ok=0
  for _ in $(seq 1 40); do
    if run share-members $SHARECMD "${B[@]}" --describe "${SG[@]}" --members &&
      awk -v g="$share_group" -v t="$share_topic" '$1 == g && $NF == t ":0" && $(NF-1) == 1 { ok = 1 } END { exit !ok }' "$work/share-members.out"; then
      members_ok=1
      break
    fi
    sleep 0.5
  done
  if [ "$members_ok" = 1 ]; then
    pass share-groups-describe-members
  else
    fail share-groups-describe-members "want a member assigned $share_topic:0: $(why share-members)"
  fi
  kill -TERM "$member_pid" 2>/dev/null || true
  wait "$member_pid" 2>/dev/null || true
  empty=0
  for _ in $(seq 1 40); do
    if run share-state $SHARECMD "${B[@]}" --describe "${SG[@]}" --state &&
      grep -q "^$share_group .* Empty  *0$" "$work/share-state.out"; then
      empty=1
      break
    fi
    sleep 0.5
  done
  [ "$empty" = 1 ] || fail share-groups-state "the group is not Empty after its consumer left: $(why share-state)"

  if run share-reset $SHARECMD "${B[@]}" --reset-offsets --to-earliest "${SG[@]}" --topic "$share_topic" --execute &&
    awk -v g="$share_group" -v t="$share_topic" '$1 == g && $2 == t && $3 == 0 && $4 == 0 { ok = 1 } END { exit !ok }' "$work/share-reset.out" &&
    run share-describe-reset $SHARECMD "${B[@]}" --describe "${SG[@]}" &&
    [ "$(share_row share-describe-reset)" = "0 10" ]; then
    pass share-groups-reset-execute
  else
    fail share-groups-reset-execute "want NEW-OFFSET 0, then START-OFFSET 0 and LAG 10 (got \"$(share_row share-describe-reset 2>/dev/null)\"): $(why share-reset)"
  fi

  if run share-delete-offsets $SHARECMD "${B[@]}" --delete-offsets "${SG[@]}" --topic "$share_topic" &&
    grep -q "^$share_topic  *Successful" "$work/share-delete-offsets.out" &&
    run share-describe-deleted $SHARECMD "${B[@]}" --describe "${SG[@]}" &&
    [ -z "$(share_row share-describe-deleted)" ]; then
    pass share-groups-delete-offsets
  else
    fail share-groups-delete-offsets "want $share_topic Successful, then no offsets: $(why share-delete-offsets) / $(why share-describe-deleted)"
  fi

  if run share-delete $SHARECMD "${B[@]}" --delete "${SG[@]}" &&
    grep -q "Deletion of requested share groups ('$share_group') was successful." "$work/share-delete.out" &&
    run share-list-deleted $SHARECMD "${B[@]}" --list && ! grep -qx "$share_group" "$work/share-list-deleted.out"; then
    pass share-groups-delete
  else
    fail share-groups-delete "$(why share-delete)"
  fi
fi

echo "$passed passed, $failed failed"
echo "($((SECONDS - start)) s)" >&2
if [ "$failed" -ne 0 ]; then
  if [ -n "$broker_pid" ]; then
    echo "--- tail of the broker's log (all of it, and each tool's output, in $work with KEEP=1):" >&2
    tail -20 "$work/broker.log" >&2
  fi
  exit 1
fi
