package main

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// checks lists every check, in the order they run.
func checks() []check {
	var cs []check
	for _, codec := range []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP,
		sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD} {
		cs = append(cs, check{"produce-consume-" + codec.String(), func(e *env) error { return produceConsume(e, codec) }})
	}
	// Sarama picks every request's version from Config.Version: 2.1 is the
	// oldest Apache Kafka 4 serves clients of, 2.8 sarama's default.
	for _, v := range []sarama.KafkaVersion{sarama.V2_1_0_0, sarama.V2_8_0_0, sarama.V3_6_0_0, sarama.MaxVersion} {
		cs = append(cs, check{"version-" + v.String(), func(e *env) error { return versioned(e, v) }})
	}
	return append(cs,
		check{"auto-create-topic", autoCreate},
		check{"admin-topics", adminTopics},
		check{"offsets-for-times", offsetsForTimes},
		check{"group-commit-resume", groupCommitResume},
		check{"group-rebalance", groupRebalance},
		check{"txn-commit-abort", txnCommitAbort},
		check{"floe-view", floeView},
	)
}

// config is a client configuration for version v that returns what it
// produces and waits for every replica.
func config(v sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "floe-conformance-sarama"
	cfg.Version = v
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	return cfg
}

// idempotent makes cfg an idempotent producer's, as sarama requires it.
func idempotent(cfg *sarama.Config) *sarama.Config {
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	return cfg
}

func createTopic(e *env, name string, partitions int32) error {
	adm, err := sarama.NewClusterAdmin(e.bootstrap, config(sarama.DefaultVersion))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return nil
}

// sent is a record as produced and acknowledged.
type sent struct {
	key, value string
	headers    []sarama.RecordHeader
	partition  int32
	offset     int64
}

// produce sends msgs with a SyncProducer of cfg and returns them with the
// partitions and offsets they were acknowledged at.
func produce(e *env, cfg *sarama.Config, msgs []*sarama.ProducerMessage) ([]sent, error) {
	p, err := sarama.NewSyncProducer(e.bootstrap, cfg)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	defer p.Close()
	if err := p.SendMessages(msgs); err != nil {
		return nil, fmt.Errorf("send %d messages: %w", len(msgs), err)
	}
	out := make([]sent, len(msgs))
	for i, m := range msgs {
		k, _ := m.Key.Encode()
		v, _ := m.Value.Encode()
		out[i] = sent{key: string(k), value: string(v), headers: m.Headers, partition: m.Partition, offset: m.Offset}
	}
	return out, nil
}

// keyed returns n messages to topic with keys k-I, values and a header.
func keyed(topic string, n int, tag string) []*sarama.ProducerMessage {
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{
			Topic:   topic,
			Key:     sarama.StringEncoder(fmt.Sprintf("k-%d", i)),
			Value:   sarama.StringEncoder(fmt.Sprintf("%s value %d %s", tag, i, string(make([]byte, i%40)))),
			Headers: []sarama.RecordHeader{{Key: []byte("i"), Value: []byte(fmt.Sprint(i))}, {Key: []byte("tag"), Value: []byte(tag)}},
		}
	}
	return msgs
}

// consume reads n messages of topic's partition from offset with a
// Consumer of cfg.
func consume(e *env, cfg *sarama.Config, topic string, partition int32, offset int64, n int) ([]*sarama.ConsumerMessage, error) {
	c, err := sarama.NewConsumer(e.bootstrap, cfg)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, partition, offset)
	if err != nil {
		return nil, fmt.Errorf("consume %s/%d from %d: %w", topic, partition, offset, err)
	}
	defer pc.Close()
	var got []*sarama.ConsumerMessage
	timeout := time.After(20 * time.Second)
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			got = append(got, m)
		case err := <-pc.Errors():
			return got, fmt.Errorf("consume %s/%d: %w", topic, partition, err)
		case <-timeout:
			return got, fmt.Errorf("consume %s/%d: %d of %d messages in 20 s", topic, partition, len(got), n)
		}
	}
	return got, nil
}

// same reports how got differs from want, record for record; want is one
// partition's acknowledged records in order.
func same(want []sent, got []*sarama.ConsumerMessage) error {
	if len(got) != len(want) {
		return fmt.Errorf("read %d records, produced %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Offset != w.offset || string(g.Key) != w.key || string(g.Value) != w.value {
			return fmt.Errorf("record %d: read offset %d key %q value %q, acked offset %d key %q value %q",
				i, g.Offset, g.Key, g.Value, w.offset, w.key, w.value)
		}
		if len(g.Headers) != len(w.headers) {
			return fmt.Errorf("record at %d: %d headers, produced %d", g.Offset, len(g.Headers), len(w.headers))
		}
		for j, h := range w.headers {
			if string(g.Headers[j].Key) != string(h.Key) || string(g.Headers[j].Value) != string(h.Value) {
				return fmt.Errorf("record at %d: header %d is %q=%q, produced %q=%q", g.Offset, j,
					g.Headers[j].Key, g.Headers[j].Value, h.Key, h.Value)
			}
		}
	}
	return nil
}

