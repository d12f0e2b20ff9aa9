package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"

	"github.com/floe-io/floe/broker/fetchread"
	"github.com/floe-io/floe/coordapi"
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
		if req.Version >= 11 && req.Rack != "" {
			r.conn.zone.set(req.Rack) // client.rack (KIP-392)
		}
	}
	zone := r.clientZone()
	if local, ok := b.redirectZone(req, zone); ok {
		// The consumer moves to its zone's broker: answer the offsets and
		// the preferred replicas, and read no record bytes.
		resp, _, _, _ := b.fetchOnce(ctx, r, req, rotate, true)
		b.setPreferredReplicas(ctx, req, resp, local)
		return resp, nil
	}
	for {
		// An answer not sent (the loop fetches again) gives its buffers
		// back; the write loop gives back those of the one sent.
		b.releaseBufs(r)
		resp, n, tps, stop := b.fetchOnce(ctx, r, req, rotate, false)
		if stop || n >= int(req.MinBytes) || n > 0 && req.MinBytes <= 0 || wait <= 0 || !time.Now().Before(deadline) {
			b.zoneMetrics.add(ctx, false, zone, int64(n))
			return resp, nil
		}
		if wake == nil {
			// Register before fetching again so that no commit slips
			// between the read and the wait.
			wake = make(chan struct{}, 1)
			unregister = b.reads.Register(tps, wake)
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
			b.releaseBufs(r)
			return nil, ctx.Err()
		}
	}
}

// releaseBufs gives r's answer buffers back to the pool, for an answer that
// will not be sent.
func (b *Broker) releaseBufs(r *request) {
	for _, buf := range r.bufs {
		b.bufs.Put(buf)
	}
	r.bufs = nil
}

// fetchTopic returns the topic a Fetch names: by id from v13 on, else by
// name.
func (b *Broker) fetchTopic(ctx context.Context, version int16, name string, id [16]byte) (coordapi.Topic, error) {
	if version >= 13 {
		return b.topics.ByID(ctx, coordapi.TopicID(id))
	}
	return b.topics.ByName(ctx, name)
}

// fetchOnce reads what is there now. It returns the response, the bytes of
// records in it, the partitions asked for, and whether the fetch must answer
// at once (an error on some partition).
//
// The byte budget is shared fairly: partitions are filled starting at a
// position that rotates from one fetch of the connection to the next, so
// that a busy partition early in the request cannot starve the later ones;
// the response keeps request order. The read path (fetchread) plans what
// each partition reads within the budget (Reader.Plan: coordinates, then
// the plan), then reads every planned byte range at once, up to
// Options.FetchConcurrency reads in flight, and patches each batch for the
// wire (Reader.Read).
//
// With offsetsOnly it stops after the coordinates (Reader.Offsets): each
// partition gets its offsets or its error, and no record bytes are read. A
// topic r's principal may not READ answers TOPIC_AUTHORIZATION_FAILED (by
// name, whether it exists or not, as Kafka; by id, once the id is known).
func (b *Broker) fetchOnce(ctx context.Context, r *request, req *kmsg.FetchRequest, rotate int, offsetsOnly bool) (*kmsg.FetchResponse, int, []fetchread.TopicPartition, bool) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	budget := int(req.MaxBytes)
	if budget <= 0 {
		budget = 50 << 20
	}
	var (
		tps  []fetchread.TopicPartition
		todo []*fetchread.Part
		stop bool
	)
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := &resp.Topics[ti]
		*st = kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t, terr := b.fetchTopic(ctx, req.Version, rt.Topic, rt.TopicID)
		if name := rt.Topic; req.Version < 13 || terr == nil {
			if req.Version >= 13 {
				name = t.Name
			}
			if !b.authorizedTopic(r, kmsg.ACLOperationRead, name) {
				terr = kerr.TopicAuthorizationFailed
			}
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
				// read_committed: the aborted transactions of the range
				// (fetchread's plan); Kafka sends null only under
				// read_uncommitted.
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
			switch {
			case terr != nil:
				sp.ErrorCode = coordapi.ErrorCode(terr)
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
				tp := fetchread.TopicPartition{Topic: dataID(t), Partition: rp.Partition} // a view reads its base's batches
				tps = append(tps, tp)
				pf := &fetchread.Part{TopicPartition: tp, Offset: rp.FetchOffset, MaxBytes: int(rp.PartitionMaxBytes), Resp: sp, ReadCommitted: req.IsolationLevel == 1}
				if t.View != nil {
					pf.ViewKey = t.View.Key
				}
				todo = append(todo, pf)
			}
		}
	}
	if len(todo) == 0 {
		return resp, 0, tps, stop
	}
	// Fill order: the request's, rotated.
	parts := make([]*fetchread.Part, len(todo))
	for i := range todo {
		parts[i] = todo[(i+rotate)%len(todo)]
	}
	if offsetsOnly {
		stop = b.reads.Offsets(ctx, parts, budget) || stop
		return resp, 0, tps, stop
	}
	if b.reads.Plan(ctx, parts, budget) {
		stop = true
	}
	rctx, span := b.childSpan(ctx, r, "fetch.read")
	n, failed := b.reads.Read(rctx, parts, &r.bufs)
	if n > 0 {
		b.metrics.bytesOut.Add(rctx, int64(n))
	}
	if span != nil {
		span.SetAttributes(attribute.Int("floe.bytes", n), attribute.Bool("floe.failed", failed))
		span.End()
	}
	return resp, n, tps, stop || failed
}
