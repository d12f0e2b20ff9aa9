package floe.conformance;

import static floe.conformance.CheckFailed.expect;
import static floe.conformance.CheckFailed.expectEqual;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** Transactions: abort, and read-process-write with the offsets in the transaction. */
final class TxnChecks {
    private TxnChecks() {
    }

    static List<Check> all() {
        return List.of(
                new Check("txn-abort", TxnChecks::abort),
                new Check("txn-read-process-write", TxnChecks::readProcessWrite));
    }

    private static KafkaProducer<String, String> transactional(Env env, String id) {
        KafkaProducer<String, String> producer = env.producer(Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, env.name(id),
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 30_000));
        producer.initTransactions();
        return producer;
    }

    private static KafkaConsumer<String, String> readCommitted(Env env, String group) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        if (group != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return env.consumer(props);
    }

    /**
     * An aborted transaction's 5 records, then a committed one's 3: a
     * read_committed consumer sees the 3 only, ends at the high watermark
     * (markers included), and a read_uncommitted one sees all 8.
     */
    static void abort(Env env) throws Exception {
        String topic = env.createTopic("txn-abort", 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        KafkaProducer<String, String> producer = transactional(env, "abort");
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

        KafkaConsumer<String, String> committed = readCommitted(env, null);
        committed.assign(List.of(tp));
        committed.seekToBeginning(List.of(tp));
        List<ConsumerRecord<String, String>> got = Records.pollAtLeast(env, committed, 3);
        List<Integer> indexes = new ArrayList<>();
        for (ConsumerRecord<String, String> r : got) {
            indexes.add(Records.index(r));
        }
        expectEqual(List.of(5, 6, 7), indexes, "read_committed records after an abort and a commit");
        // 5 aborted, their abort marker, 3 committed, their commit marker.
        long end = committed.endOffsets(List.of(tp), env.deadline.remaining()).get(tp);
        expectEqual(10L, end, "read_committed end offset (the last stable offset)");
        while (committed.position(tp, env.deadline.remaining()) < end) {
            env.deadline.check("read_committed position to reach " + end);
            expect(committed.poll(env.deadline.atMost(Duration.ofMillis(200))).isEmpty(),
                    "read_committed returned more records after the committed ones");
        }

        KafkaConsumer<String, String> uncommitted = env.consumer(Map.of());
        uncommitted.assign(List.of(tp));
        uncommitted.seekToBeginning(List.of(tp));
        List<ConsumerRecord<String, String>> all = Records.pollAtLeast(env, uncommitted, 8);
        expectEqual(8, all.size(), "read_uncommitted records");
    }

    /**
     * A consumer group reads 20 records (read_committed); a transactional
     * producer writes one record per input record to an output topic and
     * commits the group's offsets in the same transaction. The output holds
     * the 20, and the group's committed offsets are the input's ends.
     */
    static void readProcessWrite(Env env) throws Exception {
        String in = env.createTopic("txn-in", 2);
        String out = env.createTopic("txn-out", 1);
        Records.produce(env, env.producer(Map.of()), in, 2, 20);
        String group = env.name("txn-group");

        KafkaConsumer<String, String> consumer = readCommitted(env, group);
        consumer.subscribe(List.of(in));
        KafkaProducer<String, String> producer = transactional(env, "rpw");
        int processed = 0;
        while (processed < 20) {
            env.deadline.check("processing 20 records, done " + processed);
            var records = consumer.poll(env.deadline.atMost(Duration.ofMillis(200)));
            if (records.isEmpty()) {
                continue;
            }
            producer.beginTransaction();
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (ConsumerRecord<String, String> r : records) {
                producer.send(new ProducerRecord<>(out, 0, r.key(), r.value().toUpperCase()));
                offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                processed++;
            }
            producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
            producer.commitTransaction();
        }
        expectEqual(20, processed, "records processed");

        KafkaConsumer<String, String> reader = readCommitted(env, null);
        TopicPartition outTp = new TopicPartition(out, 0);
        reader.assign(List.of(outTp));
        reader.seekToBeginning(List.of(outTp));
        List<ConsumerRecord<String, String>> written = Records.pollAtLeast(env, reader, 20);
        expectEqual(20, written.size(), "output records");
        for (ConsumerRecord<String, String> r : written) {
            expect(r.value().equals(r.value().toUpperCase()), "output record " + r.offset() + " not processed: " + r.value());
        }

        Map<TopicPartition, OffsetAndMetadata> committed = env.await(
                env.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata(),
                "ListConsumerGroupOffsets " + group);
        expectEqual(10L, committed.get(new TopicPartition(in, 0)).offset(), "committed offset of input partition 0");
        expectEqual(10L, committed.get(new TopicPartition(in, 1)).offset(), "committed offset of input partition 1");
    }
}
