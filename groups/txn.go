package groups

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactional offsets (KIP-98, KIP-447): a transactional producer that
// consumes too commits its offsets with TxnOffsetCommit, inside its
// transaction. They are written as the producer's pending offsets of the
// group and stay invisible to OffsetFetch until the transaction
// coordinator ends the transaction with CompleteTxnOffsets: a commit makes
// them the group's committed offsets, an abort drops them.
//
//	TxnOffsetCommit ──▶ pending (group, producer id) ──▶ CompleteTxnOffsets
//	                     'p' keys, synced                  commit: 'o' keys
//	                     OffsetFetch: not shown;           abort: dropped
//	                     RequireStable: UNSTABLE_OFFSET_COMMIT

// TxnVerifier checks a TxnOffsetCommit against the transaction
// coordinator before its offsets are written, as Kafka's group coordinator
// verifies a transactional write with the transaction coordinator
// (KIP-890): that req.TransactionalID's ongoing transaction is
// req.ProducerID's at req.ProducerEpoch and holds req.Group (added by
// AddOffsetsToTxn, or from v5 added by this request itself). It returns 0,
// or the Kafka error code every partition is answered with
// (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, INVALID_TXN_STATE,
// CONCURRENT_TRANSACTIONS...).
//
// It is called with the group's lock held (when the group exists; a
// refused request to a missing group writes nothing), so that a
// transaction cannot end between the check and the write: once the transaction coordinator
// no longer accepts the group's offsets (the transaction is preparing to
// end), a CompleteTxnOffsets that follows sees every pending offset the
// transaction wrote. The verifier must therefore not call back into
// Groups, and the transaction coordinator must not hold, while it calls
// CompleteTxnOffsets, a lock the verifier takes.
type TxnVerifier func(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) int16

// txnOffsets is one producer's pending offsets in a group.
type txnOffsets struct {
	// epoch is the highest producer epoch its TxnOffsetCommits carried.
	epoch   int16
	offsets map[string]map[int32]pendingRecord
}

func newTxnOffsets(epoch int16) *txnOffsets {
	return &txnOffsets{epoch: epoch, offsets: make(map[string]map[int32]pendingRecord)}
}

func (t *txnOffsets) put(topic string, partition int32, r pendingRecord) {
	ps := t.offsets[topic]
	if ps == nil {
		ps = make(map[int32]pendingRecord)
		t.offsets[topic] = ps
	}
	ps[partition] = r
	t.epoch = max(t.epoch, r.producerEpoch)
}

func (t *txnOffsets) remove(topic string, partition int32) {
	ps := t.offsets[topic]
	delete(ps, partition)
	if len(ps) == 0 {
		delete(t.offsets, topic)
	}
}

