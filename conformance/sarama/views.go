package main

import (
	"fmt"
	"slices"

	"github.com/IBM/sarama"
)

// viewKeys are the keys of a view check's six records, at offsets 0-5.
var viewKeys = []string{"CC54 RYD", "NN03 RYB", "CC54 RYD", "XX", "NN03 RYB", "CC54 RYD"}

// floeView: floe's hierarchical topics (not Kafka's). A group subscribed to
// TOPIC/CC54 RYD of a topic with hierarchical.enabled=true reads that key's
// records at their base offsets (0, 2, 5) and commits; after one more record
// of the key (and one of another), a restarted member reads just it.
func floeView(e *env) error {
	adm, err := sarama.NewClusterAdmin(e.bootstrap, config(sarama.DefaultVersion))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer adm.Close()
	topic, group := e.topic("view"), e.topic("view-id")
	enabled := "true"
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"hierarchical.enabled": &enabled}}, false); err != nil {
		return fmt.Errorf("create hierarchical topic: %w", err)
	}
	records := func(keys ...string) []*sarama.ProducerMessage {
		var msgs []*sarama.ProducerMessage
		for _, k := range keys {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(k), Value: sarama.StringEncoder("r")})
		}
		return msgs
	}
	if _, err := produce(e, config(sarama.DefaultVersion), records(viewKeys...)); err != nil {
		return err
	}
	view := topic + "/CC54 RYD"
	read := func(n int) ([]int64, error) {
		m, err := joinGroup(e, group, view)
		if err != nil {
			return nil, err
		}
		defer m.close()
		got, err := m.read(n)
		if err != nil {
			return nil, err
		}
		var offs []int64
		for _, g := range got {
			if string(g.Key) != "CC54 RYD" || g.Topic != view {
				return nil, fmt.Errorf("view answered %s key %q at %d", g.Topic, g.Key, g.Offset)
			}
			offs = append(offs, g.Offset)
		}
		slices.Sort(offs)
		return offs, m.commit()
	}
	if offs, err := read(3); err != nil || !slices.Equal(offs, []int64{0, 2, 5}) {
		return fmt.Errorf("view read offsets %v (%v), want [0 2 5]", offs, err)
	}
	if _, err := produce(e, config(sarama.DefaultVersion), records("CC54 RYD", "XX")); err != nil {
		return err
	}
	if offs, err := read(1); err != nil || !slices.Equal(offs, []int64{6}) {
		return fmt.Errorf("restarted member read offsets %v (%v), want [6]", offs, err)
	}
	return nil
}
