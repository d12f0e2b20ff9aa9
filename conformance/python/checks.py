"""Conformance checks of Python's Kafka clients against a Kafka-compatible cluster.

    python checks.py BOOTSTRAP [REGEXP]

Three clients: confluent-kafka (Confluent's, on librdkafka: the checks named
confluent-*), kafka-python (pure Python, its own protocol code: kafka-python-*) and
aiokafka (asyncio, with protocol code of its own: aiokafka-*).
Each check prints "PASS name" or "FAIL name: reason"; the run ends with
"N passed, N failed" and exits with 1 if any failed. scripts/conformance-python.sh
installs the pinned packages (requirements.txt) in a cached virtualenv and starts
floe (or Apache Kafka, to prove the checks; CONFORMANCE_KAFKA=1 then leaves out
the floe-* checks of floe's own features). CHECK_TIMEOUT (seconds, default 60)
bounds each check.
"""

import asyncio
import itertools
import os
import re
import sys
import threading
import time

import aiokafka
import confluent_kafka as ck
import confluent_kafka.admin as cka
import kafka as kp
import kafka.admin as kpa

BOOTSTRAP = ""
SUFFIX = format(int(time.time() * 1000) % 10**9, "x")
_names = itertools.count(1)


class CheckFailed(Exception):
    """A check's failure: the cluster did not behave as Apache Kafka does."""


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def name(base):
    return f"py-{base}-{SUFFIX}-{next(_names)}"


def keyed(n, tag, parts=1):
    """n records (partition, key, value, headers) to partitions 0..parts-1 in turn."""
    return [(i % parts, f"k-{i}".encode(), f"{tag} value {i} {'x' * (i % 40)}".encode(),
             [("i", str(i).encode()), ("tag", tag.encode())]) for i in range(n)]


def same(want, got):
    """want: {(partition, offset): (key, value, headers)} as acknowledged; got the same, as read."""
    expect(len(got) == len(want), f"read {len(got)} records, produced {len(want)}")
    for pos, (k, v, h) in want.items():
        expect(pos in got, f"no record read at {pos}")
        gk, gv, gh = got[pos]
        expect((gk, gv) == (k, v), f"record at {pos}: {gk!r}={gv!r}, produced {k!r}={v!r}")
        expect(list(gh) == list(h), f"record at {pos}: headers {gh}, produced {h}")


def take(got, records, what="read"):
    """Adds records, ((partition, offset), (key, value, headers)) pairs, to got; a record that
    came before fails the check (a client's reads never repeat one)."""
    for pos, rec in records:
        expect(pos not in got, f"{what}: the record at {pos} came twice")
        got[pos] = rec


def collect(n, poll, what="read"):
    """Calls poll, which returns the records take takes, until n records came (30 s at most)."""
    got = {}
    deadline = time.monotonic() + 30
    while len(got) < n:
        expect(time.monotonic() < deadline, f"{what} {len(got)} of {n} records in 30 s")
        take(got, poll(), what)
    return got


# The checks' transactions: 5 records committed, 3 aborted, 2 committed.
# read_committed reads the 7 at COMMITTED, read_uncommitted the 10 at
# UNCOMMITTED; the markers are at 5, 9, 12.
TXNS = ((5, True), (3, False), (2, True))
COMMITTED = [0, 1, 2, 3, 4, 10, 11]
UNCOMMITTED = [0, 1, 2, 3, 4, 6, 7, 8, 10, 11]
TXN_READS = (("read_committed", len(COMMITTED)), ("read_uncommitted", len(UNCOMMITTED)))


def expect_txn_read(level, got, committed):
    """got, the records read of a TXNS partition at isolation level, are what that level sees:
    read_committed the committed values at their offsets, read_uncommitted every record."""
    offsets = sorted(o for _, o in got)
    if level == "read_committed":
        values = [got[pos][1] for pos in sorted(got)]
        expect(values == committed, f"read_committed read {values}")
        expect(offsets == COMMITTED, f"read_committed offsets {offsets}")
    else:
        expect(offsets == UNCOMMITTED, f"read_uncommitted offsets {offsets}")


def eventually(seconds, f):
    deadline = time.monotonic() + seconds
    while True:
        try:
            return f()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


# --- confluent-kafka (librdkafka) ---------------------------------------------

