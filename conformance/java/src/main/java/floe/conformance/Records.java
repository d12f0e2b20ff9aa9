package floe.conformance;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;

/** Producing numbered records and reading them back. */
final class Records {
    static final String INDEX_HEADER = "index";
    private static final Duration POLL = Duration.ofMillis(200);

    private Records() {
    }

    static String key(int i) {
        return "key-" + i;
    }

    /** A value long enough (and repetitive enough) that every codec compresses it. */
    static String value(int i) {
        return "value-" + i + "-" + "abcdefghij".repeat(10);
    }

    /** Record i for the given partition, with key(i), value(i) and an index header. */
    static ProducerRecord<String, String> numbered(String topic, int partition, int i, Long timestamp) {
        ProducerRecord<String, String> record =
                new ProducerRecord<>(topic, partition, timestamp, key(i), value(i));
        record.headers().add(INDEX_HEADER, Integer.toString(i).getBytes(StandardCharsets.UTF_8));
        return record;
    }

    /** Sends records 0..count-1 spread round-robin over partitions; their metadata, by index. */
    static List<RecordMetadata> produce(Env env, Producer<String, String> producer, String topic,
            int partitions, int count) throws Exception {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sent.add(producer.send(numbered(topic, i % partitions, i, null)));
        }
        producer.flush();
        return awaitAll(env, sent);
    }

    static List<RecordMetadata> awaitAll(Env env, List<Future<RecordMetadata>> sent) throws Exception {
        List<RecordMetadata> acked = new ArrayList<>();
        for (Future<RecordMetadata> f : sent) {
            try {
                acked.add(f.get(Math.max(env.deadline.remainingMillis(), 1), TimeUnit.MILLISECONDS));
            } catch (java.util.concurrent.TimeoutException e) {
                throw new CheckFailed("timed out: waiting for produce acks");
            } catch (java.util.concurrent.ExecutionException e) {
                throw new CheckFailed("produce: " + Main.describe(e.getCause()));
            }
        }
        return acked;
    }

    /** Polls until at least count records arrived (or the deadline passes). */
    static List<ConsumerRecord<String, String>> pollAtLeast(Env env, Consumer<String, String> consumer,
            int count) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        while (got.size() < count) {
            env.deadline.check("waiting for " + count + " records, got " + got.size());
            consumer.poll(env.deadline.atMost(POLL)).forEach(got::add);
        }
        return got;
    }

    /** The index header of a record; fails without one. */
    static int index(ConsumerRecord<String, String> record) {
        Header h = record.headers().lastHeader(INDEX_HEADER);
        if (h == null) {
            throw new CheckFailed(record.topic() + "-" + record.partition() + "@" + record.offset()
                    + " has no " + INDEX_HEADER + " header");
        }
        return Integer.parseInt(new String(h.value(), StandardCharsets.UTF_8));
    }

    /** Fails unless the record carries key(i), value(i) and index header i. */
    static void expectNumbered(ConsumerRecord<String, String> record, int i) {
        String where = record.topic() + "-" + record.partition() + "@" + record.offset();
        CheckFailed.expectEqual(key(i), record.key(), where + " key");
        CheckFailed.expectEqual(value(i), record.value(), where + " value");
        CheckFailed.expectEqual(i, index(record), where + " index header");
    }

    /** Per partition, the offsets of the records, in the order they came. */
    static Map<TopicPartition, List<Long>> offsetsByPartition(List<ConsumerRecord<String, String>> records) {
        Map<TopicPartition, List<Long>> out = new HashMap<>();
        for (ConsumerRecord<String, String> r : records) {
            out.computeIfAbsent(new TopicPartition(r.topic(), r.partition()), tp -> new ArrayList<>())
                    .add(r.offset());
        }
        return out;
    }

    /** Fails unless the offsets are from, from+1, ..., up to (excluding) to. */
    static void expectContiguous(TopicPartition tp, List<Long> offsets, long from, long to) {
        List<Long> want = new ArrayList<>();
        for (long o = from; o < to; o++) {
            want.add(o);
        }
        if (!want.equals(offsets)) {
            throw new CheckFailed(tp + ": expected offsets " + from + ".." + (to - 1) + " once each, got "
                    + summarize(offsets));
        }
    }

    private static String summarize(List<Long> offsets) {
        if (offsets.size() <= 12) {
            return offsets.toString();
        }
        return offsets.subList(0, 6) + "..." + offsets.subList(offsets.size() - 6, offsets.size())
                + " (" + offsets.size() + " records)";
    }
}