// byPartition groups acknowledged records by partition, in offset order.
func byPartition(s []sent) map[int32][]sent {
	m := map[int32][]sent{}
	for _, r := range s {
		m[r.partition] = append(m[r.partition], r)
	}
	for _, rs := range m {
		slices.SortFunc(rs, func(a, b sent) int { return int(a.offset - b.offset) })
	}
	return m
}

// produceConsume: an idempotent producer sends 200 keyed records with
// headers over 2 partitions with codec; each partition reads back from the
// start exactly what was acknowledged.
func produceConsume(e *env, codec sarama.CompressionCodec) error {
	topic := e.topic("codec-" + codec.String())
	if err := createTopic(e, topic, 2); err != nil {
		return err
	}
	cfg := idempotent(config(sarama.DefaultVersion))
	cfg.Producer.Compression = codec
	acked, err := produce(e, cfg, keyed(topic, 200, codec.String()))
	if err != nil {
		return err
	}
	parts := byPartition(acked)
	if len(parts) != 2 {
		return fmt.Errorf("records went to %d partitions, want 2", len(parts))
	}
	for p, want := range parts {
		if want[0].offset != 0 || want[len(want)-1].offset != int64(len(want)-1) {
			return fmt.Errorf("partition %d acked offsets %d..%d for %d records", p, want[0].offset, want[len(want)-1].offset, len(want))
		}
		got, err := consume(e, config(sarama.DefaultVersion), topic, p, sarama.OffsetOldest, len(want))
		if err != nil {
			return err
		}
		if err := same(want, got); err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
		// Nothing past what was read: the log ends there.
		if err := wantOffset(e, sarama.DefaultVersion, topic, p, sarama.OffsetNewest, int64(len(want))); err != nil {
			return err
		}
	}
	return nil
}

// versioned: a client configured for Kafka version v (which picks each
// request's version) produces 10 records, reads them back, and finds the
// partition's oldest and newest offsets.
func versioned(e *env, v sarama.KafkaVersion) error {
	topic := e.topic("v" + v.String())
	if err := createTopic(e, topic, 1); err != nil {
		return err
	}
	cfg := config(v)
	cfg.Producer.Compression = sarama.CompressionLZ4
	acked, err := produce(e, cfg, keyed(topic, 10, v.String()))
	if err != nil {
		return err
	}
	got, err := consume(e, config(v), topic, 0, sarama.OffsetOldest, 10)
	if err != nil {
		return err
	}
	if err := same(acked, got); err != nil {
		return err
	}
	if err := wantOffset(e, v, topic, 0, sarama.OffsetOldest, 0); err != nil {
		return err
	}
	return wantOffset(e, v, topic, 0, sarama.OffsetNewest, 10)
}

// autoCreate: producing to a topic that does not exist creates it (Kafka's
// default auto.create.topics.enable=true, and sarama's
// Metadata.AllowAutoTopicCreation), and it reads back.
func autoCreate(e *env) error {
	topic := e.topic("auto")
	acked, err := produce(e, config(sarama.DefaultVersion), keyed(topic, 3, "auto"))
	if err != nil {
		return err
	}
	for p, want := range byPartition(acked) {
		got, err := consume(e, config(sarama.DefaultVersion), topic, p, sarama.OffsetOldest, len(want))
		if err != nil {
			return err
		}
		if err := same(want, got); err != nil {
			return err
		}
	}
	return nil
}

