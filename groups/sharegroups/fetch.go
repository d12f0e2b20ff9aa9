package sharegroups

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
)

// The ShareFetch path (docs/design/share-groups.md): one ShareAcquire per
// ShareFetch or ShareAcknowledge, whatever broker serves it.
//
//	ShareAcquire ─▶ group.mu: acks (all or nothing per partition)
//	             ─▶ FindBatches from the first acquirable offset (in-process)
//	             ─▶ Acquire up to the bound (HW, or LSO under read_committed)
//	             ─▶ one batch through the log, started under group.mu and
//	                waited for after it (writes of the group synced together)
//	             ◀─ acquired ranges, their BatchCoords, partition state
//	nothing acquired ─▶ held without a lock until a commit notice, a
//	                    release, an expiry or MaxWait, then acquire again
//
// The broker reads the record bytes itself, as it does for Fetch.

// maxShareWait bounds how long a ShareAcquire may be held, whatever the
// client asks (as Fetch's maxFetchWait).
const maxShareWait = 30 * time.Second

// BatchFinder finds a partition's batches, as the batch coordinator does;
// *coordinator.Coordinator implements it. Share groups acquire records
// through it (Options.Partitions).
type BatchFinder interface {
	FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error)
}

// CommitSubscriber announces committed batches; *coordinator.Coordinator
// implements it. A held ShareAcquire wakes on its partitions' commits.
type CommitSubscriber interface {
	Subscribe(fn func([]coordapi.CommitNotice)) (cancel func())
}

// waiters are the held ShareAcquires, by partition: commits, releases
// and expiries on a partition wake them (whatever their group: a spurious
// wake costs one more look).
type waiters struct {
	mu sync.Mutex
	m  map[tp]map[chan struct{}]struct{}
}

// register makes ch receive a wake for any of tps until the returned func
// is called.
func (w *waiters) register(tps []tp, ch chan struct{}) func() {
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[tp]map[chan struct{}]struct{})
	}
	for _, t := range tps {
		if w.m[t] == nil {
			w.m[t] = make(map[chan struct{}]struct{})
		}
		w.m[t][ch] = struct{}{}
	}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		for _, t := range tps {
			delete(w.m[t], ch)
			if len(w.m[t]) == 0 {
				delete(w.m, t)
			}
		}
		w.mu.Unlock()
	}
}

