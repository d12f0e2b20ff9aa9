package floe.conformance;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The victim of the share-lock-timeout-poison check, run in its own JVM:
 * a KafkaShareConsumer (explicit acknowledgement) that polls until it gets
 * records, prints "HELD offset/count,..." and then holds them without
 * acknowledging or polling again (so its client fetches nothing more), until
 * it is killed or its own time runs out.
 *
 * <pre>ShareVictim BOOTSTRAP GROUP TOPIC MAX_POLL_RECORDS SECONDS</pre>
 */
public final class ShareVictim {
    private ShareVictim() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: ShareVictim BOOTSTRAP GROUP TOPIC MAX_POLL_RECORDS SECONDS");
            System.exit(2);
        }
        long end = System.nanoTime() + Duration.ofSeconds(Long.parseLong(args[4])).toNanos();
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "conformance-share-victim");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.parseInt(args[3]));
        props.put("share.acknowledgement.mode", "explicit");
        KafkaShareConsumer<String, String> consumer =
                new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        consumer.subscribe(List.of(args[2]));
        while (System.nanoTime() < end) {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
            if (records.isEmpty()) {
                continue;
            }
            List<String> held = new ArrayList<>();
            for (ConsumerRecord<String, String> r : records) {
                held.add(r.offset() + "/" + r.deliveryCount().orElse((short) -1));
            }
            System.out.println("HELD " + String.join(",", held));
            System.out.flush();
            break;
        }
        // Hold them: no acknowledgement, no poll (no fetch), the heartbeat
        // going on, until killed.
        while (System.nanoTime() < end) {
            Thread.sleep(100);
        }
        System.exit(0);
    }
}
