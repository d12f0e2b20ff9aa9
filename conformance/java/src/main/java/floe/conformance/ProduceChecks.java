package floe.conformance;

import static floe.conformance.CheckFailed.expectEqual;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;

/** Idempotent produce (acks=all) with each codec, read back by assign(). */
final class ProduceChecks {
    private static final int PARTITIONS = 2;
    private static final int RECORDS = 500;

    private ProduceChecks() {
    }

    static List<Check> all() {
        List<Check> checks = new ArrayList<>();
        for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
            checks.add(new Check("produce-consume-" + codec, env -> produceConsume(env, codec)));
        }
        return checks;
    }

    static void produceConsume(Env env, String codec) throws Exception {
        String topic = env.createTopic("produce-" + codec, PARTITIONS);
        KafkaProducer<String, String> producer = env.producer(Map.of(
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                ProducerConfig.BATCH_SIZE_CONFIG, 16_384));
        List<RecordMetadata> acked = Records.produce(env, producer, topic, PARTITIONS, RECORDS);
        expectAckedInOrder(acked);

        KafkaConsumer<String, String> consumer = env.consumer(Map.of());
        List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
        consumer.assign(tps);
        consumer.seekToBeginning(tps);
        List<ConsumerRecord<String, String>> got = Records.pollAtLeast(env, consumer, RECORDS);
        expectEqual(RECORDS, got.size(), "records consumed");
        for (ConsumerRecord<String, String> r : got) {
            int i = Records.index(r);
            expectEqual(acked.get(i).partition(), r.partition(), "partition of record " + i);
            expectEqual(acked.get(i).offset(), r.offset(), "offset of record " + i);
            Records.expectNumbered(r, i);
        }
        for (TopicPartition tp : tps) {
            Records.expectContiguous(tp, Records.offsetsByPartition(got).get(tp), 0, RECORDS / PARTITIONS);
        }
    }

    /** Record i went to partition i % 2 at offset i / 2. */
    private static void expectAckedInOrder(List<RecordMetadata> acked) {
        for (int i = 0; i < acked.size(); i++) {
            RecordMetadata m = acked.get(i);
            expectEqual(i % PARTITIONS, m.partition(), "acked partition of record " + i);
            expectEqual((long) (i / PARTITIONS), m.offset(), "acked offset of record " + i);
        }
    }
}