// TxnOffsetCommit serves TxnOffsetCommit (v0-v6): the offsets become
// pending offsets of the group for req.ProducerID, durable (a synced
// Pebble write) before the response, replacing the producer's pending
// offsets of the same partitions, and committed or dropped when
// CompleteTxnOffsets ends the transaction. As Kafka's group coordinator:
// a commit with generation -1 (every commit before v3) to a missing group
// creates a simple group; v3+ commits with a member id, generation and
// group.instance.id are fenced as OffsetCommit is (UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID, ILLEGAL_GENERATION; a KIP-848 member's stale epoch
// is ILLEGAL_GENERATION too), but neither a classic group's rebalance nor
// the lack of a member id refuses one. A generation commit to a missing
// group is ILLEGAL_GENERATION, GROUP_ID_NOT_FOUND from v6. The producer
// epoch may not go back (INVALID_PRODUCER_EPOCH), and Options.VerifyTxn,
// when set, is asked first.
//
// The caller answers partitions of unknown topics itself and may put each
// topic's id in TopicID below v6 (stored with the offsets, as
// OffsetCommit's); v6 names topics by id only, and ids this coordinator's
// topic list does not know are UNKNOWN_TOPIC_ID.
func (gs *Groups) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	names := make([]string, len(req.Topics))
	if req.Version >= 6 {
		snap, err := gs.topics(ctx)
		if err != nil {
			gs.log.Warn("txn offset commit: list topics", "group", req.Group, "err", err)
		}
		for i, t := range req.Topics {
			if snap != nil {
				names[i] = snap.byID[t.TopicID]
			}
		}
	} else {
		for i, t := range req.Topics {
			names[i] = t.Topic
		}
	}
	codes := gs.txnCommit(ctx, req, names)
	for i, t := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic, st.TopicID = t.Topic, t.TopicID
		for j, p := range t.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = p.Partition
			sp.ErrorCode = codes[i][j]
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// txnCommit writes req's pending offsets; names[i] is the name of
// req.Topics[i], "" for an unknown topic id. It returns a code per
// partition.
func (gs *Groups) txnCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, names []string) [][]int16 {
	codes := make([][]int16, len(req.Topics))
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
		if names[i] == "" {
			for j := range codes[i] {
				codes[i][j] = kerr.UnknownTopicID.Code
			}
		}
	}
	// fail answers every partition of a known topic with code.
	fail := func(code int16) [][]int16 {
		for i := range codes {
			if names[i] == "" {
				continue
			}
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
		return codes
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	if !gs.enter() {
		return fail(kerr.NotCoordinator.Code)
	}
	defer gs.leave()
	memberID, instanceID, generation := req.MemberID, req.InstanceID, req.Generation
	if req.Version < 3 {
		memberID, instanceID, generation = "", nil, -1 // fields of v3+
	}
	verify := gs.opts.VerifyTxn
	g, created := gs.lockGroup(req.Group, generation < 0)
	if g == nil {
		// Kafka verifies the transaction first (no lock needed here:
		// nothing is written).
		if verify != nil {
			if code := verify(ctx, req); code != 0 {
				return fail(code)
			}
		}
		if req.Version >= 6 {
			return fail(kerr.GroupIDNotFound.Code)
		}
		return fail(kerr.IllegalGeneration.Code)
	}
	defer g.mu.Unlock()
	if created {
		defer func() {
			if g.unusedLocked() {
				g.removeLocked()
			}
		}()
	}
	if verify != nil {
		if code := verify(ctx, req); code != 0 {
			return fail(code)
		}
	}
	var (
		err   *kerr.Error
		check func(topic string, id topicID, p int32) *kerr.Error
	)
	if g.mu.consumer != nil {
		err, check = g.validateConsumerMemberCommitLocked(memberID, generation, true, req.Version)
	} else {
		err = g.validateTxnCommitLocked(memberID, instanceID, generation)
	}
	if err != nil {
		return fail(err.Code)
	}
	if t := g.mu.txns[req.ProducerID]; t != nil && req.ProducerEpoch < t.epoch {
		// The producer state of the offsets log refuses an older epoch.
		return fail(kerr.InvalidProducerEpoch.Code)
	}

	type write struct {
		topic     string
		partition int32
		r         pendingRecord
	}
	var writes []write
	now := msOf(gs.now())
	for i, t := range req.Topics {
		if names[i] == "" {
			continue
		}
		for j, p := range t.Partitions {
			if p.Metadata != nil && len(*p.Metadata) > gs.opts.MaxMetadataBytes {
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			if check != nil && check(names[i], t.TopicID, p.Partition) != nil {
				// Kafka fails the whole request on a partition
				// the member may not commit at its epoch.
				return fail(kerr.IllegalGeneration.Code)
			}
			r := pendingRecord{
				offsetRecord:  offsetRecord{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitMs: now, topicID: t.TopicID},
				producerEpoch: req.ProducerEpoch,
			}
			if req.Version < 2 || r.leaderEpoch < -1 {
				r.leaderEpoch = -1
			}
			if p.Metadata != nil {
				r.metadata = strings.Clone(*p.Metadata)
			}
			writes = append(writes, write{topic: strings.Clone(names[i]), partition: p.Partition, r: r})
		}
	}
	if len(writes) == 0 {
		return codes
	}
	b := gs.newBatch()
	for k := range writes {
		w := &writes[k]
		w.r.seq = gs.nextSeq()
		b.setPending(g.name, req.ProducerID, w.topic, w.partition, w.r)
	}
	if err := b.commit(); err != nil {
		gs.log.Error("txn offset commit", "group", g.name, "producer", req.ProducerID, "err", err)
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == 0 {
					codes[i][j] = kerr.CoordinatorNotAvailable.Code
				}
			}
		}
		return codes
	}
	t := g.mu.txns[req.ProducerID]
	if t == nil {
		t = newTxnOffsets(req.ProducerEpoch)
		g.mu.txns[req.ProducerID] = t
	}
	for _, w := range writes {
		t.put(w.topic, w.partition, w.r)
	}
	return codes
}

