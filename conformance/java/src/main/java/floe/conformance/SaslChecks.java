package floe.conformance;

import static floe.conformance.CheckFailed.expect;
import static floe.conformance.CheckFailed.expectEqual;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * SASL and ACLs, on a listener that requires SASL (SCRAM-SHA-512 and PLAIN)
 * and authorizes with ACLs, its super user admin (admin-secret) and a user
 * alice (alice-secret); its address is the system property
 * conformance.sasl.bootstrap, and without it the check is skipped.
 */
final class SaslChecks {
    static final String BOOTSTRAP_PROPERTY = "conformance.sasl.bootstrap";

    private SaslChecks() {
    }

    static List<Check> all() {
        if (System.getProperty(BOOTSTRAP_PROPERTY, "").isEmpty()) {
            return List.of();
        }
        return List.of(new Check("sasl-scram-acls", SaslChecks::scramAcls));
    }

    private static Map<String, Object> sasl(String mechanism, String user, String password) {
        String module = mechanism.equals("PLAIN")
                ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        Map<String, Object> props = new HashMap<>();
        props.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, System.getProperty(BOOTSTRAP_PROPERTY));
        props.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        props.put(SaslConfigs.SASL_MECHANISM, mechanism);
        props.put(SaslConfigs.SASL_JAAS_CONFIG,
                module + " required username=\"" + user + "\" password=\"" + password + "\";");
        return props;
    }

    /**
     * The super user creates a topic and grants alice WRITE and DESCRIBE on
     * it (describeAcls lists the grant); alice, on SCRAM, produces to it but
     * may not read it (TopicAuthorizationException); alice on PLAIN with a
     * wrong password is refused (SaslAuthenticationException).
     */
    static void scramAcls(Env env) throws Exception {
        Map<String, Object> adminProps = sasl("SCRAM-SHA-512", "admin", "admin-secret");
        adminProps.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        adminProps.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        try (Admin admin = Admin.create(adminProps)) {
            String topic = env.name("sasl");
            env.await(admin.createTopics(List.of(new NewTopic(topic, Optional.of(1), Optional.empty()))).all(),
                    "CreateTopics as the super user");
            try {
                ResourcePattern pattern = new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL);
                List<AclBinding> grants = List.of(
                        new AclBinding(pattern, new AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)),
                        new AclBinding(pattern, new AccessControlEntry("User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)));
                env.await(admin.createAcls(grants).all(), "CreateAcls");
                Collection<AclBinding> listed = env.await(
                        admin.describeAcls(new AclBindingFilter(pattern.toFilter(), AccessControlEntryFilter.ANY)).values(),
                        "DescribeAcls");
                expectEqual(2, listed.size(), "ACLs listed on the topic");

                Map<String, Object> producerProps = sasl("SCRAM-SHA-512", "alice", "alice-secret");
                producerProps.put("enable.idempotence", false); // IDEMPOTENT_WRITE on the cluster is not granted
                KafkaProducer<String, String> producer = env.producer(producerProps);
                Records.produce(env, producer, topic, 1, 5);

                Map<String, Object> consumerProps = sasl("SCRAM-SHA-512", "alice", "alice-secret");
                KafkaConsumer<String, String> consumer = env.consumer(consumerProps);
                consumer.assign(List.of(new TopicPartition(topic, 0)));
                consumer.seekToBeginning(consumer.assignment());
                boolean denied = false;
                while (!denied) {
                    env.deadline.check("reading without READ to be denied");
                    try {
                        consumer.poll(env.deadline.atMost(Duration.ofMillis(200)));
                    } catch (TopicAuthorizationException e) {
                        denied = e.unauthorizedTopics().contains(topic);
                        expect(denied, "TopicAuthorizationException names " + e.unauthorizedTopics() + ", not " + topic);
                    }
                }

                Map<String, Object> wrong = sasl("PLAIN", "alice", "not-her-password");
                wrong.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
                wrong.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10_000);
                try (Admin bad = Admin.create(wrong)) {
                    bad.describeCluster().clusterId().get(15, TimeUnit.SECONDS);
                    throw new CheckFailed("a wrong PLAIN password was accepted");
                } catch (ExecutionException e) {
                    expect(e.getCause() instanceof SaslAuthenticationException,
                            "a wrong password: expected SaslAuthenticationException, got " + Main.describe(e.getCause()));
                }
            } finally {
                admin.deleteTopics(List.of(topic)).all().get(10, TimeUnit.SECONDS);
            }
        }
    }
}
