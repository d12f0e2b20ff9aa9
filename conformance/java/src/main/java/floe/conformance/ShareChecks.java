package floe.conformance;

import static floe.conformance.CheckFailed.expect;
import static floe.conformance.CheckFailed.expectEqual;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
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
                new Check("share-admin", ShareChecks::admin));
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
