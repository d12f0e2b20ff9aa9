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

import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.config.ConfigResource;

/** Share groups (KIP-932): KafkaShareConsumer reading together and acknowledging. */
final class ShareChecks {
    private static final Duration POLL = Duration.ofMillis(200);

    private ShareChecks() {
    }

    static List<Check> all() {
        return List.of(
                new Check("share-cooperative", ShareChecks::cooperative),
                new Check("share-explicit-ack", ShareChecks::explicitAck));
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
}
