package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// fakeCoordinator is an in-memory Coordinator for handler tests. It keeps
// topics, partition offsets and batch timestamps, and answers with the
// Kafka-level errors the real coordinator documents. It is no model of the
// real one beyond that: tests that need its exact behavior use
// coordinator.Open.
type fakeCoordinator struct {
	mu struct {
		sync.Mutex
		topics    map[string]*fakeTopic
		nextID    byte
		nextPID   int64
		lastInit  coordapi.InitProducerIDRequest
		initErr   error
		createReq []coordapi.CreateTopicRequest
	}
}

type fakeTopic struct {
	t     coordapi.Topic
	parts []fakePartition
}

type fakePartition struct {
	logStart, hwm int64
	batches       []fakeBatch
}

// fakeBatch is one committed batch: offsets [base, last], max timestamp.
type fakeBatch struct {
	base, last, maxTs int64
}

var _ Coordinator = (*fakeCoordinator)(nil)

func newFakeCoordinator() *fakeCoordinator {
	f := &fakeCoordinator{}
	f.mu.topics = make(map[string]*fakeTopic)
	f.mu.nextPID = 1000
	return f
}

// addTopic creates a topic directly (test setup).
func (f *fakeCoordinator) addTopic(name string, partitions int32, configs map[string]string) coordapi.Topic {
	t, err := f.CreateTopic(context.Background(), coordapi.CreateTopicRequest{Name: name, Partitions: partitions, ReplicationFactor: -1, Configs: configs})
	if err != nil {
		panic(err)
	}
	return t
}

// appendBatch adds a batch of n records with max timestamp maxTs to a
// partition (test setup).
func (f *fakeCoordinator) appendBatch(name string, partition int32, n int64, maxTs int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &f.mu.topics[name].parts[partition]
	p.batches = append(p.batches, fakeBatch{base: p.hwm, last: p.hwm + n - 1, maxTs: maxTs})
	p.hwm += n
}