def ck_conf(**kw):
    conf = {"bootstrap.servers": BOOTSTRAP, "client.id": "floe-conformance-python"}
    conf.update({k.replace("_", "."): v for k, v in kw.items()})
    return conf


def ck_admin():
    return cka.AdminClient(ck_conf())


def ck_create(topic, partitions):
    adm = ck_admin()  # referenced until the futures are done: a collected client fails them
    for f in adm.create_topics([cka.NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def ck_produce(topic, records, **conf):
    """Produces records and returns {(partition, offset): (key, value, headers)} as acknowledged."""
    p = ck.Producer(ck_conf(acks="all", linger_ms=5, **conf))
    acked, errors = {}, []

    def report(headers):
        # A delivery report carries no headers: they are the ones sent.
        def on_delivery(err, msg):
            if err is not None:
                errors.append(err)
            else:
                acked[(msg.partition(), msg.offset())] = (msg.key(), msg.value(), headers)
        return on_delivery

    for part, k, v, h in records:
        p.produce(topic, value=v, key=k, headers=h, partition=part, on_delivery=report(h))
    left = p.flush(30)
    expect(left == 0 and not errors, f"produce: {left} not delivered, errors {errors}")
    return acked


def ck_read_to_end(topic, partitions, **conf):
    """Reads every partition from the start until librdkafka reports its end (enable.partition.eof)."""
    c = ck.Consumer(ck_conf(group_id=name("reader"), enable_partition_eof=True, enable_auto_commit=False, **conf))
    try:
        c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
        got, ended = {}, set()
        deadline = time.monotonic() + 20
        while len(ended) < partitions:
            expect(time.monotonic() < deadline, f"read {len(got)} records, ends of {sorted(ended)} in 20 s")
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                expect(m.error().code() == ck.KafkaError._PARTITION_EOF, f"consume: {m.error()}")
                ended.add(m.partition())
                continue
            take(got, [((m.partition(), m.offset()), (m.key(), m.value(), m.headers() or []))])
        return got
    finally:
        c.close()


def ck_produce_consume(codec):
    def check():
        topic = name(f"ck-{codec}")
        ck_create(topic, 2)
        acked = ck_produce(topic, keyed(200, codec, 2), enable_idempotence=True, compression_type=codec)
        same(acked, ck_read_to_end(topic, 2))
    return check


def ck_admin_topics():
    adm = ck_admin()
    topic = name("ck-admin")
    ck_create(topic, 3)
    try:
        ck_create(topic, 3)
        raise CheckFailed("create again: no error")
    except ck.KafkaException as e:
        expect(e.args[0].code() == ck.KafkaError.TOPIC_ALREADY_EXISTS, f"create again: {e}")
    md = adm.list_topics(topic, timeout=10).topics[topic]
    expect(md.error is None and len(md.partitions) == 3, f"metadata: {md.error}, {len(md.partitions)} partitions")
    for p in md.partitions.values():
        expect(p.leader >= 0 and p.leader in p.replicas, f"partition {p.id}: leader {p.leader}, replicas {p.replicas}")
    res = cka.ConfigResource(cka.ResourceType.TOPIC, topic)
    entries = adm.describe_configs([res])[res].result(10)
    expect(entries["retention.ms"].value and entries["cleanup.policy"].value == "delete",
           f"describe configs: retention.ms {entries.get('retention.ms')}, cleanup.policy {entries.get('cleanup.policy')}")
    for f in adm.create_partitions([cka.NewPartitions(topic, 5)]).values():
        f.result(10)
    eventually(10, lambda: expect(len(adm.list_topics(topic, timeout=10).topics[topic].partitions) == 5, "not 5 partitions"))
    ck_produce(topic, [(4, k, v, h) for _, k, v, h in keyed(5, "admin")])
    for f in adm.delete_records([ck.TopicPartition(topic, 4, 3)]).values():
        f.result(10)
    tp = ck.TopicPartition(topic, 4)
    low = adm.list_offsets({tp: cka.OffsetSpec.earliest()})[tp].result(10).offset
    high = adm.list_offsets({tp: cka.OffsetSpec.latest()})[tp].result(10).offset
    expect((low, high) == (3, 5), f"list offsets after delete records: {low}..{high}, want 3..5")
    got = ck_read_to_end(topic, 5)
    expect(sorted(o for p, o in got if p == 4) == [3, 4], f"after delete records read {sorted(got)}")
    for f in adm.delete_topics([topic]).values():
        f.result(10)
    eventually(10, lambda: expect(topic not in adm.list_topics(timeout=10).topics, "deleted topic still listed"))


def ck_offsets_for_times():
    topic = name("ck-times")
    ck_create(topic, 1)
    t0 = (int(time.time()) - 3600) * 1000
    p = ck.Producer(ck_conf())
    for i in range(3):
        p.produce(topic, value=b"v%d" % i, partition=0, timestamp=t0 + 1000 * i)
    expect(p.flush(30) == 0, "produce: not delivered")
    c = ck.Consumer(ck_conf(group_id=name("times")))
    try:
        for at, want in [(t0 - 60000, 0), (t0, 0), (t0 + 500, 1), (t0 + 2000, 2), (t0 + 3000, -1)]:
            got = c.offsets_for_times([ck.TopicPartition(topic, 0, at)], 10)[0]
            expect(got.error is None and got.offset == want, f"offset for t0+{at - t0} ms: {got.offset} ({got.error}), want {want}")
    finally:
        c.close()


def ck_group_consume(c, n):
    def poll():
        m = c.poll(0.5)
        if m is None:
            return []
        expect(not m.error(), f"group consume: {m.error()}")
        return [((m.partition(), m.offset()), (m.key(), m.value(), m.headers() or []))]
    return collect(n, poll, "group read")


def ck_group(protocol):
    """A group member (classic or KIP-848, per group.protocol) reads 30 records of 2 partitions and
    commits; the group's offsets are the ends, it is listed and described; a restarted member reads
    exactly the 10 produced since; the group is then deleted."""
    def check():
        topic, group = name(f"ck-{protocol}"), name(f"ck-{protocol}-id")
        ck_create(topic, 2)
        first = ck_produce(topic, keyed(30, "first", 2))
        ends = {}
        for p, o in first:
            ends[p] = max(ends.get(p, 0), o + 1)
        conf = {"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False, "group.protocol": protocol}
        c = ck.Consumer(ck_conf(**{k.replace(".", "_"): v for k, v in conf.items()}))
        c.subscribe([topic])
        ck_group_consume(c, 30)
        c.commit(asynchronous=False)
        c.close()
        adm = ck_admin()
        req = ck.ConsumerGroupTopicPartitions(group, [ck.TopicPartition(topic, p) for p in ends])
        offs = adm.list_consumer_group_offsets([req])[group].result(10)
        committed = {tp.partition: tp.offset for tp in offs.topic_partitions}
        expect(committed == ends, f"committed offsets {committed}, want {ends}")
        listed = adm.list_consumer_groups().result(10)
        expect(any(g.group_id == group for g in listed.valid), f"list groups: {group} not listed")
        desc = adm.describe_consumer_groups([group])[group].result(10)
        expect(desc.state == ck.ConsumerGroupState.EMPTY, f"describe group: state {desc.state}")
        second = ck_produce(topic, keyed(10, "second", 2))
        c = ck.Consumer(ck_conf(**{k.replace(".", "_"): v for k, v in conf.items()}))
        c.subscribe([topic])
        try:
            same(second, ck_group_consume(c, 10))
        finally:
            c.close()
        for f in adm.delete_consumer_groups([group]).values():
            f.result(10)
    return check


def ck_txn():
    """A transactional producer commits 5, aborts 3, commits 2; read_committed (librdkafka's default)
    reads the 7 to the end, read_uncommitted all 10, skipping the markers."""
    topic = name("ck-txn")
    ck_create(topic, 1)
    p = ck.Producer(ck_conf(transactional_id=name("ck-txn-id")))
    p.init_transactions(30)
    committed = []
    for n, commit in TXNS:
        p.begin_transaction()
        recs = keyed(n, f"txn-{commit}")
        for part, k, v, h in recs:
            p.produce(topic, value=v, key=k, headers=h, partition=part)
        # Delivered first: an abort purges what is still queued, and the
        # aborted records must be in the log for read_uncommitted.
        expect(p.flush(30) == 0, "produce in a transaction: not delivered")
        if commit:
            p.commit_transaction(30)
            committed += [v for _, _, v, _ in recs]
        else:
            p.abort_transaction(30)
    for level in ("read_committed", "read_uncommitted"):
        expect_txn_read(level, ck_read_to_end(topic, 1, isolation_level=level), committed)


# --- kafka-python --------------------------------------------------------------

def kp_create(topic, partitions):
    adm = kpa.KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    try:
        adm.create_topics([kpa.NewTopic(topic, partitions, 1)])
    finally:
        adm.close()


def kp_produce(topic, records, **conf):
    p = kp.KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all", **conf)
    try:
        futures = [(p.send(topic, key=k, value=v, headers=h, partition=part), k, v, h) for part, k, v, h in records]
        p.flush(30)
        acked = {}
        for f, k, v, h in futures:
            md = f.get(30)
            acked[(md.partition, md.offset)] = (k, v, h)
        return acked
    finally:
        p.close()


def kp_read(consumer, n):
    return collect(n, lambda: [((r.partition, r.offset), (r.key, r.value, list(r.headers)))
                               for recs in consumer.poll(500).values() for r in recs])


def kp_produce_consume(codec):
    def check():
        topic = name(f"kp-{codec}")
        kp_create(topic, 2)
        acked = kp_produce(topic, keyed(200, codec, 2), enable_idempotence=True,
                           compression_type=None if codec == "none" else codec)
        c = kp.KafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False)
        try:
            tps = [kp.TopicPartition(topic, p) for p in range(2)]
            c.assign(tps)
            c.seek_to_beginning(*tps)
            same(acked, kp_read(c, 200))
            ends = c.end_offsets(tps)
            expect(sum(ends.values()) == 200 and c.beginning_offsets(tps) == {tp: 0 for tp in tps},
                   f"offsets: beginning {c.beginning_offsets(tps)}, end {ends}")
        finally:
            c.close()
    return check


def kp_offsets_for_times():
    topic = name("kp-times")
    kp_create(topic, 1)
    t0 = (int(time.time()) - 3600) * 1000
    p = kp.KafkaProducer(bootstrap_servers=BOOTSTRAP)
    for i in range(3):
        p.send(topic, value=b"v%d" % i, partition=0, timestamp_ms=t0 + 1000 * i)
    p.flush(30)
    p.close()
    c = kp.KafkaConsumer(bootstrap_servers=BOOTSTRAP)
    try:
        tp = kp.TopicPartition(topic, 0)
        for at, want in [(t0 - 60000, 0), (t0, 0), (t0 + 500, 1), (t0 + 2000, 2), (t0 + 3000, None)]:
            got = c.offsets_for_times({tp: at})[tp]
            expect((got and got.offset) == want, f"offset for t0+{at - t0} ms: {got}, want {want}")
    finally:
        c.close()


def kp_admin_topics():
    """KafkaAdminClient: create_topics (again: TopicAlreadyExistsError), describe_topics with 3
    partitions and leaders, describe_configs, create_partitions to 5, delete_records before 3,
    list_partition_offsets, delete_topics."""
    topic = name("kp-admin")
    adm = kpa.KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    try:
        adm.create_topics([kpa.NewTopic(topic, 3, 1)])
        try:
            adm.create_topics([kpa.NewTopic(topic, 3, 1)])
            raise CheckFailed("create again: no error")
        except kp.errors.TopicAlreadyExistsError:
            pass

        def partitions_are(n):
            (md,) = adm.describe_topics([topic])
            expect(md["error_code"] == 0 and len(md["partitions"]) == n, f"describe topics: {md}, want {n} partitions")
            for p in md["partitions"]:
                expect(p["leader_id"] >= 0 and p["leader_id"] in p["replica_nodes"], f"partition without a leader: {p}")
        partitions_are(3)
        configs = adm.describe_configs([kpa.ConfigResource("TOPIC", topic)], config_filter="all")["topic"][topic]
        expect(configs.get("retention.ms", {}).get("value") and configs.get("cleanup.policy", {}).get("value") == "delete",
               f"describe configs: retention.ms {configs.get('retention.ms')}, cleanup.policy {configs.get('cleanup.policy')}")
        adm.create_partitions({topic: 5})
        eventually(10, lambda: partitions_are(5))
        kp_produce(topic, [(4, k, v, h) for _, k, v, h in keyed(5, "admin")])
        tp = kp.TopicPartition(topic, 4)
        deleted = adm.delete_records({tp: 3})[tp]
        expect(deleted["error_code"] == 0 and deleted["low_watermark"] == 3, f"delete records: {deleted}")
        low = adm.list_partition_offsets({tp: kpa.OffsetSpec.EARLIEST})[tp].offset
        high = adm.list_partition_offsets({tp: kpa.OffsetSpec.LATEST})[tp].offset
        expect((low, high) == (3, 5), f"list partition offsets after delete records: {low}..{high}, want 3..5")
        adm.delete_topics([topic])
        eventually(10, lambda: expect(topic not in adm.list_topics(), "deleted topic still listed"))
    finally:
        adm.close()


def kp_group_commit_resume():
    topic, group = name("kp-group"), name("kp-group-id")
    kp_create(topic, 2)
    kp_produce(topic, keyed(30, "first", 2))
    conf = dict(bootstrap_servers=BOOTSTRAP, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    c = kp.KafkaConsumer(topic, **conf)
    first = kp_read(c, 30)
    c.commit()
    c.close()
    ends = {}
    for p, o in first:
        ends[p] = max(ends.get(p, 0), o + 1)
    second = kp_produce(topic, keyed(10, "second", 2))
    c = kp.KafkaConsumer(topic, **conf)
    try:
        got = kp_read(c, 10)
        same(second, got)
        committed = {tp.partition: c.committed(tp) for tp in [kp.TopicPartition(topic, p) for p in ends]}
        expect(committed == ends, f"committed {committed}, want {ends}")
    finally:
        c.close()
    adm = kpa.KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    try:
        offs = {tp.partition: om.offset for tp, om in adm.list_group_offsets({group: None})[group].items()}
        expect(offs == ends, f"list group offsets {offs}, want the first commit's {ends}")
        listed = [g for g in adm.list_groups() if g["group_id"] == group]
        expect(len(listed) == 1 and listed[0]["group_state"] == "Empty", f"list groups: {listed}")
        desc = adm.describe_groups([group])[group]
        expect(desc["group_state"] == "Empty" and desc["protocol_type"] == "consumer" and not desc["members"],
               f"describe groups: {desc}")
        expect(adm.delete_groups([group]) == {group: "OK"}, "delete groups: not OK")
        expect(all(g["group_id"] != group for g in adm.list_groups()), "deleted group still listed")
    finally:
        adm.close()


def kp_txn():
    topic = name("kp-txn")
    kp_create(topic, 1)
    p = kp.KafkaProducer(bootstrap_servers=BOOTSTRAP, transactional_id=name("kp-txn-id"))
    p.init_transactions()
    committed = []
    for n, commit in TXNS:
        p.begin_transaction()
        recs = keyed(n, f"txn-{commit}")
        for part, k, v, h in recs:
            p.send(topic, key=k, value=v, headers=h, partition=part)
        p.flush(30)  # as in ck_txn: the aborted records are sent before the abort
        if commit:
            p.commit_transaction()
            committed += [v for _, _, v, _ in recs]
        else:
            p.abort_transaction()
    p.close()
    for level, want in TXN_READS:
        c = kp.KafkaConsumer(bootstrap_servers=BOOTSTRAP, isolation_level=level, enable_auto_commit=False)
        try:
            tp = kp.TopicPartition(topic, 0)
            c.assign([tp])
            c.seek_to_beginning(tp)
            expect_txn_read(level, kp_read(c, want), committed)
            end = c.end_offsets([tp])[tp]
            expect(end == 13, f"{level} end offset {end}, want 13 (10 records, 3 markers)")
        finally:
            c.close()


# --- aiokafka (asyncio) -----------------------------------------------------------

def aio(f):
    """Runs the coroutine function f in an event loop of its own."""
    return lambda: asyncio.run(f())


async def aio_read(consumer, n):
    got = {}
    deadline = time.monotonic() + 30
    while len(got) < n:
        expect(time.monotonic() < deadline, f"read {len(got)} of {n} records in 30 s")
        for recs in (await consumer.getmany(timeout_ms=500)).values():
            take(got, [((r.partition, r.offset), (r.key, r.value, list(r.headers))) for r in recs])
    return got


async def aio_send(producer, topic, records):
    acked = {}
    for part, k, v, h in records:
        md = await producer.send_and_wait(topic, v, key=k, partition=part, headers=h)
        acked[(md.partition, md.offset)] = (k, v, h)
    return acked


def aio_produce_consume(codec):
    """An idempotent aiokafka producer sends 200 records with headers over 2 partitions with the
    codec; an assigned consumer reads back exactly those; end_offsets agree."""
    async def check():
        topic = name(f"aio-{codec}")
        kp_create(topic, 2)
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all", enable_idempotence=True,
                                      compression_type=None if codec == "none" else codec)
        await p.start()
        try:
            # All sent before the first is acknowledged, so they batch.
            records = keyed(200, codec, 2)
            sent = await asyncio.gather(*[p.send(topic, v, key=k, partition=part, headers=h) for part, k, v, h in records])
            mds = await asyncio.gather(*sent)
            acked = {(md.partition, md.offset): (k, v, h) for (_, k, v, h), md in zip(records, mds)}
        finally:
            await p.stop()
        c = aiokafka.AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False)
        tps = [aiokafka.TopicPartition(topic, i) for i in range(2)]
        c.assign(tps)
        await c.start()
        try:
            await c.seek_to_beginning(*tps)
            same(acked, await aio_read(c, 200))
            ends = await c.end_offsets(tps)
            expect(sum(ends.values()) == 200, f"end offsets {ends}")
        finally:
            await c.stop()
    return check


async def aio_group_commit_resume():
    """A group member reads 30 records and commits; a restarted one reads exactly the 10 since."""
    topic, group = name("aio-group"), name("aio-group-id")
    kp_create(topic, 2)
    conf = dict(bootstrap_servers=BOOTSTRAP, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    p = aiokafka.AIOKafkaProducer(bootstrap_servers=BOOTSTRAP)
    await p.start()
    try:
        await aio_send(p, topic, keyed(30, "first", 2))
        c = aiokafka.AIOKafkaConsumer(topic, **conf)
        await c.start()
        try:
            await aio_read(c, 30)
            await c.commit()
        finally:
            await c.stop()
        second = await aio_send(p, topic, keyed(10, "second", 2))
    finally:
        await p.stop()
    c = aiokafka.AIOKafkaConsumer(topic, **conf)
    await c.start()
    try:
        same(second, await aio_read(c, 10))
    finally:
        await c.stop()


async def aio_txn():
    """A transactional producer commits 5, aborts 3, commits 2; read_committed reads the 7,
    read_uncommitted all 10, and the log ends at 13 (with the 3 markers)."""
    topic = name("aio-txn")
    kp_create(topic, 1)
    p = aiokafka.AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, transactional_id=name("aio-txn-id"))
    await p.start()
    committed = []
    try:
        for n, commit in TXNS:
            await p.begin_transaction()
            recs = keyed(n, f"txn-{commit}")
            await aio_send(p, topic, recs)
            if commit:
                await p.commit_transaction()
                committed += [v for _, _, v, _ in recs]
            else:
                await p.abort_transaction()
    finally:
        await p.stop()
    for level, want in TXN_READS:
        c = aiokafka.AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, isolation_level=level, enable_auto_commit=False)
        tp = aiokafka.TopicPartition(topic, 0)
        c.assign([tp])
        await c.start()
        try:
            await c.seek_to_beginning(tp)
            expect_txn_read(level, await aio_read(c, want), committed)
            end = (await c.end_offsets([tp]))[tp]
            expect(end == 13, f"{level} end offset {end}, want 13")
        finally:
            await c.stop()


