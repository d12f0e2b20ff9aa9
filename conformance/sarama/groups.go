package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// member is one sarama ConsumerGroup consuming until it is stopped. It
// marks every message it reads and sends it on msgs; claims holds its
// current session's partitions.
type member struct {
	group  sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
	msgs   chan *sarama.ConsumerMessage

	mu     sync.Mutex
	sess   sarama.ConsumerGroupSession
	claims []int32
	err    error
}

func joinGroup(e *env, groupID string, topics ...string) (*member, error) {
	cfg := config(sarama.DefaultVersion)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	g, err := sarama.NewConsumerGroup(e.bootstrap, groupID, cfg)
	if err != nil {
		return nil, fmt.Errorf("consumer group %s: %w", groupID, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{group: g, cancel: cancel, done: make(chan struct{}), msgs: make(chan *sarama.ConsumerMessage, 1024)}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, topics, m); err != nil && ctx.Err() == nil {
				m.mu.Lock()
				m.err = err
				m.mu.Unlock()
				return
			}
		}
	}()
	go func() {
		for err := range g.Errors() {
			m.mu.Lock()
			if m.err == nil {
				m.err = err
			}
			m.mu.Unlock()
		}
	}()
	return m, nil
}

// Setup implements sarama.ConsumerGroupHandler.
func (m *member) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sess = s
	m.claims = nil
	for _, ps := range s.Claims() {
		m.claims = append(m.claims, ps...)
	}
	slices.Sort(m.claims)
	return nil
}

// Cleanup implements sarama.ConsumerGroupHandler.
func (m *member) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim implements sarama.ConsumerGroupHandler.
func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		s.MarkMessage(msg, "")
		m.msgs <- msg
	}
	return nil
}

// read collects n messages, failing on a group error or after 30 s.
func (m *member) read(n int) ([]*sarama.ConsumerMessage, error) {
	var got []*sarama.ConsumerMessage
	timeout := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case msg := <-m.msgs:
			got = append(got, msg)
		case <-timeout:
			return got, fmt.Errorf("group read %d of %d messages in 30 s (error: %v)", len(got), n, m.error())
		case <-m.done:
			return got, fmt.Errorf("group stopped after %d of %d messages: %v", len(got), n, m.error())
		}
	}
	return got, nil
}

func (m *member) error() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// commit commits what the member has marked, synchronously.
func (m *member) commit() error {
	m.mu.Lock()
	s := m.sess
	m.mu.Unlock()
	if s == nil {
		return fmt.Errorf("commit: no session")
	}
	s.Commit()
	return m.error()
}

func (m *member) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.claims)
}

func (m *member) close() error {
	m.cancel()
	<-m.done
	return m.group.Close()
}

// groupCommitResume: a group member reads 30 records of a 2-partition topic
// and commits; the group's offsets are the partitions' ends
// (ListConsumerGroupOffsets) and it is listed and described; a restarted
// member reads exactly the 10 records produced since, nothing before; the
// group is then deleted.
func groupCommitResume(e *env) error {
	topic, group := e.topic("group"), e.topic("group-id")
	if err := createTopic(e, topic, 2); err != nil {
		return err
	}
	first, err := produce(e, config(sarama.DefaultVersion), keyed(topic, 30, "first"))
	if err != nil {
		return err
	}
	ends := map[int32]int64{}
	for _, s := range first {
		ends[s.partition] = max(ends[s.partition], s.offset+1)
	}
	m, err := joinGroup(e, group, topic)
	if err != nil {
		return err
	}
	if _, err := m.read(30); err != nil {
		m.close()
		return err
	}
	if err := m.commit(); err != nil {
		m.close()
		return err
	}
	if err := m.close(); err != nil {
		return fmt.Errorf("close member: %w", err)
	}

	adm, err := sarama.NewClusterAdmin(e.bootstrap, config(sarama.DefaultVersion))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer adm.Close()
	offs, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1}})
	if err != nil {
		return fmt.Errorf("list group offsets: %w", err)
	}
	for p, end := range ends {
		b := offs.GetBlock(topic, p)
		if b == nil || b.Offset != end {
			return fmt.Errorf("committed offset of partition %d: %+v, want %d", p, b, end)
		}
	}
	groups, err := adm.ListConsumerGroups()
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	if _, ok := groups[group]; !ok {
		return fmt.Errorf("list groups: %s not among %d groups", group, len(groups))
	}
	desc, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil {
		return fmt.Errorf("describe groups: %w", err)
	}
	if len(desc) != 1 || desc[0].State != "Empty" || desc[0].ProtocolType != "consumer" {
		return fmt.Errorf("describe groups: %+v, want %s Empty of protocol type consumer", desc, group)
	}

	second, err := produce(e, config(sarama.DefaultVersion), keyed(topic, 10, "second"))
	if err != nil {
		return err
	}
	m, err = joinGroup(e, group, topic)
	if err != nil {
		return err
	}
	got, err := m.read(10)
	m.close()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, s := range second {
		want[fmt.Sprint(s.partition, "/", s.offset)] = true
	}
	for _, g := range got {
		if g.Offset < ends[g.Partition] || !want[fmt.Sprint(g.Partition, "/", g.Offset)] {
			return fmt.Errorf("restarted member read %d/%d, not one of the 10 produced after the commit", g.Partition, g.Offset)
		}
		delete(want, fmt.Sprint(g.Partition, "/", g.Offset))
	}
	if err := adm.DeleteConsumerGroup(group); err != nil {
		return fmt.Errorf("delete group: %w", err)
	}
	return nil
}

// groupRebalance: two members of a group split 4 partitions 2 and 2; once
// one leaves, the other owns all 4.
func groupRebalance(e *env) error {
	topic, group := e.topic("rebalance"), e.topic("rebalance-id")
	if err := createTopic(e, topic, 4); err != nil {
		return err
	}
	a, err := joinGroup(e, group, topic)
	if err != nil {
		return err
	}
	defer a.close()
	if err := eventually(30*time.Second, func() error { return owns(a, 4) }); err != nil {
		return fmt.Errorf("alone: %w", err)
	}
	b, err := joinGroup(e, group, topic)
	if err != nil {
		return err
	}
	if err := eventually(30*time.Second, func() error {
		if err := owns(a, 2); err != nil {
			return err
		}
		if err := owns(b, 2); err != nil {
			return err
		}
		if both := append(a.partitions(), b.partitions()...); len(slices.Compact(slices.Sorted(slices.Values(both)))) != 4 {
			return fmt.Errorf("members own %v and %v", a.partitions(), b.partitions())
		}
		return nil
	}); err != nil {
		b.close()
		return fmt.Errorf("two members: %w", err)
	}
	if err := b.close(); err != nil {
		return fmt.Errorf("close second member: %w", err)
	}
	if err := eventually(30*time.Second, func() error { return owns(a, 4) }); err != nil {
		return fmt.Errorf("after the second left: %w", err)
	}
	return nil
}

func owns(m *member, n int) error {
	if err := m.error(); err != nil {
		return err
	}
	if ps := m.partitions(); len(ps) != n {
		return fmt.Errorf("member owns %v, want %d partitions", ps, n)
	}
	return nil
}
