package floe.conformance;

import static floe.conformance.CheckFailed.expect;
import static floe.conformance.CheckFailed.expectEqual;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

/**
 * Kafka Streams: a word count with exactly-once (v2), its state in a
 * changelog topic, its re-keying through a repartition topic.
 */
final class StreamsChecks {
    private StreamsChecks() {
    }

    static List<Check> all() {
        return List.of(new Check("streams-wordcount-eos", StreamsChecks::wordCount));
    }

    /**
     * The application counts the words of 30 sentences (a repartition topic
     * re-keys them by word, an in-memory store keeps the counts, changelogged
     * to a compacted topic it creates) with processing.guarantee
     * exactly_once_v2; read_committed, the output's last count of each word is
     * its count. A new instance of the application, with an empty state
     * directory, restores the store from the changelog and counts 20 more
     * sentences on top: the last counts are the totals, nothing counted twice.
     * Between the two, the application's group has committed the input's
     * ends, so the second instance's totals come from the restored store, not
     * from counting the first 30 again. The changelog is compacted.
     */
    static void wordCount(Env env) throws Exception {
        String input = env.createTopic("streams-in", 2);
        String output = env.createTopic("streams-out", 2);
        String app = env.name("wordcount");
        KafkaProducer<String, String> producer = env.producer(Map.of());
        Map<String, Long> want = new TreeMap<>();
        sentences(env, producer, input, 0, 30, want);

        Path state = Files.createTempDirectory("floe-streams-");
        KafkaStreams first = start(env, app, input, output, state.resolve("first"));
        try {
            awaitCounts(env, output, want, "the first instance");
        } finally {
            first.close(Duration.ofSeconds(10));
        }

        Map<TopicPartition, Long> ends = new HashMap<>();
        for (var e : env.await(env.admin().listOffsets(Map.of(
                new TopicPartition(input, 0), OffsetSpec.latest(),
                new TopicPartition(input, 1), OffsetSpec.latest())).all(),
                "ListOffsets " + input).entrySet()) {
            ends.put(e.getKey(), e.getValue().offset());
        }
        Map<TopicPartition, Long> committed = new HashMap<>();
        env.await(env.admin().listConsumerGroupOffsets(app).partitionsToOffsetAndMetadata(), "ListConsumerGroupOffsets " + app)
                .forEach((tp, om) -> {
                    if (tp.topic().equals(input) && om != null) {
                        committed.put(tp, om.offset());
                    }
                });
        expectEqual(ends, committed, "the application's committed input offsets after the first instance");

        sentences(env, producer, input, 30, 50, want);
        KafkaStreams second = start(env, app, input, output, state.resolve("second"));
        try {
            awaitCounts(env, output, want, "a restarted instance (state restored from the changelog)");
        } finally {
            second.close(Duration.ofSeconds(10));
        }

        Set<String> internal = env.admin().listTopics().names().get().stream()
                .filter(t -> t.startsWith(app + "-")).collect(Collectors.toSet());
        String changelog = app + "-counts-changelog";
        expect(internal.contains(changelog), "internal topics " + internal + " lack " + changelog);
        expect(internal.stream().anyMatch(t -> t.endsWith("-repartition")), "internal topics " + internal + " lack a repartition topic");
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
        Config cfg = env.await(env.admin().describeConfigs(List.of(res)).values().get(res), "DescribeConfigs " + changelog);
        expectEqual("compact", cfg.get("cleanup.policy").value(), changelog + " cleanup.policy");
        env.await(env.admin().deleteTopics(internal).all(), "DeleteTopics " + internal);
    }

    private static final String[] WORDS = {"alpha", "beta", "gamma", "delta", "epsilon"};

    /** Produces sentences from to to (exclusive) and adds their words to counts. */
    private static void sentences(Env env, KafkaProducer<String, String> producer, String topic, int from, int to,
            Map<String, Long> counts) throws Exception {
        for (int i = from; i < to; i++) {
            StringBuilder sb = new StringBuilder();
            for (int w = 0; w <= i % WORDS.length; w++) {
                String word = WORDS[(i + w) % WORDS.length];
                sb.append(word).append(' ');
                counts.merge(word, 1L, Long::sum);
            }
            producer.send(new ProducerRecord<>(topic, "s-" + i, sb.toString().trim()));
        }
        producer.flush();
    }

    private static KafkaStreams start(Env env, String app, String input, String output, Path stateDir) {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // A closing instance does not leave its group (Streams' way); the
        // restarted one's rebalance waits for the old member's session to
        // expire: 6 s, Kafka's group.min.session.timeout.ms, not 45.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(input)
                .flatMapValues(v -> Arrays.asList(v.split(" ")))
                .groupBy((k, word) -> word, Grouped.as("by-word"))
                .count(Materialized.as(Stores.inMemoryKeyValueStore("counts")))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("streams-wordcount-eos: " + Main.describe(e));
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        return streams;
    }

    /** Reads output read_committed from the start until each word's last count is want's. */
    private static void awaitCounts(Env env, String output, Map<String, Long> want, String who) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        KafkaConsumer<String, Long> consumer = env.consumer(props, new LongDeserializer());
        List<TopicPartition> parts = List.of(new TopicPartition(output, 0), new TopicPartition(output, 1));
        consumer.assign(parts);
        consumer.seekToBeginning(parts);
        Map<String, Long> last = new TreeMap<>();
        while (!last.equals(want)) {
            env.deadline.check(who + ": counts " + last + ", want " + want);
            consumer.poll(env.deadline.atMost(Duration.ofMillis(200))).forEach(r -> last.put(r.key(), r.value()));
            for (Map.Entry<String, Long> e : last.entrySet()) {
                long w = want.getOrDefault(e.getKey(), 0L);
                expect(e.getValue() <= w, who + ": " + e.getKey() + " counted " + e.getValue() + " times, more than its "
                        + w + " (counted twice?)");
            }
        }
        try {
            env.closeNow(consumer);
        } catch (Exception e) {
            throw new CheckFailed(who + ": closing the output's reader: " + Main.describe(e));
        }
    }
}
