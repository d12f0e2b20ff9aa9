package broker

import (
	"context"
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/kvindex"
)

// KVService returns the service behind GET /kv/{topic}/{key}: the key index
// through the coordinator, records read back through the chunk cache.
func (b *Broker) KVService() kvindex.Service { return kvService{b} }

type kvService struct{ b *Broker }

func (s kvService) Topic(ctx context.Context, name string) (kvindex.TopicInfo, error) {
	t, err := s.b.coord.Topic(ctx, name)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return kvindex.TopicInfo{}, kvindex.ErrUnknownTopic
	}
	if err != nil {
		return kvindex.TopicInfo{}, err
	}
	info := kvindex.TopicInfo{ID: t.ID, Partitions: t.Partitions,
		Indexed: strings.EqualFold(t.Config(coordapi.ConfigKVIndexEnabled), "true")}
	if info.Indexed {
		if info.Ready, err = s.b.coord.KvReady(ctx, t.ID); err != nil {
			return info, err
		}
	}
	return info, nil
}

func (s kvService) Lookup(ctx context.Context, id [16]byte, partition int32, key []byte) (int64, bool, error) {
	offset, _, found, err := s.b.coord.KvLookup(ctx, id, partition, key)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return 0, false, kvindex.ErrUnknownPartition
	}
	return offset, found, err
}

func (s kvService) HighWatermark(ctx context.Context, id [16]byte, partition int32) (int64, error) {
	st, err := s.b.coord.PartitionState(ctx, id, partition)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return 0, kvindex.ErrUnknownPartition
	}
	return st.HighWatermark, err
}

// ReadBatch reads the batch holding offset through the chunk cache. floe has
// no tiered-only data yet (consolidation into segments is the tiered/
// part's), so no batch is remote.
func (s kvService) ReadBatch(ctx context.Context, id [16]byte, partition int32, offset int64, _ bool) (kvindex.Batch, error) {
	data, bc, err := s.b.readBatch(ctx, id, partition, offset)
	if errors.Is(err, kerr.OffsetOutOfRange) {
		return kvindex.Batch{}, kvindex.ErrOffsetOutOfRange
	}
	if err != nil {
		return kvindex.Batch{}, err
	}
	out := kvindex.Batch{Data: data, BaseOffset: bc.BaseOffset}
	if bc.LogAppendTime {
		out.LogAppendTime = bc.MaxTimestamp
	}
	return out, nil
}
