package floe.conformance;

import static floe.conformance.CheckFailed.expect;
import static floe.conformance.CheckFailed.expectEqual;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;

/** Offsets by time, DeleteRecords and ListOffsets. */
final class OffsetChecks {
    private OffsetChecks() {
    }

    static List<Check> all() {
        return List.of(
                new Check("offsets-for-times", OffsetChecks::offsetsForTimes),
                new Check("delete-records", OffsetChecks::deleteRecords),
                new Check("admin-list-offsets", OffsetChecks::listOffsets));
    }

    /**
     * Ten records with timestamps base, base+1s, ...: the offset for a time is
     * the first at or after it; past the last record there is none.
     */
    static void offsetsForTimes(Env env) throws Exception {
        String topic = env.createTopic("times", 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = System.currentTimeMillis() - 3_600_000L;
        KafkaProducer<String, String> producer = env.producer(Map.of());
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            sent.add(producer.send(Records.numbered(topic, 0, i, base + i * 1_000L)));
            if (i == 4) {
                producer.flush(); // two batches, so the answer may lie inside either
            }
        }
        producer.flush();
        Records.awaitAll(env, sent);

        KafkaConsumer<String, String> consumer = env.consumer(Map.of());
        expectOffsetForTime(env, consumer, tp, base - 60_000, 0, base);
        expectOffsetForTime(env, consumer, tp, base, 0, base);
        expectOffsetForTime(env, consumer, tp, base + 2_500, 3, base + 3_000);
        expectOffsetForTime(env, consumer, tp, base + 7_000, 7, base + 7_000);
        expectOffsetForTime(env, consumer, tp, base + 9_000, 9, base + 9_000);
        Map<TopicPartition, OffsetAndTimestamp> after =
                consumer.offsetsForTimes(Map.of(tp, base + 9_001), env.deadline.remaining());
        expect(after.get(tp) == null, "offsetsForTimes after the last record: expected none, got " + after.get(tp));

        Map<TopicPartition, ListOffsetsResultInfo> admin = env.await(
                env.admin().listOffsets(Map.of(tp, OffsetSpec.forTimestamp(base + 2_500))).all(),
                "Admin ListOffsets by timestamp");
        expectEqual(3L, admin.get(tp).offset(), "Admin listOffsets forTimestamp(base+2.5s) offset");
        expectEqual(base + 3_000, admin.get(tp).timestamp(), "Admin listOffsets forTimestamp(base+2.5s) timestamp");
    }

    private static void expectOffsetForTime(Env env, KafkaConsumer<String, String> consumer, TopicPartition tp,
            long time, long offset, long timestamp) {
        Map<TopicPartition, OffsetAndTimestamp> m =
                consumer.offsetsForTimes(Map.of(tp, time), env.deadline.remaining());
        OffsetAndTimestamp got = m.get(tp);
        String what = "offsetsForTimes(" + time + ")";
        expect(got != null, what + ": no answer");
        expectEqual(offset, got.offset(), what + " offset");
        expectEqual(timestamp, got.timestamp(), what + " timestamp");
    }

    /** After deleteRecords(before 5), the low watermark is 5 and reading starts there. */
    static void deleteRecords(Env env) throws Exception {
        String topic = env.createTopic("delete-records", 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        Records.produce(env, env.producer(Map.of()), topic, 1, 20);

        Map<TopicPartition, RecordsToDelete> request = Map.of(tp, RecordsToDelete.beforeOffset(5));
        DeletedRecords deleted = env.await(env.admin().deleteRecords(request).lowWatermarks().get(tp),
                "DeleteRecords before offset 5");
        expectEqual(5L, deleted.lowWatermark(), "DeleteRecords low watermark");

        KafkaConsumer<String, String> consumer = env.consumer(Map.of());
        expectEqual(5L, consumer.beginningOffsets(List.of(tp), env.deadline.remaining()).get(tp),
                "beginningOffsets after DeleteRecords");
        expectEqual(20L, consumer.endOffsets(List.of(tp), env.deadline.remaining()).get(tp),
                "endOffsets after DeleteRecords");
        consumer.assign(List.of(tp));
        consumer.seekToBeginning(List.of(tp));
        List<ConsumerRecord<String, String>> got = Records.pollAtLeast(env, consumer, 15);
        Records.expectContiguous(tp, Records.offsetsByPartition(got).get(tp), 5, 20);
        for (ConsumerRecord<String, String> r : got) {
            Records.expectNumbered(r, (int) r.offset());
        }
    }

    /** Admin listOffsets earliest and latest, on partitions of 7 and 3 records. */
    static void listOffsets(Env env) throws Exception {
        String topic = env.createTopic("list-offsets", 2);
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        KafkaProducer<String, String> producer = env.producer(Map.of());
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            sent.add(producer.send(Records.numbered(topic, i < 7 ? 0 : 1, i, null)));
        }
        producer.flush();
        Records.awaitAll(env, sent);

        expectListOffsets(env, OffsetSpec.earliest(), "earliest", Map.of(p0, 0L, p1, 0L));
        expectListOffsets(env, OffsetSpec.latest(), "latest", Map.of(p0, 7L, p1, 3L));
    }

    private static void expectListOffsets(Env env, OffsetSpec spec, String name, Map<TopicPartition, Long> want)
            throws Exception {
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        want.keySet().forEach(tp -> request.put(tp, spec));
        Map<TopicPartition, ListOffsetsResultInfo> got =
                env.await(env.admin().listOffsets(request).all(), "Admin ListOffsets " + name);
        for (Map.Entry<TopicPartition, Long> e : want.entrySet()) {
            expectEqual(e.getValue(), got.get(e.getKey()).offset(), name + " offset of " + e.getKey());
        }
    }
}
