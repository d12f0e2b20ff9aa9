package floe.conformance;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The resources of one check: its deadline, a unique suffix for topic and
 * group names, and the clients and topics it made, which close() releases
 * (clients closed, topics deleted) whether the check passed or not.
 */
final class Env implements AutoCloseable {
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);

    final String bootstrap;
    final String checkName;
    final Deadline deadline;
    private final String suffix = UUID.randomUUID().toString().substring(0, 8);
    private final Deque<AutoCloseable> clients = new ArrayDeque<>();
    private final List<String> topics = new ArrayList<>();
    private Admin admin;

    Env(String bootstrap, String checkName, Deadline deadline) {
        this.bootstrap = bootstrap;
        this.checkName = checkName;
        this.deadline = deadline;
    }

    /** A name unique to this check and run: conformance-base-suffix. */
    String name(String base) {
        return "conformance-" + base + "-" + suffix;
    }

    Admin admin() {
        if (admin == null) {
            Map<String, Object> props = new HashMap<>();
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(AdminClientConfig.CLIENT_ID_CONFIG, "conformance-" + checkName);
            props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
            props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
            admin = Admin.create(props);
        }
        return admin;
    }

    /** Creates a topic of the broker's default replication, deleted by close(). */
    String createTopic(String base, int partitions) throws Exception {
        String topic = name(base);
        NewTopic newTopic = new NewTopic(topic, Optional.of(partitions), Optional.empty());
        topics.add(topic);
        await(admin().createTopics(List.of(newTopic)).all(), "CreateTopics " + topic);
        return topic;
    }

    /** Marks a topic the check deleted itself, so close() leaves it alone. */
    void forgetTopic(String topic) {
        topics.remove(topic);
    }

    KafkaProducer<String, String> producer(Map<String, Object> overrides) {
        Map<String, Object> props = new HashMap<>();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "conformance-" + checkName);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.putAll(overrides);
        return register(new KafkaProducer<>(props));
    }

    KafkaConsumer<String, String> consumer(Map<String, Object> overrides) {
        return consumer(overrides, new StringDeserializer());
    }

    /** A consumer like {@link #consumer(Map)}, its record values read with values. */
    <V> KafkaConsumer<String, V> consumer(Map<String, Object> overrides, Deserializer<V> values) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "conformance-" + checkName);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        props.putAll(overrides);
        return register(new KafkaConsumer<>(props, new StringDeserializer(), values));
    }

    /** A share group consumer (KIP-932), closed by close(). */
    KafkaShareConsumer<String, String> shareConsumer(Map<String, Object> overrides) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "conformance-" + checkName);
        props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        props.putAll(overrides);
        return register(new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer()));
    }

    /** Closes a client now (as a consumer leaving its group), not at close(). */
    void closeNow(AutoCloseable client) throws Exception {
        clients.remove(client);
        closeClient(client);
    }

    /** The future's value, within the check's deadline; failures unwrapped. */
    <T> T await(KafkaFuture<T> future, String what) throws Exception {
        try {
            return future.get(Math.max(deadline.remainingMillis(), 1), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new CheckFailed("timed out: " + what);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw new CheckFailed(what + ": " + Main.describe(cause));
        }
    }

    @Override
    public void close() {
        while (!clients.isEmpty()) {
            closeQuietly(clients.pop());
        }
        if (admin != null) {
            deleteTopics();
            admin.close(CLOSE_TIMEOUT);
        }
    }

    private void deleteTopics() {
        if (topics.isEmpty()) {
            return;
        }
        try {
            admin.deleteTopics(Set.copyOf(topics)).all().get(CLOSE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            System.err.println("cleanup of " + checkName + ": deleting " + topics + ": " + Main.describe(e));
        }
    }

    private <T extends AutoCloseable> T register(T client) {
        clients.push(client);
        return client;
    }

    private static void closeClient(AutoCloseable client) throws Exception {
        if (client instanceof KafkaConsumer<?, ?> consumer) {
            consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(CLOSE_TIMEOUT));
        } else if (client instanceof KafkaShareConsumer<?, ?> consumer) {
            consumer.close(CLOSE_TIMEOUT);
        } else if (client instanceof KafkaProducer<?, ?> producer) {
            producer.close(CLOSE_TIMEOUT);
        } else {
            client.close();
        }
    }

    private void closeQuietly(AutoCloseable client) {
        try {
            closeClient(client);
        } catch (Exception e) {
            System.err.println("cleanup of " + checkName + ": closing a client: " + Main.describe(e));
        }
    }
}