// wake wakes the waiters of every partition in tps.
func (w *waiters) wake(tps ...tp) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range tps {
		for ch := range w.m[t] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// notify wakes the waiters of the partitions a commit notice names.
func (w *waiters) notify(ns []coordapi.CommitNotice) {
	tps := make([]tp, len(ns))
	for i, n := range ns {
		tps[i] = tp{topicID(n.TopicID), n.Partition}
	}
	w.wake(tps...)
}

// ShareAcquire serves one ShareFetch or ShareAcknowledge of a share group
// member (see coordapi.ShareAcquireRequest): for each partition it applies
// the acknowledgements, all or nothing, then acquires records for the
// member under a lock of the group's share.record.lock.duration.ms, from
// the available (released or expired) records on, then new ones up to the
// high watermark (the last stable offset under share.isolation.level
// read_committed), within MaxRecords over the call and the partition's
// record lock window. Everything the call changed is written in one batch
// before it answers. When nothing could be acquired and no acknowledgement
// failed, it waits up to MaxWaitMs for records to be committed, released
// or to expire, and tries again; it gives up, acquiring nothing, once a
// ShareRelease of the member through req.Via came meanwhile (the broker's
// session ended, and nobody would deliver the records). A partition whose
// share-partition was never started (no member was ever assigned it)
// acquires nothing; an acknowledgement there is INVALID_RECORD_STATE.
//
// An error means the call could not be answered (the coordinator is
// closed or could not write its state); acknowledgements may then have
// been applied but not answered, and records acquired but not handed out
// come back when their lock expires.
func (c *Coordinator) ShareAcquire(ctx context.Context, req coordapi.ShareAcquireRequest) (coordapi.ShareAcquireResponse, error) {
	var gen uint64
	resp, got, err := c.shareAcquireOnce(ctx, &req, true, &gen)
	if err != nil || got || req.MaxWaitMs <= 0 || req.Renew {
		return resp, err
	}
	var tps []tp
	for i, p := range req.Partitions {
		if !p.Fetch {
			continue
		}
		r := &resp.Partitions[i]
		if r.AckErrorCode != 0 || r.ErrorCode != 0 {
			return resp, nil // answer the failure at once
		}
		tps = append(tps, tp{topicID(p.Topic), p.Partition})
		if data, _, err := c.shareDataOf(ctx, topicID(p.Topic)); err == nil && data != topicID(p.Topic) {
			// A view's records are committed to its base partition.
			tps = append(tps, tp{data, p.Partition})
		}
	}
	if len(tps) == 0 {
		return resp, nil
	}
	wait := min(time.Duration(req.MaxWaitMs)*time.Millisecond, maxShareWait)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	wake := make(chan struct{}, 1)
	defer c.wait.register(tps, wake)()
	for {
		// Registered before looking again, so that no wake slips between
		// the look and the wait.
		if ctx.Err() != nil {
			return resp, nil // the caller left: acquire nothing for it
		}
		again, got, err := c.shareAcquireOnce(ctx, &req, false, &gen)
		if errors.Is(err, errShareReleased) {
			return resp, nil // the broker gave up on this call
		}
		if err != nil {
			return resp, err
		}
		for i := range again.Partitions {
			// The acknowledgements' outcome is the first pass's.
			again.Partitions[i].AckErrorCode = resp.Partitions[i].AckErrorCode
			again.Partitions[i].AckErrorMessage = resp.Partitions[i].AckErrorMessage
		}
		resp = again
		if got {
			return resp, nil
		}
		select {
		case <-wake:
		case <-timer.C:
			return resp, nil
		case <-ctx.Done():
			return resp, nil
		case <-c.opts.Done:
			return resp, nil
		}
	}
}

// errShareReleased ends a held ShareAcquire whose member's records were
// released through its broker since it began: the broker's session ended
// (closed, or its connection dropped), and nobody would deliver what it
// acquired.
var errShareReleased = errors.New("sharegroups: the member's records were released through its broker")

// shareAcquireOnce is one pass of ShareAcquire (shareAcquirePass), then
// the wait for its write, made without the group's lock: the group's other
// acquisitions go on meanwhile, and their writes are synced together
// instead of one after the other under the lock.
func (c *Coordinator) shareAcquireOnce(ctx context.Context, req *coordapi.ShareAcquireRequest, withAcks bool, gen *uint64) (coordapi.ShareAcquireResponse, bool, error) {
	resp, got, wait, err := c.shareAcquirePass(ctx, req, withAcks, gen)
	if err != nil {
		return resp, got, err
	}
	if werr := wait(); werr != nil {
		c.log.Error("persist share acquisitions", "group", req.Group, "err", werr)
		return resp, false, &coordapi.KafkaError{Code: kerr.CoordinatorNotAvailable, Message: "the share group state could not be written"}
	}
	return resp, got, nil
}

// shareAcquirePass is one pass of ShareAcquire: the acknowledgements when
// withAcks, then the acquisition. got reports that some partition acquired
// records or failed. The first pass (withAcks) notes in gen how many
// releases of the member through req.Via were made; a later pass after
// another one acquires nothing and returns errShareReleased. The pass's
// write is started under the group's lock, in the order of the group's
// changes; wait returns once it is durable, and the answer must not leave
// before.
func (c *Coordinator) shareAcquirePass(ctx context.Context, req *coordapi.ShareAcquireRequest, withAcks bool, gen *uint64) (resp coordapi.ShareAcquireResponse, got bool, wait func() error, err error) {
	wait = noWait
	if !c.host.Enter() {
		return resp, false, wait, ErrClosed
	}
	defer c.host.Leave()
	gc := c.host.Config(req.Group)
	cfg, readCommitted := gc.Partition, gc.ReadCommitted
	resp.LockDurationMs = int32(cfg.LockDuration.Milliseconds())
	resp.Partitions = make([]coordapi.ShareAcquired, len(req.Partitions))
	for i, p := range req.Partitions {
		r := &resp.Partitions[i]
		r.Topic, r.Partition = p.Topic, p.Partition
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = -1, -1, -1
	}
	g, _ := c.lockGroup(req.Group, false)
	if g == nil || g.s == nil {
		if g != nil {
			g.Unlock()
		}
		for i, p := range req.Partitions {
			if withAcks && len(p.Acks) > 0 {
				resp.Partitions[i].AckErrorCode = kerr.InvalidRecordState.Code
				resp.Partitions[i].AckErrorMessage = "no record in flight"
			}
		}
		return resp, false, wait, nil
	}
	defer g.Unlock()
	s := g.s
	if n := s.releases[releaseKey(req.Member, req.Via)]; withAcks {
		*gen = n
	} else if n != *gen {
		return resp, false, wait, errShareReleased
	}
	nowMs := msOf(c.now())
	var woken []tp
	note := func(t tp, res share.Result) {
		s.countLocked(t, res.Stats)
		s.partRows = append(s.partRows, res.Rows...)
		if res.Wake {
			woken = append(woken, t)
		}
	}
	remaining := int(req.MaxRecords)
	budget := int(req.MaxBytes)
	if budget <= 0 {
		budget = 50 << 20
	}
	nFetch := 0
	for _, p := range req.Partitions {
		if p.Fetch {
			nFetch++
		}
	}
	for i, pp := range req.Partitions {
		r := &resp.Partitions[i]
		t := tp{topicID(pp.Topic), pp.Partition}
		part := s.parts[t.id][t.p]
		if withAcks && len(pp.Acks) > 0 && internalAcks(pp.Acks) {
			// A broker's own (read_committed's aborted records, bytes it
			// could not read): applied offset by offset, never failing.
			if part != nil {
				note(t, part.ApplyInternal(req.Member, req.Via, ackBatches(pp.Acks)))
			}
		} else if withAcks && len(pp.Acks) > 0 {
			if part == nil {
				r.AckErrorCode, r.AckErrorMessage = kerr.InvalidRecordState.Code, "no record in flight"
			} else {
				res, aerr := part.Acknowledge(req.Member, req.Via, nowMs, ackBatches(pp.Acks))
				if aerr != nil {
					r.AckErrorCode, r.AckErrorMessage = ackErrorCode(aerr), aerr.Error()
					got = true
				} else {
					note(t, res)
				}
			}
		}
		if pp.Fetch && !req.Renew && part == nil {
			if serr := s.startErr[t]; serr != nil {
				// Its share-partition could not be started: say why rather
				// than answer nothing for ever.
				r.ErrorCode = errorCodeOf(serr)
				got = true
			}
			continue
		}
		if !pp.Fetch || req.Renew || remaining <= 0 {
			continue
		}
		res, acq := g.shareAcquirePartitionLocked(ctx, part, t, req, remaining, max(budget/nFetch, 1), readCommitted, nowMs, note)
		*r = mergeAcquired(*r, acq)
		if r.ErrorCode != 0 {
			got = true
			continue
		}
		for _, a := range res {
			remaining -= int(a.Last - a.First + 1)
		}
		if len(res) > 0 {
			got = true
		}
	}
	if len(s.partRows) > 0 {
		w, perr := g.persistShareStartLocked()
		if perr != nil {
			c.log.Error("persist share acquisitions", "group", req.Group, "err", perr)
			// The rows stay queued for the group's next write; records
			// acquired here come back when their lock expires.
			return resp, false, noWait, &coordapi.KafkaError{Code: kerr.CoordinatorNotAvailable, Message: "the share group state could not be written"}
		}
		wait = w
	}
	for _, pp := range req.Partitions {
		t := tp{topicID(pp.Topic), pp.Partition}
		if p := s.parts[t.id][t.p]; p != nil {
			g.armLocksLocked(t, p)
		}
	}
	if len(woken) > 0 {
		c.wait.wake(woken...)
	}
	return resp, got, wait, nil
}

// mergeAcquired returns r with acq's fetch answer (everything but the
// acknowledgements' outcome).
func mergeAcquired(r, acq coordapi.ShareAcquired) coordapi.ShareAcquired {
	acq.Topic, acq.Partition = r.Topic, r.Partition
	acq.AckErrorCode, acq.AckErrorMessage = r.AckErrorCode, r.AckErrorMessage
	return acq
}

// shareAcquirePartitionLocked acquires up to maxRecords records of part for
// req.Member: it finds the batches from the first acquirable offset on
// (up to maxBytes of them), archives what the log start passed, and
// acquires up to the bound, within the batches found. It returns the
// ranges acquired and the partition's answer; the rows go to note.
func (g *group) shareAcquirePartitionLocked(ctx context.Context, part *share.Partition, t tp, req *coordapi.ShareAcquireRequest,
	maxRecords, maxBytes int, readCommitted bool, nowMs int64, note func(tp, share.Result)) ([]share.AcquiredRecords, coordapi.ShareAcquired) {
	var out coordapi.ShareAcquired
	out.HighWatermark, out.LastStableOffset, out.LogStartOffset = -1, -1, -1
	pr := g.c.opts.Partitions
	finder, ok := pr.(BatchFinder)
	if !ok {
		return nil, out // no batches to read: nothing to acquire
	}
	// A view's records are its base partition's (views.go).
	data, key, derr := g.c.shareDataOf(ctx, t.id)
	if derr != nil {
		out.ErrorCode = errorCodeOf(derr)
		return nil, out
	}
	if kf, ok := pr.(KeyBatchFinder); ok && key != nil {
		if acquired, kout, posted := g.shareAcquireKeyLocked(ctx, kf, part, t, data, key, req, maxRecords, maxBytes, readCommitted, nowMs, note); posted {
			return acquired, kout
		}
		// No postings (being built): the base's batches, every key's, cut
		// to the view's by the broker.
	}
	find := func() (coordapi.FindBatchesResponse, error) {
		return finder.FindBatches(ctx, coordapi.FindBatchesRequest{
			TopicID: coordapi.TopicID(data), Partition: t.p, Offset: part.NextOffset(),
			MaxBytes: int32(min(maxBytes, 1<<31-1)), ReadCommitted: readCommitted,
		})
	}
	found, err := find()
	if errors.Is(err, kerr.OffsetOutOfRange) {
		// Below the log start (retention, DeleteRecords), or past the
		// high watermark (a partition recreated smaller): archive what the
		// log start passed and look again.
		st, serr := pr.PartitionState(ctx, coordapi.TopicID(data), t.p)
		if serr != nil {
			out.ErrorCode = errorCodeOf(serr)
			return nil, out
		}
		out.PartitionState = st
		if st.LogStartOffset <= part.Start() {
			return nil, out // past the high watermark: nothing yet
		}
		note(t, part.AdvanceLogStart(st.LogStartOffset))
		found, err = find()
	}
	if err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) {
			return nil, out
		}
		out.ErrorCode = errorCodeOf(err)
		return nil, out
	}
	out.PartitionState = found.PartitionState
	if found.LogStartOffset > part.Start() {
		note(t, part.AdvanceLogStart(found.LogStartOffset))
	}
	if len(found.Batches) == 0 {
		return nil, out
	}
	bound := found.HighWatermark
	if readCommitted && found.LastStableOffset >= 0 && found.LastStableOffset < bound {
		bound = found.LastStableOffset
	}
	bound = min(bound, found.Batches[len(found.Batches)-1].LastOffset+1)
	ar := share.AcquireRequest{Member: req.Member, Via: req.Via, NowMs: nowMs, MaxRecords: maxRecords, Bound: bound}
	if req.Mode != coordapi.ShareAcquireRecordLimit {
		batches := found.Batches
		ar.BatchLast = func(o int64) int64 {
			for _, b := range batches {
				if b.BaseOffset <= o && o <= b.LastOffset {
					if b.Segment {
						return o // a segment's batches are not known here
					}
					return b.LastOffset
				}
			}
			return o
		}
	}
	res := part.Acquire(ar)
	note(t, res)
	if len(res.Acquired) == 0 {
		return nil, out
	}
	for _, a := range res.Acquired {
		out.Acquired = append(out.Acquired, coordapi.ShareAcquiredRecords{First: a.First, Last: a.Last, DeliveryCount: a.DeliveryCount})
	}
	if req.Mode == coordapi.ShareAcquireBatchOptimized && req.BatchSize > 0 {
		out.Acquired = splitAcquired(out.Acquired, int64(req.BatchSize))
	}
	out.Batches = batchesHolding(found.Batches, res.Acquired)
	if readCommitted {
		out.Aborted = found.Aborted
	}
	return res.Acquired, out
}

