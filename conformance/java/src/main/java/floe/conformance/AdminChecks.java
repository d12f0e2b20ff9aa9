package floe.conformance;

import static floe.conformance.CheckFailed.expect;
import static floe.conformance.CheckFailed.expectEqual;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;

/** Admin client checks: cluster, topics and topic configs. */
final class AdminChecks {
    private static final String RETENTION_MS = "3600000";

    private AdminChecks() {
    }

    static List<Check> all() {
        return List.of(
                new Check("describe-cluster", AdminChecks::describeCluster),
                new Check("admin-create-topic", AdminChecks::createTopic),
                new Check("admin-describe-topic", AdminChecks::describeTopic),
                new Check("admin-describe-configs", AdminChecks::describeConfigs),
                new Check("admin-incremental-alter-configs", AdminChecks::incrementalAlterConfigs),
                new Check("admin-create-partitions", AdminChecks::createPartitions),
                new Check("admin-delete-topic", AdminChecks::deleteTopic));
    }

    static void describeCluster(Env env) throws Exception {
        DescribeClusterResult cluster = env.admin().describeCluster();
        Collection<Node> nodes = env.await(cluster.nodes(), "DescribeCluster nodes");
        String clusterId = env.await(cluster.clusterId(), "DescribeCluster cluster id");
        Node controller = env.await(cluster.controller(), "DescribeCluster controller");
        expect(!nodes.isEmpty(), "DescribeCluster returned no nodes");
        for (Node n : nodes) {
            expect(n.id() >= 0 && !n.host().isEmpty() && n.port() > 0, "node without an address: " + n);
        }
        expect(clusterId != null && !clusterId.isEmpty(), "no cluster id");
        expect(controller != null && !controller.isEmpty(), "no controller");
    }

    static void createTopic(Env env) throws Exception {
        String topic = env.createTopic("create", 3);
        Set<String> names = env.await(env.admin().listTopics().names(), "ListTopics");
        expect(names.contains(topic), "ListTopics does not list the new topic " + topic);
        expectTopicExists(env, topic);
    }

    /** Creating a topic again fails with TopicExistsException. */
    private static void expectTopicExists(Env env, String topic) throws Exception {
        NewTopic again = new NewTopic(topic, Optional.of(3), Optional.empty());
        try {
            env.admin().createTopics(List.of(again)).all()
                    .get(env.deadline.remainingMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            expect(e.getCause() instanceof TopicExistsException,
                    "creating " + topic + " again: expected TopicExistsException, got " + Main.describe(e.getCause()));
            return;
        }
        throw new CheckFailed("creating " + topic + " again succeeded");
    }

    static void describeTopic(Env env) throws Exception {
        String topic = env.createTopic("describe", 3);
        TopicDescription d = describe(env, topic);
        expectEqual(topic, d.name(), "topic name");
        expect(!d.isInternal(), topic + " described as internal");
        expect(d.topicId() != null && !d.topicId().equals(org.apache.kafka.common.Uuid.ZERO_UUID),
                "no topic id");
        expectEqual(3, d.partitions().size(), "partition count");
        for (int p = 0; p < 3; p++) {
            TopicPartitionInfo info = d.partitions().get(p);
            expectEqual(p, info.partition(), "partition " + p + " numbering");
            expect(info.leader() != null && !info.leader().isEmpty(), "partition " + p + " has no leader");
            expect(info.replicas().contains(info.leader()), "partition " + p + " leader not among replicas");
            expect(info.isr().contains(info.leader()), "partition " + p + " leader not in the ISR");
        }
    }

    private static TopicDescription describe(Env env, String topic) throws Exception {
        Map<String, TopicDescription> m =
                env.await(env.admin().describeTopics(List.of(topic)).allTopicNames(), "DescribeTopics " + topic);
        return m.get(topic);
    }

    static void describeConfigs(Env env) throws Exception {
        String topic = env.createTopic("configs", 1);
        Config config = topicConfig(env, topic);
        for (String name : List.of(TopicConfig.RETENTION_MS_CONFIG, TopicConfig.CLEANUP_POLICY_CONFIG,
                TopicConfig.MAX_MESSAGE_BYTES_CONFIG, TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG)) {
            ConfigEntry e = config.get(name);
            expect(e != null, "DescribeConfigs of " + topic + " has no " + name);
            expect(e.value() != null, name + " has no value");
        }
        expectEqual("delete", config.get(TopicConfig.CLEANUP_POLICY_CONFIG).value(), "cleanup.policy");
        expectEqual("CreateTime", config.get(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG).value(),
                "message.timestamp.type");
        expect(config.get(TopicConfig.RETENTION_MS_CONFIG).isDefault(),
                "retention.ms of a new topic not reported as a default: "
                        + config.get(TopicConfig.RETENTION_MS_CONFIG));
    }

    static void incrementalAlterConfigs(Env env) throws Exception {
        String topic = env.createTopic("alter", 1);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        AlterConfigOp set = new AlterConfigOp(
                new ConfigEntry(TopicConfig.RETENTION_MS_CONFIG, RETENTION_MS), AlterConfigOp.OpType.SET);
        env.await(env.admin().incrementalAlterConfigs(Map.of(resource, List.of(set))).all(),
                "IncrementalAlterConfigs SET retention.ms");
        ConfigEntry e = topicConfig(env, topic).get(TopicConfig.RETENTION_MS_CONFIG);
        expectEqual(RETENTION_MS, e.value(), "retention.ms read back");
        expectEqual(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, e.source(), "retention.ms source");

        AlterConfigOp delete = new AlterConfigOp(
                new ConfigEntry(TopicConfig.RETENTION_MS_CONFIG, ""), AlterConfigOp.OpType.DELETE);
        env.await(env.admin().incrementalAlterConfigs(Map.of(resource, List.of(delete))).all(),
                "IncrementalAlterConfigs DELETE retention.ms");
        e = topicConfig(env, topic).get(TopicConfig.RETENTION_MS_CONFIG);
        expect(e.isDefault(), "retention.ms after DELETE not back to its default: " + e);
    }

    private static Config topicConfig(Env env, String topic) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Map<ConfigResource, Config> m =
                env.await(env.admin().describeConfigs(List.of(resource)).all(), "DescribeConfigs " + topic);
        return m.get(resource);
    }

    /** createPartitions from 2 to 4; described with 4, and partition 3 takes records. */
    static void createPartitions(Env env) throws Exception {
        String topic = env.createTopic("partitions", 2);
        env.await(env.admin().createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all(),
                "CreatePartitions " + topic + " to 4");
        expectEqual(4, describe(env, topic).partitions().size(), "partition count after CreatePartitions");
        var producer = env.producer(Map.of());
        var acked = Records.awaitAll(env, List.of(producer.send(Records.numbered(topic, 3, 0, null))));
        expectEqual(0L, acked.get(0).offset(), "offset of the first record in the new partition 3");
    }

    static void deleteTopic(Env env) throws Exception {
        String topic = env.createTopic("delete", 2);
        Admin admin = env.admin();
        env.await(admin.deleteTopics(List.of(topic)).all(), "DeleteTopics " + topic);
        env.forgetTopic(topic);
        while (env.await(admin.listTopics().names(), "ListTopics").contains(topic)) {
            env.deadline.check("ListTopics still lists deleted " + topic);
            Thread.sleep(100);
        }
    }
}