# --- floe's hierarchical topics (not Kafka's: skipped with CONFORMANCE_KAFKA=1) ---

VIEW_KEYS = ["CC54 RYD", "NN03 RYB", "CC54 RYD", "XX", "NN03 RYB", "CC54 RYD"]


def view_topic():
    """A hierarchical topic (hierarchical.enabled=true) holding six records under VIEW_KEYS, at
    offsets 0-5; returns it and its view of key CC54 RYD."""
    topic = name("view")
    adm = ck_admin()
    for f in adm.create_topics([cka.NewTopic(topic, 1, 1, config={"hierarchical.enabled": "true"})]).values():
        f.result(30)
    ck_produce(topic, [(0, k.encode(), b"r%d" % i, []) for i, k in enumerate(VIEW_KEYS)])
    return topic, topic + "/CC54 RYD"


def ck_view():
    """A confluent-kafka group subscribed to TOPIC/CC54 RYD reads that key's records at their base
    offsets (0, 2, 5) and commits; after one more record of the key a restarted member reads just it."""
    topic, view = view_topic()
    conf = ck_conf(group_id=name("view-id"), auto_offset_reset="earliest", enable_auto_commit=False)
    c = ck.Consumer(conf)
    c.subscribe([view])
    try:
        got = ck_group_consume(c, 3)
        expect(sorted(got) == [(0, 0), (0, 2), (0, 5)] and all(k == b"CC54 RYD" for k, _, _ in got.values()),
               f"view read {got}")
        c.commit(asynchronous=False)
    finally:
        c.close()
    ck_produce(topic, [(0, b"CC54 RYD", b"r6", []), (0, b"XX", b"r7", [])])
    c = ck.Consumer(conf)
    c.subscribe([view])
    try:
        got = ck_group_consume(c, 1)
        expect(list(got) == [(0, 6)], f"restarted member read {got}, want only offset 6")
    finally:
        c.close()