func kafkaErr(code *kerr.Error, format string, args ...any) error {
	return &coordapi.KafkaError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (f *fakeCoordinator) CreateTopic(_ context.Context, req coordapi.CreateTopicRequest) (coordapi.Topic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.createReq = append(f.mu.createReq, req)
	switch {
	case req.Name == "" || strings.ContainsAny(req.Name, " /"):
		return coordapi.Topic{}, kafkaErr(kerr.InvalidTopicException, "Topic name %q is illegal", req.Name)
	case f.mu.topics[req.Name] != nil:
		return coordapi.Topic{}, kafkaErr(kerr.TopicAlreadyExists, "Topic '%s' already exists.", req.Name)
	case req.Partitions <= 0:
		return coordapi.Topic{}, kafkaErr(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	case req.ReplicationFactor == 0 || req.ReplicationFactor < -1 || req.ReplicationFactor > 3:
		return coordapi.Topic{}, kafkaErr(kerr.InvalidReplicationFactor, "bad replication factor %d", req.ReplicationFactor)
	}
	for name := range req.Configs {
		if _, ok := coordapi.LookupTopicConfig(name); !ok {
			return coordapi.Topic{}, kafkaErr(kerr.InvalidConfig, "Unknown topic config name: %s", name)
		}
	}
	t := coordapi.Topic{Name: req.Name, Partitions: req.Partitions, Configs: maps.Clone(req.Configs)}
	if req.ValidateOnly {
		return t, nil
	}
	f.mu.nextID++
	t.ID = coordapi.TopicID{0: 0xf0, 15: f.mu.nextID}
	f.mu.topics[req.Name] = &fakeTopic{t: t, parts: make([]fakePartition, req.Partitions)}
	return t, nil
}

func (f *fakeCoordinator) DeleteTopic(_ context.Context, name string) (coordapi.TopicID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.mu.topics[name]
	if ft == nil {
		return coordapi.TopicID{}, fmt.Errorf("delete topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	delete(f.mu.topics, name)
	return ft.t.ID, nil
}

func (f *fakeCoordinator) DeleteTopicByID(_ context.Context, id coordapi.TopicID) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.byIDLocked(id)
	if ft == nil {
		return "", fmt.Errorf("delete topic %s: %w", id, kerr.UnknownTopicID)
	}
	delete(f.mu.topics, ft.t.Name)
	return ft.t.Name, nil
}

func (f *fakeCoordinator) byIDLocked(id coordapi.TopicID) *fakeTopic {
	for _, ft := range f.mu.topics {
		if ft.t.ID == id {
			return ft
		}
	}
	return nil
}

func (f *fakeCoordinator) CreatePartitions(_ context.Context, name string, count int32, validateOnly bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.mu.topics[name]
	if ft == nil {
		return fmt.Errorf("create partitions: %w", kerr.UnknownTopicOrPartition)
	}
	if count <= ft.t.Partitions {
		return kafkaErr(kerr.InvalidPartitions, "Topic currently has %d partitions, which is higher than the requested %d.", ft.t.Partitions, count)
	}
	if validateOnly {
		return nil
	}
	ft.parts = append(ft.parts, make([]fakePartition, count-ft.t.Partitions)...)
	ft.t.Partitions = count
	return nil
}

func (f *fakeCoordinator) AlterTopicConfigs(_ context.Context, name string, ops []coordapi.ConfigOp, incremental, validateOnly bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.mu.topics[name]
	if ft == nil {
		return fmt.Errorf("alter configs: %w", kerr.UnknownTopicOrPartition)
	}
	next := map[string]string{}
	if incremental {
		next = maps.Clone(ft.t.Configs)
		if next == nil {
			next = map[string]string{}
		}
	}
	for _, op := range ops {
		d, ok := coordapi.LookupTopicConfig(op.Name)
		if !ok {
			return kafkaErr(kerr.InvalidConfig, "Unknown topic config name: %s", op.Name)
		}
		switch op.Op {
		case coordapi.OpSet:
			next[op.Name] = *op.Value
		case coordapi.OpDelete:
			delete(next, op.Name)
		case coordapi.OpAppend, coordapi.OpSubtract:
			if d.Type != coordapi.ConfigTypeList {
				return kafkaErr(kerr.InvalidConfig, "Config value append is not allowed for config key: %s", op.Name)
			}
			cur, ok := next[op.Name]
			if !ok {
				cur = d.Default
			}
			var items []string
			for _, s := range strings.Split(cur, ",") {
				if s != "" {
					items = append(items, s)
				}
			}
			if op.Op == coordapi.OpAppend {
				if !slices.Contains(items, *op.Value) {
					items = append(items, *op.Value)
				}
			} else {
				items = slices.DeleteFunc(items, func(s string) bool { return s == *op.Value })
			}
			next[op.Name] = strings.Join(items, ",")
		}
	}
	if !validateOnly {
		ft.t.Configs = next
	}
	return nil
}

func (f *fakeCoordinator) Topic(_ context.Context, name string) (coordapi.Topic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.mu.topics[name]
	if ft == nil {
		return coordapi.Topic{}, fmt.Errorf("topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	t := ft.t
	t.Configs = maps.Clone(t.Configs)
	return t, nil
}

func (f *fakeCoordinator) TopicByID(_ context.Context, id coordapi.TopicID) (coordapi.Topic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.byIDLocked(id)
	if ft == nil {
		return coordapi.Topic{}, fmt.Errorf("topic %s: %w", id, kerr.UnknownTopicID)
	}
	t := ft.t
	t.Configs = maps.Clone(t.Configs)
	return t, nil
}

func (f *fakeCoordinator) Topics(context.Context) ([]coordapi.Topic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []coordapi.Topic
	for _, ft := range f.mu.topics {
		t := ft.t
		t.Configs = maps.Clone(t.Configs)
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f *fakeCoordinator) FindBatches(context.Context, coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	return coordapi.FindBatchesResponse{}, errors.New("fakeCoordinator: FindBatches not implemented")
}

func (f *fakeCoordinator) partLocked(id coordapi.TopicID, partition int32) (*fakePartition, error) {
	ft := f.byIDLocked(id)
	if ft == nil {
		return nil, fmt.Errorf("topic %s: %w", id, kerr.UnknownTopicID)
	}
	if partition < 0 || partition >= ft.t.Partitions {
		return nil, fmt.Errorf("partition %d: %w", partition, kerr.UnknownTopicOrPartition)
	}
	return &ft.parts[partition], nil
}

func (f *fakeCoordinator) PartitionState(_ context.Context, id coordapi.TopicID, partition int32) (coordapi.PartitionState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.partLocked(id, partition)
	if err != nil {
		return coordapi.PartitionState{}, err
	}
	return coordapi.PartitionState{LogStartOffset: p.logStart, HighWatermark: p.hwm}, nil
}

func (f *fakeCoordinator) ListOffset(_ context.Context, id coordapi.TopicID, partition int32, timestamp int64) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.partLocked(id, partition)
	if err != nil {
		return -1, -1, err
	}
	switch timestamp {
	case coordapi.TimestampLatest:
		return p.hwm, -1, nil
	case coordapi.TimestampEarliest, coordapi.TimestampEarliestLocal:
		return p.logStart, -1, nil
	case coordapi.TimestampLatestTiered:
		return -1, -1, nil
	case coordapi.TimestampMax:
		offset, ts := int64(-1), int64(-1)
		for _, b := range p.batches {
			if b.last >= p.logStart && b.maxTs > ts {
				offset, ts = max(b.last, p.logStart), b.maxTs
			}
		}
		return offset, ts, nil
	}
	for _, b := range p.batches {
		if b.last >= p.logStart && b.maxTs >= timestamp {
			return max(b.base, p.logStart), b.maxTs, nil
		}
	}
	return -1, -1, nil
}

func (f *fakeCoordinator) DeleteRecords(_ context.Context, id coordapi.TopicID, partition int32, offset int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.partLocked(id, partition)
	if err != nil {
		return -1, err
	}
	if offset == -1 {
		offset = p.hwm
	}
	if offset < 0 || offset > p.hwm {
		return -1, kafkaErr(kerr.OffsetOutOfRange, "offset %d is outside [0, %d]", offset, p.hwm)
	}
	p.logStart = max(p.logStart, offset)
	return p.logStart, nil
}

func (f *fakeCoordinator) InitProducerID(_ context.Context, req coordapi.InitProducerIDRequest) (coordapi.InitProducerIDResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.lastInit = req
	if f.mu.initErr != nil {
		return coordapi.InitProducerIDResponse{}, f.mu.initErr
	}
	if req.ProducerID >= 0 {
		return coordapi.InitProducerIDResponse{ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch + 1}, nil
	}
	f.mu.nextPID++
	return coordapi.InitProducerIDResponse{ProducerID: f.mu.nextPID, ProducerEpoch: 0}, nil
}

func (f *fakeCoordinator) Subscribe(func([]coordapi.CommitNotice)) (cancel func()) {
	return func() {}
}

func (f *fakeCoordinator) KvLookup(context.Context, coordapi.TopicID, int32, []byte) (int64, int64, bool, error) {
	return 0, 0, false, nil
}

func (f *fakeCoordinator) KvReady(context.Context, coordapi.TopicID) (bool, error) {
	return true, nil
}

func (f *fakeCoordinator) ListBrokers(context.Context) ([]coordapi.BrokerInfo, error) {
	return nil, nil
}
