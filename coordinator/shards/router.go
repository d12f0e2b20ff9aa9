// Package shards is the broker's side of a sharded coordinator
// (docs/design/coordinator-shards.md): a Router that serves the batch
// coordinator's API (coordapi.Coordinator) over N coordinator shards,
// sending each call about a partition to the shard that owns it
// (coordapi.ShardOf), splitting the calls that span partitions, and
// everything cluster-wide (topics, producer ids, transactions, users,
// ACLs, the broker registry) to shard 0. It depends on the API only: a
// shard is any coordapi.Coordinator, the rpc client of a remote shard or
// an in-process coordinator in tests.
//
// Transactions are shard 0's (its transaction coordinator): it writes
// their markers on the shards that own their partitions, which ask it for
// a producer's view before they take its transactional batches.
//
// The shard count is followed (Follow): when shard 0's cluster_info says
// the cluster grew (coordinator.Grow), the router routes over the new
// count from then on and subscribes to the new shards' commit notices.
package shards

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// Router is a coordapi.Coordinator over shards. Methods it does not define
// are shard 0's, through the embedded Coordinator: cluster-wide state lives
// there (TestRouterRoutesEveryMethod lists which methods are which, so that
// a method added to the API is classified, not silently sent to shard 0).
type Router struct {
	coordapi.Coordinator // shard 0
	// shards are the shards routed over, shard i at index i: replaced
	// by a longer list when the cluster grows (Grow, Follow).
	shards atomic.Pointer[[]coordapi.Coordinator]
	// next spreads tier job claims over the shards.
	next atomic.Uint32
	// subs are the commit notice subscriptions, each also made on the
	// shards the cluster grows by.
	subs struct {
		sync.Mutex
		next int
		fns  map[int]*subscription
	}
	// refresh wakes Follow: a commit was refused as another shard's.
	refresh chan struct{}
}

// subscription is one Subscribe: its function and its cancels, one a
// shard.
type subscription struct {
	fn      func([]coordapi.CommitNotice)
	cancels []func()
}

// New returns a router over shards, shard i at index i. With one shard it
// routes everything to it, as a coordinator without shards.
func New(shards []coordapi.Coordinator) (*Router, error) {
	if len(shards) == 0 {
		return nil, errors.New("shards: no shard")
	}
	r := &Router{Coordinator: shards[0], refresh: make(chan struct{}, 1)}
	list := slices.Clone(shards)
	r.shards.Store(&list)
	r.subs.fns = map[int]*subscription{}
	return r, nil
}

// list returns the shards routed over now.
func (r *Router) list() []coordapi.Coordinator { return *r.shards.Load() }

// Shards returns how many shards the router routes over.
func (r *Router) Shards() int { return len(r.list()) }

// Grow routes over more shards from now on: shards is the grown
// cluster's, whose first ones must be those routed over now. Commit
// notices subscribed to are subscribed to on the new shards too.
func (r *Router) Grow(shards []coordapi.Coordinator) error {
	r.subs.Lock()
	defer r.subs.Unlock()
	cur := r.list()
	if len(shards) <= len(cur) {
		return nil
	}
	for i := range cur {
		if shards[i] != cur[i] {
			return fmt.Errorf("shards: growing to %d shards, shard %d is not the one routed over", len(shards), i)
		}
	}
	list := slices.Clone(shards)
	for _, sub := range r.subs.fns {
		for _, sh := range list[len(cur):] {
			sub.cancels = append(sub.cancels, sh.Subscribe(sub.fn))
		}
	}
	r.shards.Store(&list)
	return nil
}