// adminTopics: ClusterAdmin's topic calls. CreateTopic (again:
// ErrTopicAlreadyExists), ListTopics and DescribeTopics with 3 partitions,
// DescribeConfig's retention.ms and cleanup.policy, CreatePartitions to 5,
// DeleteRecords before 3, DeleteTopic.
func adminTopics(e *env) error {
	adm, err := sarama.NewClusterAdmin(e.bootstrap, config(sarama.DefaultVersion))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer adm.Close()
	topic := e.topic("admin")
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create again: %v, want %v", err, sarama.ErrTopicAlreadyExists)
	}
	topics, err := adm.ListTopics()
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != 3 {
		return fmt.Errorf("list: %s is %+v (listed: %v)", topic, d, ok)
	}
	if err := partitionsAre(adm, topic, 3); err != nil {
		return err
	}
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		return fmt.Errorf("describe config: %w", err)
	}
	configs := map[string]string{}
	for _, c := range entries {
		configs[c.Name] = c.Value
	}
	if configs["retention.ms"] == "" || configs["cleanup.policy"] != "delete" {
		return fmt.Errorf("describe config: retention.ms %q, cleanup.policy %q (of %d entries)",
			configs["retention.ms"], configs["cleanup.policy"], len(entries))
	}
	if err := adm.CreatePartitions(topic, 5, nil, false); err != nil {
		return fmt.Errorf("create partitions: %w", err)
	}
	if err := partitionsAre(adm, topic, 5); err != nil {
		return err
	}
	msgs := keyed(topic, 5, "admin")
	for _, m := range msgs {
		m.Partition = 4
	}
	cfg := config(sarama.DefaultVersion)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	if _, err := produce(e, cfg, msgs); err != nil {
		return fmt.Errorf("produce to the new partition: %w", err)
	}
	if err := adm.DeleteRecords(topic, map[int32]int64{4: 3}); err != nil {
		return fmt.Errorf("delete records: %w", err)
	}
	if err := wantOffset(e, sarama.DefaultVersion, topic, 4, sarama.OffsetOldest, 3); err != nil {
		return fmt.Errorf("after delete records: %w", err)
	}
	got, err := consume(e, config(sarama.DefaultVersion), topic, 4, sarama.OffsetOldest, 2)
	if err != nil {
		return err
	}
	if got[0].Offset != 3 {
		return fmt.Errorf("after delete records reading starts at %d, want 3", got[0].Offset)
	}
	if err := adm.DeleteTopic(topic); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return eventually(10*time.Second, func() error {
		topics, err := adm.ListTopics()
		if err == nil {
			if _, ok := topics[topic]; ok {
				err = fmt.Errorf("deleted topic %s still listed", topic)
			}
		}
		return err
	})
}

// partitionsAre checks DescribeTopics: n partitions, each with a leader.
func partitionsAre(adm sarama.ClusterAdmin, topic string, n int) error {
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil {
		return fmt.Errorf("describe topics: %w", err)
	}
	if len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrNoError) || len(md[0].Partitions) != n {
		return fmt.Errorf("describe topics: %+v, want %s with %d partitions", md, topic, n)
	}
	for _, p := range md[0].Partitions {
		if p.Leader < 0 || !slices.Contains(p.Replicas, p.Leader) {
			return fmt.Errorf("describe topics: partition %d has leader %d, replicas %v", p.ID, p.Leader, p.Replicas)
		}
	}
	return nil
}

// offsetsForTimes: three records a second apart; the offset for a time is
// the first record at or after it, and none (-1) after the last.
func offsetsForTimes(e *env) error {
	topic := e.topic("times")
	if err := createTopic(e, topic, 1); err != nil {
		return err
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	msgs := keyed(topic, 3, "times")
	for i, m := range msgs {
		m.Timestamp = t0.Add(time.Duration(i) * time.Second)
	}
	if _, err := produce(e, config(sarama.DefaultVersion), msgs); err != nil {
		return err
	}
	for _, tc := range []struct {
		at   time.Time
		want int64
	}{
		{t0.Add(-time.Minute), 0},
		{t0, 0},
		{t0.Add(500 * time.Millisecond), 1},
		{t0.Add(2 * time.Second), 2},
		{t0.Add(3 * time.Second), -1},
	} {
		if err := wantOffset(e, sarama.DefaultVersion, topic, 0, tc.at.UnixMilli(), tc.want); err != nil {
			return fmt.Errorf("t0+%s: %w", tc.at.Sub(t0), err)
		}
	}
	return nil
}

// wantOffset fails unless the offset ListOffsets answers for partition of
// topic at at (a time in Unix milliseconds, or sarama.OffsetOldest or
// OffsetNewest) is want, asked by a client of Kafka version v.
func wantOffset(e *env, v sarama.KafkaVersion, topic string, partition int32, at, want int64) error {
	cl, err := sarama.NewClient(e.bootstrap, config(v))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer cl.Close()
	what := map[int64]string{sarama.OffsetOldest: "oldest", sarama.OffsetNewest: "newest"}[at]
	if what == "" {
		what = fmt.Sprintf("at time %d", at)
	}
	got, err := cl.GetOffset(topic, partition, at)
	if err != nil {
		return fmt.Errorf("%s offset of %s/%d: %w", what, topic, partition, err)
	}
	if got != want {
		return fmt.Errorf("%s offset of %s/%d is %d, want %d", what, topic, partition, got, want)
	}
	return nil
}

// eventually retries f every 100 ms until it succeeds or d has passed.
func eventually(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
