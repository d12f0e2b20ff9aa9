package floe.conformance;

import static floe.conformance.CheckFailed.expect;
import static floe.conformance.CheckFailed.expectEqual;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupNotEmptyException;

/** Share groups (KIP-932): KafkaShareConsumer reading together and acknowledging. */
final class ShareChecks {
    private static final Duration POLL = Duration.ofMillis(200);

    private ShareChecks() {
    }

    static List<Check> all() {
        return List.of(
                new Check("share-cooperative", ShareChecks::cooperative),
                new Check("share-explicit-ack", ShareChecks::explicitAck),
                new Check("share-admin", ShareChecks::admin),
                new Check("share-read-committed", ShareChecks::readCommitted),
                new Check("share-retention", ShareChecks::retention),
                new Check("share-lock-timeout-poison", ShareChecks::lockTimeoutPoison));
    }

    /** floe's own: share groups on hierarchical views (left out against Apache Kafka, as ViewChecks). */
    static List<Check> floeOnly() {
        return List.of(new Check("floe-share-view", ShareChecks::view));
    }

    /**
     * A share group on a hierarchical view: a topic with
     * hierarchical.enabled=true gets 4 batches (one of the key alone, one of
     * another key alone, two mixed); a share consumer subscribed to
     * TOPIC/CC54 RYD reads exactly that key's records, each once with
     * delivery count 1 at its base offset, and after it commits, the view's
     * share-partition starts at the base partition's end with lag 0: the
     * other keys' offsets the broker acquired with it and cut out of the
     * batches were acknowledged as gaps by the client.
     */
    static void view(Env env) throws Exception {
        String topic = env.name("share-view");
        NewTopic nt = new NewTopic(topic, java.util.Optional.of(1), java.util.Optional.empty())
                .configs(Map.of("hierarchical.enabled", "true"));
        env.await(env.admin().createTopics(List.of(nt)).all(), "CreateTopics " + topic);
        String key = "CC54 RYD";
        List<List<String>> batches = List.of(
                List.of(key, key, key),
                List.of("XX", "XX"),
                List.of("NN03 RYB", key, "XX", key),
                List.of(key, "NN03 RYB"));
        KafkaProducer<String, String> producer = env.producer(Map.of());
        Set<Long> want = new HashSet<>();
        long offset = 0;
        for (List<String> batch : batches) {
            List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> sent = new ArrayList<>();
            for (String k : batch) {
                sent.add(producer.send(new ProducerRecord<>(topic, 0, k, "r" + offset)));
                if (k.equals(key)) {
                    want.add(offset);
                }
                offset++;
            }
            producer.flush();
            Records.awaitAll(env, sent);
        }
        long end = offset;
        String view = topic + "/" + key;
        String group = env.name("share-view");
        earliest(env, group);
        KafkaShareConsumer<String, String> consumer = env.shareConsumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group));
        consumer.subscribe(List.of(view));
        Set<Long> got = new HashSet<>();
        while (got.size() < want.size()) {
            env.deadline.check("waiting for " + want.size() + " records of " + view + ", got " + got);
            for (ConsumerRecord<String, String> r : consumer.poll(env.deadline.atMost(POLL))) {
                expect(r.topic().equals(view) && key.equals(r.key()) && want.contains(r.offset()),
                        "the view answered " + r.topic() + " key " + r.key() + " at " + r.offset());
                expectEqual("r" + r.offset(), r.value(), "value at " + r.offset());
                expectEqual((short) 1, deliveryCount(r), "delivery count of offset " + r.offset());
                expect(got.add(r.offset()), "offset " + r.offset() + " delivered twice");
            }
        }
        consumer.commitSync(env.deadline.remaining()); // accepts them (implicit mode)
        TopicPartition tp = new TopicPartition(view, 0);
        awaitOffsets(env, group, List.of(tp), tp, end, end, 0);
        expectNothingMore(env, consumer, Duration.ofSeconds(2));
        env.closeNow(consumer);
        env.await(env.admin().deleteTopics(List.of(topic)).all(), "DeleteTopics " + topic);
    }

    /** Sets group configs of group (GROUP resource), as Admin.incrementalAlterConfigs does. */
    private static void groupConfigs(Env env, String group, Map<String, String> configs) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        List<AlterConfigOp> ops = new ArrayList<>();
        configs.forEach((name, value) -> ops.add(new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET)));
        env.await(env.admin().incrementalAlterConfigs(Map.of(resource, ops)).all(),
                "IncrementalAlterConfigs " + configs + " of " + group);
    }

    /** Sends records from..from+n-1 to partition 0 of topic at once (one batch, as a rule) and waits for them. */
    private static void sendBatch(Env env, KafkaProducer<String, String> producer, String topic, int from, int n) throws Exception {
        List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> sent = new ArrayList<>();
        for (int i = from; i < from + n; i++) {
            sent.add(producer.send(Records.numbered(topic, 0, i, null)));
        }
        producer.flush();
        Records.awaitAll(env, sent);
    }

    /** Polls consumer for quiet, failing on any record: what is done must never come back. */
    private static void expectNothingMore(Env env, KafkaShareConsumer<String, String> consumer, Duration quiet) {
        long until = System.nanoTime() + quiet.toNanos();
        while (System.nanoTime() < until && !env.deadline.expired()) {
            for (ConsumerRecord<String, String> r : consumer.poll(env.deadline.atMost(POLL))) {
                throw new CheckFailed("offset " + r.offset() + " delivered again with count " + deliveryCount(r));
            }
        }
    }

    /** Sets share.auto.offset.reset=earliest on group, as a group config (GROUP resource). */
    private static void earliest(Env env, String group) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        AlterConfigOp op = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
        env.await(env.admin().incrementalAlterConfigs(Map.of(resource, List.of(op))).all(),
                "IncrementalAlterConfigs share.auto.offset.reset of " + group);
    }

    private static short deliveryCount(ConsumerRecord<String, String> r) {
        return r.deliveryCount().orElseThrow(() -> new CheckFailed("record " + r.offset() + " has no delivery count"));
    }

    /**
     * Three share consumers of one group on one partition of 30 batches of
     * 10 records (max.poll.records=10), polled in turn: every record is
     * read, no (offset, delivery count) is delivered twice, and at least two
     * consumers are served.
     */
    static void cooperative(Env env) throws Exception {
        int batches = 30;
        int perBatch = 10;
        int records = batches * perBatch;
        String topic = env.createTopic("share-coop", 1);
        KafkaProducer<String, String> producer = env.producer(Map.of());
        for (int b = 0; b < batches; b++) {
            List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> sent = new ArrayList<>();
            for (int i = b * perBatch; i < (b + 1) * perBatch; i++) {
                sent.add(producer.send(Records.numbered(topic, 0, i, null)));
            }
            producer.flush();
            Records.awaitAll(env, sent);
        }
        String group = env.name("share-coop");
        earliest(env, group);
        List<KafkaShareConsumer<String, String>> consumers = new ArrayList<>();
        for (int c = 0; c < 3; c++) {
            KafkaShareConsumer<String, String> consumer = env.shareConsumer(Map.of(
                    ConsumerConfig.GROUP_ID_CONFIG, group,
                    ConsumerConfig.MAX_POLL_RECORDS_CONFIG, perBatch));
            consumer.subscribe(List.of(topic));
            consumers.add(consumer);
        }
        Set<Long> offsets = new HashSet<>();
        Set<String> deliveries = new HashSet<>();
        Map<Integer, Integer> served = new HashMap<>();
        while (offsets.size() < records) {
            env.deadline.check("waiting for " + records + " records, got " + offsets.size());
            for (int c = 0; c < consumers.size(); c++) {
                for (ConsumerRecord<String, String> r : consumers.get(c).poll(env.deadline.atMost(POLL))) {
                    Records.expectNumbered(r, (int) r.offset());
                    expect(deliveries.add(r.offset() + "/" + deliveryCount(r)),
                            "offset " + r.offset() + " delivered twice with count " + deliveryCount(r));
                    offsets.add(r.offset());
                    served.merge(c, 1, Integer::sum);
                }
            }
        }
        expect(served.size() >= 2, "records read by one consumer only: " + served);
    }

    /**
     * share.acknowledgement.mode=explicit: of three records, the first is
     * accepted, the second released and the third rejected; the released one
     * comes back with delivery count 2 and is accepted; nothing else comes
     * back.
     */
    static void explicitAck(Env env) throws Exception {
        String topic = env.createTopic("share-ack", 1);
        Records.produce(env, env.producer(Map.of()), topic, 1, 3);
        String group = env.name("share-ack");
        earliest(env, group);
        KafkaShareConsumer<String, String> consumer = env.shareConsumer(Map.of(
                ConsumerConfig.GROUP_ID_CONFIG, group,
                "share.acknowledgement.mode", "explicit"));
        consumer.subscribe(List.of(topic));
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        while (got.size() < 3) {
            env.deadline.check("waiting for 3 records, got " + got.size());
            for (ConsumerRecord<String, String> r : consumer.poll(env.deadline.atMost(POLL))) {
                got.add(r);
                expectEqual((short) 1, deliveryCount(r), "first delivery count of offset " + r.offset());
                AcknowledgeType type = switch ((int) r.offset()) {
                    case 0 -> AcknowledgeType.ACCEPT;
                    case 1 -> AcknowledgeType.RELEASE;
                    default -> AcknowledgeType.REJECT;
                };
                consumer.acknowledge(r, type);
            }
        }
        consumer.commitSync(env.deadline.remaining());
        ConsumerRecord<String, String> again = null;
        while (again == null) {
            env.deadline.check("waiting for the released record");
            for (ConsumerRecord<String, String> r : consumer.poll(env.deadline.atMost(POLL))) {
                expectEqual(1L, r.offset(), "the record delivered again");
                expectEqual((short) 2, deliveryCount(r), "delivery count of the released record");
                consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                again = r;
            }
        }
        consumer.commitSync(env.deadline.remaining());
        // Nothing more comes: accepted and rejected records are done.
        long until = System.nanoTime() + Duration.ofSeconds(3).toNanos();
        while (System.nanoTime() < until && !env.deadline.expired()) {
            for (ConsumerRecord<String, String> r : consumer.poll(env.deadline.atMost(POLL))) {
                throw new CheckFailed("offset " + r.offset() + " delivered again with count " + deliveryCount(r));
            }
        }
    }

    /**
     * The share group admin side (what kafka-share-groups.sh uses): a share
     * consumer reads and accepts 10 records; listGroups(share) and
     * describeShareGroups show the group Stable with its member;
     * listShareGroupOffsets answers lag 0 (start offset 10 on floe; Kafka
     * may still answer 0, its SPSO moving later); altering
     * and deleting offsets fail with GroupNotEmptyException while the member
     * is in. Once it leaves (Empty), alterShareGroupOffsets moves the start
     * offset to 3 (lag 7), deleteShareGroupOffsets drops the partition's
     * state, and deleteShareGroups removes the group.
     */
    static void admin(Env env) throws Exception {
        String topic = env.createTopic("share-admin", 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        Records.produce(env, env.producer(Map.of()), topic, 1, 10);
        String group = env.name("share-admin");
        earliest(env, group);
        KafkaShareConsumer<String, String> consumer = env.shareConsumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group));
        consumer.subscribe(List.of(topic));
        Set<Long> read = new HashSet<>();
        while (read.size() < 10) {
            env.deadline.check("waiting for 10 records, got " + read.size());
            for (ConsumerRecord<String, String> r : consumer.poll(env.deadline.atMost(POLL))) {
                read.add(r.offset());
            }
        }
        consumer.commitSync(env.deadline.remaining()); // accepts them (implicit mode)

        Admin admin = env.admin();
        GroupListing listed = awaitListed(env, group, l -> l.groupState().equals(java.util.Optional.of(GroupState.STABLE)));
        expectEqual(java.util.Optional.of(GroupType.SHARE), listed.type(), "listed group type");
        ShareGroupDescription d = env.await(admin.describeShareGroups(List.of(group)).describedGroups().get(group), "DescribeShareGroups " + group);
        expectEqual(GroupState.STABLE, d.groupState(), "described group state");
        expectEqual(1, d.members().size(), "described members");
        expectEqual(Set.of(tp), d.members().iterator().next().assignment().topicPartitions(), "member assignment");
        // Lag 0; the start offset is 10 on floe, which moves it past the
        // accepted records at once, and may still be 0 on Kafka, which
        // counts them as delivered (KIP-1226) and moves it later.
        awaitOffsets(env, group, null, tp, 0, 10, 0);

        expectNonEmpty(env, admin.alterShareGroupOffsets(group, Map.of(tp, 3L)).all(), "AlterShareGroupOffsets with a member");
        expectNonEmpty(env, admin.deleteShareGroupOffsets(group, Set.of(topic)).all(), "DeleteShareGroupOffsets with a member");

        env.closeNow(consumer);
        awaitListed(env, group, l -> l.groupState().equals(java.util.Optional.of(GroupState.EMPTY)));
        env.await(admin.alterShareGroupOffsets(group, Map.of(tp, 3L)).all(), "AlterShareGroupOffsets " + group);
        awaitOffsets(env, group, List.of(tp), tp, 3, 3, 7);
        env.await(admin.deleteShareGroupOffsets(group, Set.of(topic)).all(), "DeleteShareGroupOffsets " + group);
        while (true) {
            env.deadline.check("waiting for the deleted offsets to be gone");
            Map<TopicPartition, SharePartitionOffsetInfo> offsets = env.await(
                    admin.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(group),
                    "ListShareGroupOffsets " + group);
            if (offsets.get(tp) == null) {
                break;
            }
            Thread.sleep(100);
        }
        env.await(admin.deleteShareGroups(List.of(group)).all(), "DeleteShareGroups " + group);
        boolean gone = env.await(admin.listGroups(ListGroupsOptions.forShareGroups()).all(), "ListGroups share").stream()
                .noneMatch(l -> l.groupId().equals(group));
        expect(gone, "group " + group + " still listed after DeleteShareGroups");
    }

    /**
     * share.isolation.level=read_committed (set explicitly: Kafka's default
     * is read_uncommitted, floe's read_committed): a transaction of 5 records
     * aborted, then one of 3 committed; a share consumer reads exactly the 3
     * committed ones, once each (the broker filters the aborted ones out, as
     * share consumers filter nothing), and the partition completes: lag 0.
     */
    static void readCommitted(Env env) throws Exception {
        String topic = env.createTopic("share-txn", 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        KafkaProducer<String, String> producer = env.producer(Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, env.name("share-txn"),
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 30_000));
        producer.initTransactions();
        producer.beginTransaction();
        for (int i = 0; i < 5; i++) {
            producer.send(Records.numbered(topic, 0, i, null));
        }
        producer.flush();
        producer.abortTransaction();
        producer.beginTransaction();
        for (int i = 5; i < 8; i++) {
            producer.send(Records.numbered(topic, 0, i, null));
        }
        producer.commitTransaction();

        String group = env.name("share-txn");
        groupConfigs(env, group, Map.of("share.auto.offset.reset", "earliest", "share.isolation.level", "read_committed"));
        KafkaShareConsumer<String, String> consumer = env.shareConsumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group));
        consumer.subscribe(List.of(topic));
        Set<Integer> read = new HashSet<>();
        while (read.size() < 3) {
            env.deadline.check("waiting for the 3 committed records, got " + read);
            for (ConsumerRecord<String, String> r : consumer.poll(env.deadline.atMost(POLL))) {
                int i = Records.index(r);
                expect(i >= 5, "record " + i + " of the aborted transaction delivered at offset " + r.offset());
                expect(read.add(i), "record " + i + " delivered twice");
                Records.expectNumbered(r, i);
            }
        }
        consumer.commitSync(env.deadline.remaining()); // accepts them (implicit mode)
        expectNothingMore(env, consumer, Duration.ofSeconds(3));
        // 10 offsets: 5 aborted, a marker, 3 committed, a marker. Lag 0
        // (floe's start offset is 10 at once; Kafka's may move later).
        awaitOffsets(env, group, null, tp, 0, 10, 0);
    }

    /**
     * Retention: 10 records, deleteRecords before offset 5; a share consumer
     * from earliest reads 5-9, once each, and nothing below 5.
     */
    static void retention(Env env) throws Exception {
        String topic = env.createTopic("share-retention", 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        Records.produce(env, env.producer(Map.of()), topic, 1, 10);
        env.await(env.admin().deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(5))).all(),
                "DeleteRecords before 5");
        String group = env.name("share-retention");
        earliest(env, group);
        KafkaShareConsumer<String, String> consumer = env.shareConsumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group));
        consumer.subscribe(List.of(topic));
        Set<Long> read = new HashSet<>();
        while (read.size() < 5) {
            env.deadline.check("waiting for offsets 5-9, got " + read);
            for (ConsumerRecord<String, String> r : consumer.poll(env.deadline.atMost(POLL))) {
                expect(r.offset() >= 5, "offset " + r.offset() + " below the log start 5 delivered");
                expect(read.add(r.offset()), "offset " + r.offset() + " delivered twice");
                Records.expectNumbered(r, (int) r.offset());
            }
        }
        consumer.commitSync(env.deadline.remaining());
        expectNothingMore(env, consumer, Duration.ofSeconds(2));
        awaitOffsets(env, group, null, tp, 5, 10, 0);
    }

    /**
     * Poison records and lock timeouts, with share.record.lock.duration.ms
     * 15000 (the least allowed) and share.delivery.count.limit 2. A victim
     * JVM (ShareVictim) acquires batch 0-4 and lives on without
     * acknowledging: those records come back when their lock expires, not
     * before 10 s. A second victim acquires batch 5-9 and is killed
     * (destroyForcibly): its connection drops and the records go back at
     * once, their delivery count kept (Kafka 4.4's releaseAcquiredRecords).
     * Another consumer gets 0-9 with delivery count 2 and releases them,
     * which at the limit archives them: they never come back. Batch 10-14,
     * nobody's, is read with count 1 and accepted.
     */
    static void lockTimeoutPoison(Env env) throws Exception {
        String topic = env.createTopic("share-poison", 1);
        String group = env.name("share-poison");
        groupConfigs(env, group, Map.of("share.auto.offset.reset", "earliest",
                "share.record.lock.duration.ms", "15000", "share.delivery.count.limit", "2"));
        KafkaProducer<String, String> producer = env.producer(Map.of());
        sendBatch(env, producer, topic, 0, 5);
        try (Victim holder = new Victim(env, group, topic, 5)) {
            expectHeldOnce(holder.held(env), 0, 4);
            long heldAt = System.nanoTime();
            // The holder fetches nothing more: the next victim takes 5-9.
            sendBatch(env, producer, topic, 5, 5);
            try (Victim killed = new Victim(env, group, topic, 5)) {
                expectHeldOnce(killed.held(env), 5, 9);
                killed.kill();
            }
            sendBatch(env, producer, topic, 10, 5);
            KafkaShareConsumer<String, String> consumer = env.shareConsumer(Map.of(
                    ConsumerConfig.GROUP_ID_CONFIG, group,
                    "share.acknowledgement.mode", "explicit"));
            consumer.subscribe(List.of(topic));
            Map<Long, Short> got = new TreeMap<>();
            while (got.size() < 15) {
                env.deadline.check("waiting for offsets 0-14, got " + got);
                boolean acked = false;
                for (ConsumerRecord<String, String> r : consumer.poll(env.deadline.atMost(POLL))) {
                    short count = deliveryCount(r);
                    Short before = got.putIfAbsent(r.offset(), count);
                    expect(before == null, "offset " + r.offset() + " delivered again with count " + count + " (first " + before + ")");
                    if (r.offset() < 10) {
                        expectEqual((short) 2, count, "delivery count of offset " + r.offset() + ", a victim's");
                        long waited = Duration.ofNanos(System.nanoTime() - heldAt).toMillis();
                        expect(r.offset() >= 5 || waited >= 10_000,
                                "offset " + r.offset() + " came back " + waited + " ms after the living victim acquired it, before its 15 s lock");
                        consumer.acknowledge(r, AcknowledgeType.RELEASE); // at the limit: archived
                    } else {
                        expectEqual((short) 1, count, "delivery count of offset " + r.offset());
                        consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                    acked = true;
                }
                if (acked) {
                    consumer.commitSync(env.deadline.remaining());
                }
            }
            expectNothingMore(env, consumer, Duration.ofSeconds(3));
        }
    }

    /** Expects the victim to hold some of first..last, each at its first delivery. */
    private static void expectHeldOnce(Map<Long, Short> held, long first, long last) {
        expect(!held.isEmpty(), "the victim holds nothing");
        held.forEach((offset, count) -> {
            expect(offset >= first && offset <= last, "the victim holds offset " + offset + ", want " + first + "-" + last);
            expectEqual((short) 1, count, "delivery count of offset " + offset + " at the victim");
        });
    }

    /**
     * A ShareVictim JVM on the checks' classpath, holding records of a share
     * group; close() kills it (destroyForcibly) if it still runs.
     */
    private static final class Victim implements AutoCloseable {
        private final Process process;
        private final java.io.File stderr;
        private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

        Victim(Env env, String group, String topic, int maxPollRecords) throws IOException {
            String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            // Its own limit, past the check's, so that it never outlives a run.
            long seconds = env.deadline.remaining().toSeconds() + 30;
            ProcessBuilder pb = new ProcessBuilder(javaBin, "-Xmx256m", "-XX:TieredStopAtLevel=1",
                    "-cp", System.getProperty("java.class.path"), ShareVictim.class.getName(),
                    env.bootstrap, group, topic, Integer.toString(maxPollRecords), Long.toString(seconds));
            stderr = java.io.File.createTempFile("share-victim", ".log");
            stderr.deleteOnExit();
            pb.redirectError(stderr);
            process = pb.start();
            Thread reader = new Thread(() -> {
                try (BufferedReader r = process.inputReader()) {
                    for (String line = r.readLine(); line != null; line = r.readLine()) {
                        lines.add(line);
                    }
                } catch (IOException e) {
                    // the victim is gone
                }
            }, "share-victim-stdout");
            reader.setDaemon(true);
            reader.start();
        }

        /** Waits for the victim's "HELD offset/count,..." line, and returns what it holds. */
        Map<Long, Short> held(Env env) throws InterruptedException {
            while (true) {
                env.deadline.check("waiting for the victim to acquire records");
                String line = lines.poll(env.deadline.atMost(POLL).toMillis(), TimeUnit.MILLISECONDS);
                if (line == null) {
                    if (!process.isAlive() && lines.isEmpty()) {
                        throw new CheckFailed("the victim exited (" + process.exitValue() + ") holding nothing: " + stderrTail());
                    }
                    continue;
                }
                if (!line.startsWith("HELD ")) {
                    continue;
                }
                Map<Long, Short> held = new TreeMap<>();
                for (String s : line.substring("HELD ".length()).split(",")) {
                    String[] oc = s.split("/");
                    held.put(Long.parseLong(oc[0]), Short.parseShort(oc[1]));
                }
                return held;
            }
        }

        /** The end of what the victim wrote to stderr, for a failure's message. */
        private String stderrTail() {
            try {
                String all = java.nio.file.Files.readString(stderr.toPath());
                return all.substring(Math.max(0, all.length() - 600));
            } catch (IOException e) {
                return "(no stderr: " + e + ")";
            }
        }

        /** Kills the victim as kill -9 would, and waits for it to be gone. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws InterruptedException {
            if (process.isAlive()) {
                kill();
            }
            stderr.delete();
        }
    }

    /** Waits until listGroups(share) lists group as ok wants it, and returns its listing. */
    private static GroupListing awaitListed(Env env, String group, Predicate<GroupListing> ok) throws Exception {
        GroupListing last = null;
        while (true) {
            env.deadline.check("waiting for share group " + group + " to be listed as expected, last " + last);
            for (GroupListing l : env.await(env.admin().listGroups(ListGroupsOptions.forShareGroups()).all(), "ListGroups share")) {
                if (l.groupId().equals(group)) {
                    last = l;
                }
            }
            if (last != null && ok.test(last)) {
                return last;
            }
            Thread.sleep(100);
        }
    }

    /**
     * Waits until listShareGroupOffsets (of partitions, or every one when
     * null) answers tp's lag, with a start offset in [minStart, maxStart].
     */
    private static void awaitOffsets(Env env, String group, List<TopicPartition> partitions, TopicPartition tp,
            long minStart, long maxStart, long lag) throws Exception {
        ListShareGroupOffsetsSpec spec = new ListShareGroupOffsetsSpec();
        if (partitions != null) {
            spec.topicPartitions(partitions);
        }
        SharePartitionOffsetInfo last = null;
        while (true) {
            env.deadline.check("waiting for " + tp + " at start offset " + minStart + "-" + maxStart + " lag " + lag + ", last " + last);
            last = env.await(env.admin().listShareGroupOffsets(Map.of(group, spec)).partitionsToOffsetInfo(group),
                    "ListShareGroupOffsets " + group).get(tp);
            if (last != null && last.startOffset() >= minStart && last.startOffset() <= maxStart
                    && last.lag().equals(java.util.Optional.of(lag))) {
                return;
            }
            Thread.sleep(100);
        }
    }

    /** Expects future to fail with GroupNotEmptyException (NON_EMPTY_GROUP). */
    private static void expectNonEmpty(Env env, KafkaFuture<Void> future, String what) throws Exception {
        try {
            future.get(Math.max(env.deadline.remainingMillis(), 1), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            expect(e.getCause() instanceof GroupNotEmptyException, what + ": " + Main.describe(e.getCause()) + ", want GroupNotEmptyException");
            return;
        }
        throw new CheckFailed(what + " succeeded, want GroupNotEmptyException");
    }
}
