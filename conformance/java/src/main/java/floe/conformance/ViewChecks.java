package floe.conformance;

import static floe.conformance.CheckFailed.expect;
import static floe.conformance.CheckFailed.expectEqual;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * floe's own features, not Kafka's: hierarchical topics. Their checks are
 * named floe-*, and left out against Apache Kafka (CONFORMANCE_KAFKA=1).
 */
final class ViewChecks {
    private ViewChecks() {
    }

    static List<Check> all() {
        return List.of(new Check("floe-view", ViewChecks::view));
    }

    private static final List<String> KEYS = List.of("CC54 RYD", "NN03 RYB", "CC54 RYD", "XX", "NN03 RYB", "CC54 RYD");

    /**
     * A group subscribed to TOPIC/CC54 RYD of a topic with
     * hierarchical.enabled=true reads that key's records at their base
     * offsets (0, 2, 5) and commits; after one more record of the key (and
     * one of another), a restarted member reads just it.
     */
    static void view(Env env) throws Exception {
        String topic = env.name("view");
        NewTopic nt = new NewTopic(topic, Optional.of(1), Optional.empty()).configs(Map.of("hierarchical.enabled", "true"));
        env.await(env.admin().createTopics(List.of(nt)).all(), "CreateTopics " + topic);
        KafkaProducer<String, String> producer = env.producer(Map.of());
        for (String k : KEYS) {
            producer.send(new ProducerRecord<>(topic, 0, k, "r"));
        }
        producer.flush();
        String view = topic + "/CC54 RYD";
        String group = env.name("view-id");
        expectEqual(List.of(0L, 2L, 5L), read(env, view, group, 3), "view offsets");
        producer.send(new ProducerRecord<>(topic, 0, "CC54 RYD", "r"));
        producer.send(new ProducerRecord<>(topic, 0, "XX", "r"));
        producer.flush();
        expectEqual(List.of(6L), read(env, view, group, 1), "a restarted member's view offsets");
        env.await(env.admin().deleteTopics(List.of(topic)).all(), "DeleteTopics " + topic);
    }

    /** A member of group subscribed to view reads n records, commits and leaves; their offsets. */
    private static List<Long> read(Env env, String view, String group, int n) throws Exception {
        KafkaConsumer<String, String> consumer = env.consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group));
        consumer.subscribe(List.of(view));
        List<Long> offsets = new ArrayList<>();
        for (ConsumerRecord<String, String> r : Records.pollAtLeast(env, consumer, n)) {
            expect(r.topic().equals(view) && "CC54 RYD".equals(r.key()),
                    "view answered " + r.topic() + " key " + r.key() + " at " + r.offset());
            offsets.add(r.offset());
        }
        consumer.commitSync();
        env.closeNow(consumer);
        return offsets;
    }
}