async def aio_view():
    """An aiokafka consumer assigned TOPIC/CC54 RYD reads that key's records at offsets 0, 2, 5."""
    _, view = view_topic()
    c = aiokafka.AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False)
    tp = aiokafka.TopicPartition(view, 0)
    c.assign([tp])
    await c.start()
    try:
        await c.seek_to_beginning(tp)
        got = await aio_read(c, 3)
        expect(sorted(got) == [(0, 0), (0, 2), (0, 5)], f"view read {got}")
    finally:
        await c.stop()


CHECKS = (
    [(f"confluent-produce-consume-{c}", ck_produce_consume(c)) for c in ("none", "gzip", "snappy", "lz4", "zstd")]
    + [
        ("confluent-admin-topics", ck_admin_topics),
        ("confluent-offsets-for-times", ck_offsets_for_times),
        ("confluent-group-classic", ck_group("classic")),
        ("confluent-group-kip848", ck_group("consumer")),
        ("confluent-txn-commit-abort", ck_txn),
    ]
    + [(f"kafka-python-produce-consume-{c}", kp_produce_consume(c)) for c in ("none", "gzip", "snappy", "lz4", "zstd")]
    + [
        ("kafka-python-admin-topics", kp_admin_topics),
        ("kafka-python-offsets-for-times", kp_offsets_for_times),
        ("kafka-python-group-commit-resume", kp_group_commit_resume),
        ("kafka-python-txn-commit-abort", kp_txn),
    ]
    + [(f"aiokafka-produce-consume-{c}", aio(aio_produce_consume(c))) for c in ("none", "gzip", "snappy", "lz4", "zstd")]
    + [
        ("aiokafka-group-commit-resume", aio(aio_group_commit_resume)),
        ("aiokafka-txn-commit-abort", aio(aio_txn)),
        # kafka-python refuses a topic name with a '/' or a space on its own
        # (kafka.util.ensure_valid_topic_name), so it has no view check.
        ("floe-view-confluent", ck_view),
        ("floe-view-aiokafka", aio(aio_view)),
    ]
)