// splitAcquired cuts the acquired runs into runs of at most size records:
// ShareFetch's BatchSize, the acquisition batches the client acknowledges
// by (KIP-1206's batch_optimized mode).
func splitAcquired(as []coordapi.ShareAcquiredRecords, size int64) []coordapi.ShareAcquiredRecords {
	var out []coordapi.ShareAcquiredRecords
	for _, a := range as {
		for first := a.First; first <= a.Last; first += size {
			out = append(out, coordapi.ShareAcquiredRecords{First: first, Last: min(first+size-1, a.Last), DeliveryCount: a.DeliveryCount})
		}
	}
	return out
}

// batchesHolding returns the batches that hold some of the acquired
// records (both ascending).
func batchesHolding(batches []coordapi.BatchCoord, acquired []share.AcquiredRecords) []coordapi.BatchCoord {
	var out []coordapi.BatchCoord
	j := 0
	for _, b := range batches {
		for j < len(acquired) && acquired[j].Last < b.BaseOffset {
			j++
		}
		if j == len(acquired) {
			break
		}
		if acquired[j].First <= b.LastOffset {
			out = append(out, b)
		}
	}
	return out
}

// ackBatches converts acknowledgement batches to package share's.
func ackBatches(acks []coordapi.ShareAckBatch) []share.AckBatch {
	out := make([]share.AckBatch, len(acks))
	for i, a := range acks {
		types := make([]share.AckType, len(a.Types))
		for j, t := range a.Types {
			types[j] = share.AckType(t)
		}
		out[i] = share.AckBatch{First: a.First, Last: a.Last, Types: types}
	}
	return out
}