// validateTxnCommitLocked checks a TxnOffsetCommit against a classic
// group, as Kafka's ClassicGroup.validateOffsetCommit for a transactional
// commit: members are checked only when the request names one or a
// generation, and a rebalance in progress does not refuse it. It does not
// keep the member's session alive.
func (g *group) validateTxnCommitLocked(memberID string, instanceID *string, generation int32) *kerr.Error {
	if generation < 0 && g.mu.state == Empty {
		return nil
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if err := g.validateMemberLocked(memberID, instanceID); err != nil {
			return err
		}
		if generation != g.mu.generation {
			return kerr.IllegalGeneration
		}
	}
	return nil
}

// CompleteTxnOffsets ends the transaction of producerID for group: with
// commit, the producer's pending offsets of the group become its committed
// offsets (with the leader epochs, metadata and commit times their
// TxnOffsetCommit carried; a partition whose offset was committed after
// the TxnOffsetCommit keeps that newer one, as Kafka), else they are
// dropped. Either is one synced Pebble write. A group or producer with
// nothing pending (the transaction had no offsets here, or this call is
// a retry of one that succeeded) is a no-op that succeeds.
//
// The transaction coordinator calls it for every group of a transaction
// once the transaction is decided (after PrepareCommit or PrepareAbort is
// durable), and again after a restart for transactions it had not
// completed: an error (the write failed, ErrClosed) leaves the pending
// offsets as they were, to be completed by a later call.
func (gs *Groups) CompleteTxnOffsets(_ context.Context, group string, producerID int64, commit bool) error {
	if !gs.enter() {
		return ErrClosed
	}
	defer gs.leave()
	g, _ := gs.lockGroup(group, false)
	if g == nil {
		return nil
	}
	defer g.mu.Unlock()
	t := g.mu.txns[producerID]
	if t == nil {
		return nil
	}
	b := gs.newBatch()
	b.deletePendingProducer(group, producerID)
	type write struct {
		topic     string
		partition int32
		r         offsetRecord
	}
	var writes []write
	kept := 0
	if commit {
		for topic, ps := range t.offsets {
			for p, r := range ps {
				if cur, ok := g.mu.offsets[topic][p]; ok && cur.seq > r.seq {
					kept++ // committed after this transaction's commit
					continue
				}
				b.setOffset(group, topic, p, r.offsetRecord)
				writes = append(writes, write{topic, p, r.offsetRecord})
			}
		}
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("groups: complete transactional offsets of producer %d in group %s: %w", producerID, group, err)
	}
	for _, w := range writes {
		g.setOffsetLocked(w.topic, w.partition, w.r)
	}
	delete(g.mu.txns, producerID)
	gs.log.Debug("completed transactional offsets", "group", group, "producer", producerID, "commit", commit,
		"committed", len(writes), "superseded", kept)
	if g.unusedLocked() {
		g.removeLocked()
	}
	return nil
}

// hasPendingLocked reports whether any producer has a pending offset of
// the partition.
func (g *group) hasPendingLocked(topic string, partition int32) bool {
	for _, t := range g.mu.txns {
		if _, ok := t.offsets[topic][partition]; ok {
			return true
		}
	}
	return false
}

// dropPendingLocked adds to b the deletion of every producer's pending
// offset of the partition and returns what to apply once b is written.
func (g *group) dropPendingLocked(b batch, topic string, partition int32) (apply func()) {
	var producers []int64
	for id, t := range g.mu.txns {
		if _, ok := t.offsets[topic][partition]; ok {
			b.deletePending(g.name, id, topic, partition)
			producers = append(producers, id)
		}
	}
	return func() {
		for _, id := range producers {
			t := g.mu.txns[id]
			if t == nil {
				continue
			}
			t.remove(topic, partition)
			if len(t.offsets) == 0 {
				delete(g.mu.txns, id)
			}
		}
	}
}