def run_bounded(f, timeout):
    """Runs f in a daemon thread; a check that hangs fails and is left behind."""
    result = []

    def target():
        try:
            f()
            result.append(None)
        except Exception as e:  # noqa: BLE001 -- every failure is reported
            result.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    if not result:
        return CheckFailed(f"no result within {timeout} s")
    return result[0]


def main():
    global BOOTSTRAP
    if len(sys.argv) not in (2, 3):
        print("usage: checks.py BOOTSTRAP [REGEXP]", file=sys.stderr)
        sys.exit(2)
    BOOTSTRAP = sys.argv[1]
    pattern = re.compile(sys.argv[2] if len(sys.argv) == 3 else "")
    timeout = int(os.environ.get("CHECK_TIMEOUT", "60"))
    passed = failed = 0
    skip_floe = os.environ.get("CONFORMANCE_KAFKA") == "1"
    for check_name, f in CHECKS:
        if not pattern.search(check_name) or (skip_floe and check_name.startswith("floe-")):
            continue
        start = time.monotonic()
        err = run_bounded(f, timeout)
        if err is None:
            passed += 1
            print(f"PASS {check_name} ({time.monotonic() - start:.1f} s)", flush=True)
        else:
            failed += 1
            print(f"FAIL {check_name}: {type(err).__name__}: {err}", flush=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