// internalAcks reports whether acks are a broker's internal ones
// (coordapi.ShareAckArchiveAborted, ShareAckReturnUnread) alone. A client's
// never are: brokers refuse those types on the wire, and a mix is applied
// as a client's, which refuses them.
func internalAcks(acks []coordapi.ShareAckBatch) bool {
	for _, a := range acks {
		for _, t := range a.Types {
			if !share.AckType(t).Internal() {
				return false
			}
		}
	}
	return true
}

// ackErrorCode is the Kafka code of an acknowledgement error.
func ackErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.InvalidRecordState.Code
}

// errorCodeOf is the Kafka code of a partition read's error:
// KAFKA_STORAGE_ERROR (retriable) unless it names one.
func errorCodeOf(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.KafkaStorageError.Code
}

// ShareRelease makes the records req.Member acquired through broker
// req.Via available again (their delivery count kept, archived at the
// limit, as Kafka 4.4's releaseAcquiredRecords), on req.Partitions or,
// when nil, every share-partition of the group: the member's share session
// on that broker closed, its connection dropped, or it forgot those
// partitions. Held acquires of the partitions wake.
func (c *Coordinator) ShareRelease(ctx context.Context, req coordapi.ShareReleaseRequest) error {
	if !c.host.Enter() {
		return ErrClosed
	}
	defer c.host.Leave()
	g, _ := c.lockGroup(req.Group, false)
	if g == nil {
		return nil
	}
	defer g.Unlock()
	s := g.s
	if s == nil {
		return nil
	}
	if s.releases == nil {
		s.releases = make(map[string]uint64)
	}
	s.releases[releaseKey(req.Member, req.Via)]++
	var woken []tp
	release := func(t tp, p *share.Partition) {
		res := p.ReleaseMember(req.Member, req.Via)
		s.countLocked(t, res.Stats)
		s.partRows = append(s.partRows, res.Rows...)
		if res.Wake {
			woken = append(woken, t)
		}
	}
	if req.Partitions == nil {
		for id, ps := range s.parts {
			for n, p := range ps {
				release(tp{id, n}, p)
			}
		}
	} else {
		for _, x := range req.Partitions {
			if p := s.parts[topicID(x.TopicID)][x.Partition]; p != nil {
				release(tp{topicID(x.TopicID), x.Partition}, p)
			}
		}
	}
	if len(s.partRows) > 0 {
		if err := g.persistShareLocked(); err != nil {
			c.log.Error("persist share release", "group", req.Group, "err", err)
			return &coordapi.KafkaError{Code: kerr.CoordinatorNotAvailable, Message: "the share group state could not be written"}
		}
	}
	if len(woken) > 0 {
		c.wait.wake(woken...)
	}
	return nil
}
