package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// Fetch: v4-v13. v12+ flexible; v13 names topics by id. Sessionless: every
// answer has session id 0 and is a full response, which clients accept.
// With too little data and MaxWaitMillis > 0 the fetch waits for a commit
// notice on one of its partitions, or the deadline.
func init() { register(kmsg.Fetch, 4, 13, (*Broker).handleFetch) }

// maxFetchWait bounds how long a fetch may park, whatever the client asks.
const maxFetchWait = 30 * time.Second

func (b *Broker) handleFetch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.FetchRequest)
	wait := min(time.Duration(req.MaxWaitMillis)*time.Millisecond, maxFetchWait)
	deadline := time.Now().Add(wait)
	var (
		wake       chan struct{}
		unregister func()
	)
	defer func() {
		if unregister != nil {
			unregister()
		}
	}()
	var rotate int
	if r.conn != nil {
		rotate = int(r.conn.fetches.Add(1))
	}
	for {
		resp, n, tps, stop := b.fetchOnce(ctx, req, rotate)
		if stop || n >= int(req.MinBytes) || n > 0 && req.MinBytes <= 0 || wait <= 0 || !time.Now().Before(deadline) {
			return resp, nil
		}
		if wake == nil {
			// Register before fetching again so that no commit slips
			// between the read and the wait.
			wake = make(chan struct{}, 1)
			unregister = b.waiters.register(tps, wake)
			continue
		}
		var draining <-chan struct{}
		if r.conn != nil {
			draining = r.conn.draining
		}
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-wake:
			timer.Stop()
		case <-timer.C:
		case <-draining:
			timer.Stop()
			return resp, nil // the broker is stopping: answer what there is
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
}

// fetchOnce reads what is there now. It returns the response, the bytes of
// records in it, the partitions asked for, and whether the fetch must answer
// at once (an error on some partition). The byte budget is shared fairly:
// partitions are filled starting at a position that rotates from one fetch
// of the connection to the next, so that a busy partition early in the
// request cannot starve the later ones; the response keeps request order.
func (b *Broker) fetchOnce(ctx context.Context, req *kmsg.FetchRequest, rotate int) (*kmsg.FetchResponse, int, []topicPartition, bool) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	budget := int(req.MaxBytes)
	if budget <= 0 {
		budget = 50 << 20
	}
	type readable struct {
		id coordapi.TopicID
		rp *kmsg.FetchRequestTopicPartition
		sp *kmsg.FetchResponseTopicPartition
	}
	var (
		total int
		tps   []topicPartition
		todo  []readable
		stop  bool
	)
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := &resp.Topics[ti]
		*st = kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var (
			t    coordapi.Topic
			terr error
		)
		if req.Version >= 13 {
			t, terr = b.topics.byID(ctx, coordapi.TopicID(rt.TopicID))
		} else {
			t, terr = b.topics.byName(ctx, rt.Topic)
		}
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := &st.Partitions[pi]
			*sp = kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			// Records is never null, whatever the partition's outcome:
			// librdkafka fails the whole response on a null record set
			// (MessageSetSize -1) and backs off; Kafka sends an empty one.
			sp.RecordBatches = []byte{}
			if req.IsolationLevel == 1 {
				// read_committed: Kafka lists the aborted transactions
				// (none here: floe serves no transactions); it sends
				// null only under read_uncommitted.
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
			switch {
			case terr != nil:
				sp.ErrorCode = errorCode(terr)
				if req.Version >= 13 && errors.Is(terr, kerr.UnknownTopicOrPartition) {
					sp.ErrorCode = kerr.UnknownTopicID.Code
				}
				stop = true
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				stop = true
			case checkLeaderEpoch(rp.CurrentLeaderEpoch) != nil:
				sp.ErrorCode = checkLeaderEpoch(rp.CurrentLeaderEpoch).Code
				stop = true
			default:
				tps = append(tps, topicPartition{t.ID, rp.Partition})
				todo = append(todo, readable{t.ID, rp, sp})
			}
		}
	}
	for i := range todo {
		r := todo[(i+rotate)%len(todo)]
		limit := min(int(r.rp.PartitionMaxBytes), budget-total)
		if total == 0 {
			limit = max(limit, 1) // the first batch always goes out whole
		}
		n, err := b.fetchPartition(ctx, r.id, *r.rp, limit, r.sp)
		if err != nil {
			r.sp.ErrorCode = errorCode(err)
			stop = true
		}
		total += n
	}
	return resp, total, tps, stop
}

// fetchPartition fills sp with the batches from rp.FetchOffset on, up to
// limit bytes (at least one batch when limit > 0), patched for the wire.
func (b *Broker) fetchPartition(ctx context.Context, id coordapi.TopicID, rp kmsg.FetchRequestTopicPartition, limit int, sp *kmsg.FetchResponseTopicPartition) (int, error) {
	if limit <= 0 {
		st, err := b.coord.PartitionState(ctx, id, rp.Partition)
		if err != nil {
			return 0, err
		}
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = st.HighWatermark, st.HighWatermark, st.LogStartOffset
		return 0, nil
	}
	tp := topicPartition{id, rp.Partition}
	found, ok := b.tails.find(tp, rp.FetchOffset, int32(limit))
	var err error
	if !ok {
		found, err = b.coord.FindBatches(ctx, coordapi.FindBatchesRequest{
			TopicID:   id,
			Partition: rp.Partition,
			Offset:    rp.FetchOffset,
			MaxBytes:  int32(limit),
		})
		if err == nil {
			b.tails.verify(tp, found.PartitionState)
		}
	}
	if err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) {
			if st, serr := b.coord.PartitionState(ctx, id, rp.Partition); serr == nil {
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = st.HighWatermark, st.HighWatermark, st.LogStartOffset
			}
		}
		return 0, err
	}
	sp.HighWatermark = found.HighWatermark
	sp.LastStableOffset = found.HighWatermark
	sp.LogStartOffset = found.LogStartOffset
	if len(found.Batches) == 0 {
		return 0, nil
	}
	size := 0
	for _, bc := range found.Batches {
		size += int(bc.ByteLength)
	}
	out := make([]byte, 0, size)
	for _, bc := range found.Batches {
		data, err := b.reader.GetRange(ctx, bc.ObjectKey, bc.ObjectSize, bc.ByteOffset, int64(bc.ByteLength))
		if err == nil && len(data) != int(bc.ByteLength) {
			err = fmt.Errorf("got %d of %d bytes", len(data), bc.ByteLength)
		}
		if err != nil {
			if len(out) > 0 {
				break // answer what was read; the client fetches on from there
			}
			return 0, fmt.Errorf("read batch at offset %d from %s: %w", bc.BaseOffset, bc.ObjectKey, err)
		}
		start := len(out)
		out = append(out, data...)
		batch := out[start:]
		record.SetBaseOffset(batch, bc.BaseOffset)
		record.SetPartitionLeaderEpoch(batch, leaderEpoch)
		if bc.LogAppendTime {
			record.SetLogAppendTime(batch, bc.MaxTimestamp)
		}
	}
	sp.RecordBatches = out
	b.metrics.bytesOut.Add(ctx, int64(len(out)))
	return len(out), nil
}