// Follow keeps the router's shards the cluster's until ctx ends: every
// interval, and at once after a commit refused as another shard's, it
// asks info (shard 0's cluster_info) for the cluster's shard count and,
// when it grew, routes over it, dial giving the new shards.
func (r *Router) Follow(ctx context.Context, interval time.Duration, info func(context.Context) (coordapi.ClusterInfo, error),
	dial func(shard int) coordapi.Coordinator, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if ci, err := info(ctx); err != nil {
			if ctx.Err() == nil {
				log.Debug("shards: ask the cluster's shard count", "err", err)
			}
		} else if cur := r.list(); ci.Shards > len(cur) {
			grown := slices.Clone(cur)
			for i := len(cur); i < ci.Shards; i++ {
				grown = append(grown, dial(i))
			}
			if err := r.Grow(grown); err != nil {
				log.Warn("shards: route over the grown cluster", "err", err)
			} else {
				log.Info("shards: the cluster grew; routing over it", "shards", ci.Shards, "from", len(cur), "map_version", ci.MapVersion)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.refresh:
		}
	}
}

// poke wakes Follow.
func (r *Router) poke() {
	select {
	case r.refresh <- struct{}{}:
	default:
	}
}

// of returns the shard that owns a partition.
func (r *Router) of(id coordapi.TopicID, partition int32) coordapi.Coordinator {
	shards := r.list()
	return shards[coordapi.ShardOf(id, partition, len(shards))]
}

// CommitObject commits an object's batches on the shards that own their
// partitions: one sub-commit a shard, sent at once, each atomic on its
// shard, the results put back in request order. A shard that fails fails
// only its own batches, with the code the broker would answer for a failed
// commit (the error's retriable Kafka code, REQUEST_TIMED_OUT, or
// KAFKA_STORAGE_ERROR), as Kafka answers each partition of a Produce from
// its own leader; the others stand, so that a batch committed is never
// answered as failed (a producer without idempotence would write it
// twice). A request whose shape is wrong (which a correct broker never
// sends) is therefore refused batch by batch, by the shards its bad
// batches go to, not as a whole as one coordinator refuses it.
//
// A batch refused as another shard's (NOT_LEADER_OR_FOLLOWER: its
// partition is moving, or moved with a growth this router does not route
// by yet) wakes Follow, so that the producer's retry finds the new shard.
func (r *Router) CommitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	resp, err := r.commitObject(ctx, req)
	if err == nil {
		for _, res := range resp.Results {
			if res.ErrorCode == kerr.NotLeaderForPartition.Code {
				r.poke()
				break
			}
		}
	}
	return resp, err
}

func (r *Router) commitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	shards := r.list()
	n := len(shards)
	if n == 1 {
		return shards[0].CommitObject(ctx, req)
	}
	if req.Inline != nil {
		return nil, coordapi.Errorf(kerr.InvalidRequest, "inline objects are not committed to a sharded coordinator")
	}
	idx := make([][]int, n) // idx[s]: the request's batches shard s owns
	touched := 0
	for i := range req.Batches {
		s := coordapi.ShardOf(req.Batches[i].TopicID, req.Batches[i].Partition, n)
		if idx[s] == nil {
			touched++
		}
		idx[s] = append(idx[s], i)
	}
	if touched == 1 {
		for s := range idx {
			if idx[s] != nil {
				return shards[s].CommitObject(ctx, req)
			}
		}
	}
	resp := &coordapi.CommitResponse{Results: make([]coordapi.BatchResult, len(req.Batches))}
	var wg sync.WaitGroup
	for s, batches := range idx {
		if batches == nil {
			continue
		}
		sub := *req
		sub.Batches = make([]coordapi.CommitBatch, len(batches))
		for j, i := range batches {
			sub.Batches[j] = req.Batches[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := shards[s].CommitObject(ctx, &sub)
			if err == nil && len(got.Results) != len(batches) {
				err = fmt.Errorf("shard %d answered %d results for %d batches", s, len(got.Results), len(batches))
			}
			if err != nil {
				code := failedCode(err)
				for _, i := range batches {
					resp.Results[i] = coordapi.BatchResult{ErrorCode: code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
				}
				return
			}
			for j, i := range batches {
				resp.Results[i] = got.Results[j]
			}
		}()
	}
	wg.Wait()
	return resp, nil
}

// failedCode is the code the batches of a failed sub-commit are answered
// with: what the broker answers a failed commit (ingest's commit).
func failedCode(err error) int16 {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke) && ke.Retriable:
		return ke.Code
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	default:
		return kerr.KafkaStorageError.Code
	}
}

