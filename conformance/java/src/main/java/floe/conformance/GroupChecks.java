package floe.conformance;

import static floe.conformance.CheckFailed.expect;
import static floe.conformance.CheckFailed.expectEqual;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

/** Consumer groups: classic (cooperative-sticky) and KIP-848, commits and rebalances. */
final class GroupChecks {
    private static final Duration POLL = Duration.ofMillis(100);

    private GroupChecks() {
    }

    static List<Check> all() {
        return List.of(
                new Check("classic-group-commit-resume", GroupChecks::classicCommitResume),
                new Check("consumer-group-kip848", GroupChecks::kip848Consume),
                new Check("classic-group-rebalance", GroupChecks::classicRebalance),
                new Check("consumer-group-kip848-rebalance", GroupChecks::kip848Rebalance),
                new Check("admin-consumer-groups", GroupChecks::adminConsumerGroups));
    }

    private static Map<String, Object> classic(String group) {
        return Map.of(
                ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName(),
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10,
                ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 30_000,
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000,
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1_000);
    }

    /**
     * A consumer reads part of a 3-partition topic and commits; committed()
     * returns those offsets; a restarted consumer of the group reads exactly
     * the rest.
     */
    static void classicCommitResume(Env env) throws Exception {
        int records = 90;
        String topic = env.createTopic("commit", 3);
        Records.produce(env, env.producer(Map.of()), topic, 3, records);
        String group = env.name("group-commit");
        Set<TopicPartition> tps = partitions(topic, 3);

        KafkaConsumer<String, String> first = env.consumer(classic(group));
        first.subscribe(List.of(topic));
        List<ConsumerRecord<String, String>> firstRecords = Records.pollAtLeast(env, first, 30);
        expect(firstRecords.size() < records, "the first consumer read everything in its first polls");
        Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
        for (TopicPartition tp : first.assignment()) {
            positions.put(tp, new OffsetAndMetadata(first.position(tp, env.deadline.atMost(POLL.multipliedBy(100)))));
        }
        expectEqual(tps, first.assignment(), "the only member's assignment");
        first.commitSync(env.deadline.remaining());
        expectEqual(positions, withoutNulls(first.committed(tps, env.deadline.remaining())),
                "committed() after commitSync()");
        env.closeNow(first);

        KafkaConsumer<String, String> second = env.consumer(classic(group));
        expectEqual(positions, withoutNulls(second.committed(tps, env.deadline.remaining())),
                "committed() from a new consumer of the group");
        second.subscribe(List.of(topic));
        long rest = records - positions.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
        List<ConsumerRecord<String, String>> secondRecords = Records.pollAtLeast(env, second, (int) rest);
        Map<TopicPartition, List<Long>> byPartition = Records.offsetsByPartition(secondRecords);
        for (TopicPartition tp : tps) {
            long from = positions.get(tp).offset();
            List<Long> got = byPartition.getOrDefault(tp, List.of());
            Records.expectContiguous(tp, got, from, records / 3);
        }
        for (ConsumerRecord<String, String> r : secondRecords) {
            Records.expectNumbered(r, Records.index(r));
        }
    }

    private static Map<TopicPartition, OffsetAndMetadata> withoutNulls(Map<TopicPartition, OffsetAndMetadata> m) {
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        m.forEach((tp, om) -> {
            if (om != null) {
                out.put(tp, new OffsetAndMetadata(om.offset()));
            }
        });
        return out;
    }