// FindBatches asks the partition's shard.
func (r *Router) FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	return r.of(req.TopicID, req.Partition).FindBatches(ctx, req)
}

// FindBatchesMulti splits the requests by shard, asks the shards at once,
// and answers in request order. A shard that fails fails only its own
// partitions, each with the code a failed commit gets (failedCode), so
// that one shard's failover does not fail every fetch; the call fails, as
// the API says (no partition answered), only when every shard asked did.
func (r *Router) FindBatchesMulti(ctx context.Context, reqs []coordapi.FindBatchesRequest) ([]coordapi.FindBatchesResult, error) {
	shards := r.list()
	n := len(shards)
	if n == 1 {
		return shards[0].FindBatchesMulti(ctx, reqs)
	}
	idx := make([][]int, n)
	for i := range reqs {
		s := coordapi.ShardOf(reqs[i].TopicID, reqs[i].Partition, n)
		idx[s] = append(idx[s], i)
	}
	out := make([]coordapi.FindBatchesResult, len(reqs))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for s, is := range idx {
		if is == nil {
			continue
		}
		sub := make([]coordapi.FindBatchesRequest, len(is))
		for j, i := range is {
			sub[j] = reqs[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := shards[s].FindBatchesMulti(ctx, sub)
			if err == nil && len(got) != len(is) {
				err = fmt.Errorf("shard %d answered %d results for %d partitions", s, len(got), len(is))
			}
			if err != nil {
				errs[s] = fmt.Errorf("shard %d: %w", s, err)
				return
			}
			for j, i := range is {
				out[i] = got[j]
			}
		}()
	}
	wg.Wait()
	failed, asked := 0, 0
	for s, is := range idx {
		if is == nil {
			continue
		}
		asked++
		if errs[s] == nil {
			continue
		}
		failed++
		code := failedCode(errs[s])
		for _, i := range is {
			out[i] = coordapi.FindBatchesResult{ErrorCode: code}
		}
	}
	if failed == asked && failed > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// PartitionState asks the partition's shard.
func (r *Router) PartitionState(ctx context.Context, id coordapi.TopicID, partition int32) (coordapi.PartitionState, error) {
	return r.of(id, partition).PartitionState(ctx, id, partition)
}

// ListOffset asks the partition's shard.
func (r *Router) ListOffset(ctx context.Context, id coordapi.TopicID, partition int32, timestamp int64) (offset, ts int64, err error) {
	return r.of(id, partition).ListOffset(ctx, id, partition, timestamp)
}

// DeleteRecords asks the partition's shard.
func (r *Router) DeleteRecords(ctx context.Context, id coordapi.TopicID, partition int32, offset int64) (int64, error) {
	return r.of(id, partition).DeleteRecords(ctx, id, partition, offset)
}

// DescribeProducers asks the partition's shard: idempotence state is kept
// with the partition.
func (r *Router) DescribeProducers(ctx context.Context, id coordapi.TopicID, partition int32) ([]coordapi.ProducerDescription, error) {
	return r.of(id, partition).DescribeProducers(ctx, id, partition)
}

// Subscribe subscribes to every shard's commit notices, those the
// cluster grows by included.
func (r *Router) Subscribe(fn func([]coordapi.CommitNotice)) (cancel func()) {
	r.subs.Lock()
	defer r.subs.Unlock()
	sub := &subscription{fn: fn}
	for _, sh := range r.list() {
		sub.cancels = append(sub.cancels, sh.Subscribe(fn))
	}
	id := r.subs.next
	r.subs.next++
	r.subs.fns[id] = sub
	return func() {
		r.subs.Lock()
		defer r.subs.Unlock()
		if r.subs.fns[id] == nil {
			return
		}
		delete(r.subs.fns, id)
		for _, c := range sub.cancels {
			c()
		}
	}
}

// KvLookup asks the partition's shard.
func (r *Router) KvLookup(ctx context.Context, id coordapi.TopicID, partition int32, key []byte) (offset, hwm int64, found bool, err error) {
	return r.of(id, partition).KvLookup(ctx, id, partition, key)
}

// KvReady reports a topic's key index ready once every shard's part of it
// is.
func (r *Router) KvReady(ctx context.Context, id coordapi.TopicID) (bool, error) {
	shards := r.list()
	for s, sh := range shards {
		ok, err := sh.KvReady(ctx, id)
		if err != nil {
			return false, fmt.Errorf("shard %d: %w", s, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// KvGet asks the partition's shard.
func (r *Router) KvGet(ctx context.Context, req coordapi.KvGetRequest) (coordapi.KvGetResult, error) {
	return r.of(req.TopicID, req.Partition).KvGet(ctx, req)
}

// KvLatestOffsets asks the partition's shard.
func (r *Router) KvLatestOffsets(ctx context.Context, req coordapi.KvOffsetsRequest) ([]int64, error) {
	return r.of(req.TopicID, req.Partition).KvLatestOffsets(ctx, req)
}

// FindKeyBatches asks the partition's shard.
func (r *Router) FindKeyBatches(ctx context.Context, req coordapi.FindKeyBatchesRequest) (coordapi.FindKeyBatchesResponse, error) {
	return r.of(req.TopicID, req.Partition).FindKeyBatches(ctx, req)
}

// ClaimTierJob asks the shards in turn, from a different one each call,
// for a job; the job's id is the shard's times the shard count plus the
// shard, so that AbandonTierJob, which has only the id, finds its shard.
func (r *Router) ClaimTierJob(ctx context.Context, req coordapi.ClaimTierJobRequest) (coordapi.TierJob, bool, error) {
	shards := r.list()
	n := len(shards)
	if n == 1 {
		return shards[0].ClaimTierJob(ctx, req)
	}
	first := int(r.next.Add(1)) % n
	var errs []error
	for k := range n {
		s := (first + k) % n
		job, ok, err := shards[s].ClaimTierJob(ctx, req)
		if err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", s, err))
			continue
		}
		if ok {
			if job.ID > (math.MaxUint64-uint64(s))/uint64(n) {
				// A shard whose ids are not bounded for the count
				// (coordinator.initTier): give the job back.
				_ = shards[s].AbandonTierJob(ctx, job.ID, "job id too large to route")
				errs = append(errs, fmt.Errorf("shard %d: tier job id %d does not fit %d shards", s, job.ID, n))
				continue
			}
			job.ID = job.ID*uint64(n) + uint64(s)
			return job, true, nil
		}
	}
	return coordapi.TierJob{}, false, errors.Join(errs...)
}

// splitJobID splits a job id routed over n shards into its shard and the
// shard's id.
func splitJobID(id uint64, n int) (int, uint64) {
	return int(id % uint64(n)), id / uint64(n)
}

// CompleteTierJob reports the job to the shard that gave it.
func (r *Router) CompleteTierJob(ctx context.Context, req coordapi.CompleteTierJobRequest) error {
	shards := r.list()
	if len(shards) == 1 {
		return shards[0].CompleteTierJob(ctx, req)
	}
	s, id := splitJobID(req.JobID, len(shards))
	// A table job (Partition -1) covers the partitions of its shard.
	if want := coordapi.ShardOf(req.TopicID, req.Partition, len(shards)); s != want && req.Table == nil {
		return coordapi.Errorf(kerr.InvalidRequest, "tier job %d is shard %d's, its partition %s/%d shard %d's", req.JobID, s, req.TopicID, req.Partition, want)
	}
	req.JobID = id
	return shards[s].CompleteTierJob(ctx, req)
}

// AbandonTierJob gives the job back to the shard that gave it.
func (r *Router) AbandonTierJob(ctx context.Context, jobID uint64, reason string) error {
	shards := r.list()
	if len(shards) == 1 {
		return shards[0].AbandonTierJob(ctx, jobID, reason)
	}
	s, id := splitJobID(jobID, len(shards))
	return shards[s].AbandonTierJob(ctx, id, reason)
}