    /**
     * A KIP-848 (group.protocol=consumer) member reads a 3-partition topic in
     * full and commits; Admin describes the group as a Stable consumer group.
     */
    static void kip848Consume(Env env) throws Exception {
        int records = 60;
        String topic = env.createTopic("kip848", 3);
        Records.produce(env, env.producer(Map.of()), topic, 3, records);
        String group = env.name("group-kip848");
        KafkaConsumer<String, String> consumer = env.consumer(Map.of(
                ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer"));
        consumer.subscribe(List.of(topic));
        List<ConsumerRecord<String, String>> got = Records.pollAtLeast(env, consumer, records);
        expectEqual(records, got.size(), "records consumed");
        Set<Integer> seen = new HashSet<>();
        for (ConsumerRecord<String, String> r : got) {
            int i = Records.index(r);
            Records.expectNumbered(r, i);
            expect(seen.add(i), "record " + i + " consumed twice");
        }
        Set<TopicPartition> tps = partitions(topic, 3);
        expectEqual(tps, consumer.assignment(), "the only member's assignment");
        consumer.commitSync(env.deadline.remaining());
        Map<TopicPartition, OffsetAndMetadata> committed = withoutNulls(consumer.committed(tps, env.deadline.remaining()));
        for (TopicPartition tp : tps) {
            expectEqual(new OffsetAndMetadata(records / 3), committed.get(tp), "committed offset of " + tp);
        }
        ConsumerGroupDescription d = env.await(
                env.admin().describeConsumerGroups(List.of(group)).describedGroups().get(group),
                "ConsumerGroupDescribe " + group);
        expectEqual(GroupType.CONSUMER, d.type(), "type of " + group);
        expectEqual(GroupState.STABLE, d.groupState(), "state of " + group);
        expectEqual(1, d.members().size(), "members of " + group);
        expectEqual(tps, d.members().iterator().next().assignment().topicPartitions(), "the member's assignment");
    }

    /**
     * Two members of a classic group split a 4-partition topic two and two;
     * when one leaves, the other gets all four.
     */
    static void classicRebalance(Env env) throws Exception {
        String topic = env.createTopic("rebalance", 4);
        String group = env.name("group-rebalance");
        Set<TopicPartition> all = partitions(topic, 4);

        KafkaConsumer<String, String> a = env.consumer(classic(group));
        a.subscribe(List.of(topic));
        pollUntil(env, "the first member to own all 4 partitions", () -> all.equals(a.assignment()), a);

        KafkaConsumer<String, String> b = env.consumer(classic(group));
        b.subscribe(List.of(topic));
        pollUntil(env, "the two members to own 2 partitions each", () -> splitEvenly(all, a, b), a, b);

        env.closeNow(b);
        pollUntil(env, "the remaining member to own all 4 partitions after the other left",
                () -> all.equals(a.assignment()), a);
    }

    /** As classicRebalance, with KIP-848 (group.protocol=consumer) members. */
    static void kip848Rebalance(Env env) throws Exception {
        String topic = env.createTopic("rebalance-kip848", 4);
        String group = env.name("group-rebalance-kip848");
        Set<TopicPartition> all = partitions(topic, 4);
        Map<String, Object> props = Map.of(
                ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");

        KafkaConsumer<String, String> a = env.consumer(props);
        a.subscribe(List.of(topic));
        pollUntil(env, "the first member to own all 4 partitions", () -> all.equals(a.assignment()), a);

        KafkaConsumer<String, String> b = env.consumer(props);
        b.subscribe(List.of(topic));
        pollUntil(env, "the two members to own 2 partitions each", () -> splitEvenly(all, a, b), a, b);

        env.closeNow(b);
        pollUntil(env, "the remaining member to own all 4 partitions after the other left",
                () -> all.equals(a.assignment()), a);
    }

    /**
     * Admin on a classic group: listed, described as Stable with its member and
     * assignment, its offsets listed and altered; deleted once empty.
     */
    static void adminConsumerGroups(Env env) throws Exception {
        String topic = env.createTopic("admin-groups", 2);
        Records.produce(env, env.producer(Map.of()), topic, 2, 20);
        String group = env.name("group-admin");
        Set<TopicPartition> tps = partitions(topic, 2);
        KafkaConsumer<String, String> consumer = env.consumer(classic(group));
        consumer.subscribe(List.of(topic));
        Records.pollAtLeast(env, consumer, 20);
        consumer.commitSync(env.deadline.remaining());
        Admin admin = env.admin();

        boolean listed = env.await(admin.listGroups().all(), "ListGroups").stream()
                .anyMatch(g -> g.groupId().equals(group));
        expect(listed, "ListGroups does not list " + group);
        ConsumerGroupDescription d = env.await(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group),
                "DescribeGroups " + group);
        expectEqual(GroupState.STABLE, d.groupState(), "state of " + group);
        expectEqual(1, d.members().size(), "members of " + group);
        expectEqual(tps, d.members().iterator().next().assignment().topicPartitions(), "the member's assignment");
        expect(d.partitionAssignor().equals("cooperative-sticky"), "assignor: " + d.partitionAssignor());

        Map<TopicPartition, OffsetAndMetadata> offsets = env.await(
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata(), "OffsetFetch " + group);
        expectEqual(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(10),
                new TopicPartition(topic, 1), new OffsetAndMetadata(10)), withoutNulls(offsets),
                "listConsumerGroupOffsets");

        env.closeNow(consumer);
        Map<TopicPartition, OffsetAndMetadata> reset = Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(3));
        env.await(admin.alterConsumerGroupOffsets(group, reset).all(), "alterConsumerGroupOffsets " + group);
        offsets = env.await(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata(),
                "OffsetFetch " + group);
        expectEqual(3L, offsets.get(new TopicPartition(topic, 0)).offset(), "offset of partition 0 after the alter");
        env.await(admin.deleteConsumerGroups(List.of(group)).all(), "DeleteGroups " + group);
        listed = env.await(admin.listGroups().all(), "ListGroups").stream()
                .anyMatch(g -> g.groupId().equals(group));
        expect(!listed, "ListGroups still lists deleted " + group);
    }

    private static boolean splitEvenly(Set<TopicPartition> all, KafkaConsumer<?, ?> a, KafkaConsumer<?, ?> b) {
        Set<TopicPartition> union = new HashSet<>(a.assignment());
        union.addAll(b.assignment());
        return a.assignment().size() == 2 && b.assignment().size() == 2 && union.equals(all);
    }

    /** Polls the consumers in turn until done holds; the failure names what was awaited. */
    private static void pollUntil(Env env, String what, java.util.function.BooleanSupplier done,
            KafkaConsumer<?, ?>... consumers) {
        while (!done.getAsBoolean()) {
            if (env.deadline.expired()) {
                StringBuilder sb = new StringBuilder("timed out waiting for " + what + "; assignments:");
                for (KafkaConsumer<?, ?> c : consumers) {
                    sb.append(' ').append(c.assignment());
                }
                throw new CheckFailed(sb.toString());
            }
            for (KafkaConsumer<?, ?> c : consumers) {
                c.poll(env.deadline.atMost(POLL));
            }
        }
    }

    static Set<TopicPartition> partitions(String topic, int count) {
        Set<TopicPartition> out = new HashSet<>();
        for (int p = 0; p < count; p++) {
            out.add(new TopicPartition(topic, p));
        }
        return out;
    }
}
