package coordinator

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
)

// Transactions (KIP-98, with KIP-360's epoch bumps and KIP-890's ordering:
// a transactional batch is accepted only into a partition its ongoing
// transaction holds, checked in the commit that assigns its offsets).
//
// A transactional id's state is one row, rewritten (synced) by each step:
//
//	x <transactional id> -> version 1, producer id, epoch, previous producer
//	                        id, previous epoch, timeout ms, state(1), start
//	                        ms, update ms, n partitions × (topic id(16),
//	                        partition), n groups × group str
//
// A transaction's first batch in a partition writes its open row in the
// commit's Pebble batch; its marker's commit deletes it, and for an abort
// writes the aborted row Fetch lists for read_committed consumers:
//
//	y <topic id(16)> <partition(4)> <producer id(8)> -> version 1, first offset
//	q <topic id(16)> <partition(4)> <marker offset(8)> <producer id(8)>
//	                                                 -> version 1, first offset
//
// On a kv-indexed topic a transactional batch's keys are held in a row of
// their own (txnKeysKey) until its transaction's marker: the commit marker's
// commit writes them into the key index, either marker deletes them, so
// that /kv never answers an uncommitted or aborted value (kvindex/doc.go).
//
// EndTxn moves the state to PrepareCommit or PrepareAbort (durable), which
// stops the transaction's batches from being accepted; writes one object
// holding a control batch per partition of the transaction and commits it
// like any object (the markers get offsets; open rows close); commits or
// drops the groups' transactional offsets; and moves the state to
// CompleteCommit or CompleteAbort. A coordinator that stops between
// Prepare and Complete finishes the transaction at its next Open.
const (
	prefixTxn     byte = 'x'
	prefixTxnOpen byte = 'y'
	prefixAborted byte = 'q'
	prefixTxnKeys byte = 'z'
)

// TxnOffsets commits or drops a transaction's consumer-group offsets when
// it ends: the group coordinator (groups.Groups) implements it.
type TxnOffsets interface {
	CompleteTxnOffsets(ctx context.Context, group string, producerID int64, commit bool) error
}

// MarkerStore is where the coordinator writes the objects holding
// transaction markers: the cluster's object store.
type MarkerStore interface {
	Put(ctx context.Context, key string, data []byte) error
}

// txnState is one transactional id's state. mu serializes the
// transaction's operations; EndTxn holds it while it writes the markers.
type txnState struct {
	mu sync.Mutex
	id string

	pid, prevPID     int64
	epoch, prevEpoch int16
	timeoutMs        int32
	state            coordapi.TxnState
	parts            []partKey // sorted, unique
	groups           []string
	startMs          int64
	updateMs         int64
	// markersDone is set once this transaction's markers are committed,
	// so that a retried completion does not write them twice.
	markersDone bool
}

// txnView is what commits check a transactional batch against: the
// producer's epoch and ongoing transaction. c.commit guards it; a
// transaction step updates it under c.commit.
type txnView struct {
	id      string
	epoch   int16
	ongoing bool
	parts   map[partKey]struct{}
	groups  []string
}

// txnRegistry holds the transactional ids.
type txnRegistry struct {
	sync.Mutex // guards the maps only
	byID       map[string]*txnState
	byPID      map[int64]*txnState
	offsets    TxnOffsets
	markers    MarkerStore
	prefix     string
	// expiredMs is when TxnTick last expired producer states and
	// transactional ids, on the coordinator's clock (0: not yet).
	expiredMs int64
}

func txnKey(id string) []byte { return append([]byte{prefixTxn}, id...) }

// txnFamilyKey is a key of the transaction families: prefix, topic id,
// partition, then each number (8 bytes, big-endian).
func txnFamilyKey(prefix byte, pk partKey, nums ...int64) []byte {
	k := make([]byte, 0, 21+8*len(nums))
	k = append(k, prefix)
	k = append(k, pk.topic[:]...)
	k = binary.BigEndian.AppendUint32(k, uint32(pk.partition))
	for _, n := range nums {
		k = binary.BigEndian.AppendUint64(k, uint64(n))
	}
	return k
}

func txnOpenKey(pk partKey, pid int64) []byte { return txnFamilyKey(prefixTxnOpen, pk, pid) }

func abortedKey(pk partKey, last, pid int64) []byte {
	return txnFamilyKey(prefixAborted, pk, last, pid)
}

// decodeTxnPartKey splits a key of the transaction families: prefix(1),
// topic id(16), partition(4), a number(8), and the rest, the key being
// size bytes long.
func decodeTxnPartKey(what string, k []byte, size int) (pk partKey, n int64, rest []byte, err error) {
	if len(k) != size {
		return pk, 0, nil, fmt.Errorf("coordinator: bad %s key %x", what, k)
	}
	copy(pk.topic[:], k[1:17])
	pk.partition = int32(binary.BigEndian.Uint32(k[17:21]))
	return pk, int64(binary.BigEndian.Uint64(k[21:29])), k[29:], nil
}

func encodeOffset(o int64) []byte {
	return binary.AppendVarint([]byte{valenc.Version1}, o)
}

func decodeOffset(what string, v []byte) (int64, error) {
	d := valenc.New(what, v)
	o := d.Varint()
	return o, d.Done(what)
}

func encodeTxn(t *txnState) []byte {
	b := []byte{valenc.Version1}
	b = binary.AppendVarint(b, t.pid)
	b = binary.AppendVarint(b, int64(t.epoch))
	b = binary.AppendVarint(b, t.prevPID)
	b = binary.AppendVarint(b, int64(t.prevEpoch))
	b = binary.AppendVarint(b, int64(t.timeoutMs))
	b = append(b, byte(t.state))
	b = binary.AppendVarint(b, t.startMs)
	b = binary.AppendVarint(b, t.updateMs)
	b = binary.AppendUvarint(b, uint64(len(t.parts)))
	for _, pk := range t.parts {
		b = append(b, pk.topic[:]...)
		b = binary.AppendVarint(b, int64(pk.partition))
	}
	b = binary.AppendUvarint(b, uint64(len(t.groups)))
	for _, g := range t.groups {
		b = valenc.AppendString(b, g)
	}
	return b
}

func decodeTxn(id string, v []byte) (*txnState, error) {
	d := valenc.New("transaction", v)
	t := &txnState{id: id}
	t.pid = d.Varint()
	t.epoch = int16(d.Varint())
	t.prevPID = d.Varint()
	t.prevEpoch = int16(d.Varint())
	t.timeoutMs = int32(d.Varint())
	t.state = coordapi.TxnState(d.Byte())
	t.startMs = d.Varint()
	t.updateMs = d.Varint()
	n := d.Uvarint()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		var pk partKey
		copy(pk.topic[:], d.Bytes(16))
		pk.partition = int32(d.Varint())
		t.parts = append(t.parts, pk)
	}
	n = d.Uvarint()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		t.groups = append(t.groups, d.String())
	}
	return t, d.Done("transaction")
}

// SetTxnOffsets gives the coordinator the group coordinator whose
// transactional offsets EndTxn commits or drops. The coordinator service
// calls it once both are open; without it a transaction holding offsets
// cannot end (COORDINATOR_NOT_AVAILABLE, retriable).
func (c *Coordinator) SetTxnOffsets(o TxnOffsets) {
	c.txns.Lock()
	defer c.txns.Unlock()
	c.txns.offsets = o
}

// loadTxns reads the transactions, their open rows and the aborted
// transactions. It runs before c is shared.
func (c *Coordinator) loadTxns() error {
	c.txns.byID = map[string]*txnState{}
	c.txns.byPID = map[int64]*txnState{}
	c.txns.markers, c.txns.prefix = c.opts.Markers, c.opts.GCPrefix
	c.commit.txnViews = map[int64]*txnView{}
	c.commit.openTxns = map[partKey]map[int64]int64{}
	c.mu.aborted = map[partKey][]coordapi.AbortedTxn{}
	err := c.scan(prefixTxn, func(k, v []byte) error {
		t, err := decodeTxn(string(k[1:]), v)
		if err != nil {
			return err
		}
		c.txns.byID[t.id] = t
		c.txns.byPID[t.pid] = t
		c.commit.txnViews[t.pid] = t.view()
		return nil
	})
	if err != nil {
		return err
	}
	err = c.scan(prefixTxnOpen, func(k, v []byte) error {
		pk, pid, _, err := decodeTxnPartKey("open transaction", k, 29)
		if err != nil {
			return err
		}
		first, err := decodeOffset("open transaction", v)
		if err != nil {
			return err
		}
		m := c.commit.openTxns[pk]
		if m == nil {
			m = map[int64]int64{}
			c.commit.openTxns[pk] = m
		}
		m[pid] = first
		return nil
	})
	if err != nil {
		return err
	}
	for pk := range c.commit.openTxns {
		c.setFirstOpenLocked(pk)
	}
	c.commit.txnKeys = map[partKey]map[int64][]kvApply{}
	err = c.scan(prefixTxnKeys, func(k, v []byte) error {
		pk, pid, rest, err := decodeTxnPartKey("transaction keys", k, 37)
		if err != nil {
			return err
		}
		base := int64(binary.BigEndian.Uint64(rest))
		keys, err := decodeTxnKeys(v)
		if err != nil {
			return err
		}
		c.holdKeysLocked(pendingKeys{pid: pid, kv: kvApply{pk.topic, pk.partition, base, keys}})
		return nil
	})
	if err != nil {
		return err
	}
	return c.scan(prefixAborted, func(k, v []byte) error {
		pk, last, rest, err := decodeTxnPartKey("aborted transaction", k, 37)
		if err != nil {
			return err
		}
		pid := int64(binary.BigEndian.Uint64(rest))
		first, err := decodeOffset("aborted transaction", v)
		if err != nil {
			return err
		}
		c.mu.aborted[pk] = append(c.mu.aborted[pk], coordapi.AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last})
		return nil
	})
}

// setFirstOpenLocked sets a partition's first open offset from its open
// transactions. c.commit must be held, and c.mu unless c is not shared.
func (c *Coordinator) setFirstOpenLocked(pk partKey) {
	t := c.mu.topicsByID[pk.topic]
	if t == nil || int(pk.partition) >= len(t.parts) {
		return
	}
	p := &t.parts[pk.partition]
	p.firstOpen, p.hasOpen = firstOpen(c.commit.openTxns[pk])
}

func firstOpen(m map[int64]int64) (int64, bool) {
	if len(m) == 0 {
		return 0, false
	}
	first := int64(math.MaxInt64)
	for _, o := range m {
		first = min(first, o)
	}
	return first, true
}

// view returns what commits check the transaction's batches against.
func (t *txnState) view() *txnView {
	v := &txnView{id: t.id, epoch: t.epoch, ongoing: t.state == coordapi.TxnOngoing, parts: map[partKey]struct{}{}, groups: slices.Clone(t.groups)}
	for _, pk := range t.parts {
		v.parts[pk] = struct{}{}
	}
	return v
}

// txnFor returns the state of a transactional id, nil for none.
func (c *Coordinator) txnFor(id string) *txnState {
	c.txns.Lock()
	defer c.txns.Unlock()
	return c.txns.byID[id]
}

// persistTxnLocked writes t's row and installs what commits check. t.mu
// must be held.
func (c *Coordinator) persistTxnLocked(t *txnState) error {
	t.updateMs = c.now().UnixMilli()
	if err := c.set(txnKey(t.id), encodeTxn(t)); err != nil {
		return fmt.Errorf("transaction %q: %w", t.id, err)
	}
	c.commit.Lock()
	c.commit.txnViews[t.pid] = t.view()
	c.commit.Unlock()
	return nil
}

// lockTxn returns the transaction of p's transactional id, locked, once
// p is its current producer (checkProducerLocked); the caller unlocks it.
func (c *Coordinator) lockTxn(p coordapi.TxnProducer) (*txnState, error) {
	t := c.txnFor(p.TransactionalID)
	if t == nil {
		return nil, coordapi.Errorf(kerr.InvalidProducerIDMapping, "Transactional id %q has no producer: call InitProducerId first", p.TransactionalID)
	}
	t.mu.Lock()
	if t.state == coordapi.TxnDead {
		t.mu.Unlock()
		return nil, coordapi.Errorf(kerr.InvalidProducerIDMapping, "Transactional id %q expired: call InitProducerId first", p.TransactionalID)
	}
	if err := checkProducerLocked(t, p); err != nil {
		t.mu.Unlock()
		return nil, err
	}
	return t, nil
}

// checkProducerLocked validates a request's producer against t, as
// Kafka's TransactionCoordinator does. t.mu must be held.
func checkProducerLocked(t *txnState, p coordapi.TxnProducer) error {
	switch {
	case p.ProducerID != t.pid:
		return coordapi.Errorf(kerr.InvalidProducerIDMapping, "Producer id %d is not the one of transactional id %q", p.ProducerID, t.id)
	case p.ProducerEpoch != t.epoch:
		return coordapi.Errorf(kerr.ProducerFenced, "Producer epoch %d of transactional id %q is not its current epoch %d: a newer producer fenced it",
			p.ProducerEpoch, t.id, t.epoch)
	}
	return nil
}

// initTxnProducer is InitProducerID for a transactional id: a new id gets a
// producer id at epoch 0; a known one gets its epoch bumped (a new
// producer id when the epoch would overflow), fencing the producer that
// had it, after its ongoing transaction is aborted. A request carrying a
// producer id and epoch (KIP-360) must name the current ones, or the
// previous ones when it retries a bump already made.
func (c *Coordinator) initTxnProducer(ctx context.Context, req coordapi.InitProducerIDRequest) (coordapi.InitProducerIDResponse, error) {
	id := *req.TransactionalID
	var t *txnState
	for {
		c.txns.Lock()
		t = c.txns.byID[id]
		if t == nil {
			t = &txnState{id: id, pid: -1, prevPID: -1, prevEpoch: -1, startMs: -1}
			c.txns.byID[id] = t
		}
		c.txns.Unlock()
		t.mu.Lock()
		if t.state != coordapi.TxnDead {
			break
		}
		t.mu.Unlock() // expired since it was looked up: look again
	}
	defer t.mu.Unlock()
	if t.pid < 0 { // new (or a new one whose first init failed)
		pid, err := c.allocateProducerID()
		if err != nil {
			return coordapi.InitProducerIDResponse{}, err
		}
		t.pid, t.epoch, t.timeoutMs, t.state = pid, 0, req.TimeoutMs, coordapi.TxnEmpty
		if err := c.persistTxnLocked(t); err != nil {
			t.pid = -1
			return coordapi.InitProducerIDResponse{}, err
		}
		c.txns.Lock()
		c.txns.byPID[t.pid] = t
		c.txns.Unlock()
		c.log.Info("transactional id registered", "transactional_id", id, "producer_id", t.pid)
		return coordapi.InitProducerIDResponse{ProducerID: t.pid, ProducerEpoch: 0}, nil
	}
	if req.ProducerID >= 0 {
		switch {
		case req.ProducerID == t.prevPID && req.ProducerEpoch == t.prevEpoch:
			// A retry of the bump that made the current epoch.
			return coordapi.InitProducerIDResponse{ProducerID: t.pid, ProducerEpoch: t.epoch}, nil
		case req.ProducerID != t.pid || req.ProducerEpoch != t.epoch:
			return coordapi.InitProducerIDResponse{}, coordapi.Errorf(kerr.ProducerFenced,
				"Producer %d epoch %d of transactional id %q is not its current one (%d epoch %d)", req.ProducerID, req.ProducerEpoch, id, t.pid, t.epoch)
		}
	}
	switch t.state {
	case coordapi.TxnOngoing:
		// A new producer instance took the id over: abort what the old one
		// left open with the epoch bumped, which fences it; the new
		// instance gets that epoch (a new producer id only once the
		// abort is done, when the epoch is exhausted).
		c.fenceLocked(t)
		if err := c.endLocked(ctx, t, false); err != nil {
			return coordapi.InitProducerIDResponse{}, err
		}
		c.log.Info("ongoing transaction aborted by a new producer", "transactional_id", id, "producer_id", t.pid, "epoch", t.epoch)
		if t.epoch >= math.MaxInt16-1 {
			if err := c.bumpLocked(t); err != nil {
				return coordapi.InitProducerIDResponse{}, err
			}
		}
	case coordapi.TxnPrepareCommit, coordapi.TxnPrepareAbort:
		if err := c.completeLocked(ctx, t); err != nil {
			return coordapi.InitProducerIDResponse{}, err
		}
		if err := c.bumpLocked(t); err != nil {
			return coordapi.InitProducerIDResponse{}, err
		}
	default:
		if err := c.bumpLocked(t); err != nil {
			return coordapi.InitProducerIDResponse{}, err
		}
	}
	t.timeoutMs = req.TimeoutMs
	if err := c.persistTxnLocked(t); err != nil {
		return coordapi.InitProducerIDResponse{}, err
	}
	return coordapi.InitProducerIDResponse{ProducerID: t.pid, ProducerEpoch: t.epoch}, nil
}

// bumpLocked bumps t's epoch, or gives it a new producer id when the epoch
// would overflow, in memory: the caller persists it. t.mu must be held.
func (c *Coordinator) bumpLocked(t *txnState) error {
	t.prevPID, t.prevEpoch = t.pid, t.epoch
	if t.epoch >= math.MaxInt16-1 {
		pid, err := c.allocateProducerID()
		if err != nil {
			return err
		}
		c.txns.Lock()
		delete(c.txns.byPID, t.pid)
		c.txns.byPID[pid] = t
		c.txns.Unlock()
		c.commit.Lock()
		delete(c.commit.txnViews, t.pid) // the old id writes nothing more
		c.commit.Unlock()
		t.pid, t.epoch = pid, 0
		return nil
	}
	t.epoch++
	return nil
}

// fenceLocked bumps t's epoch before aborting its ongoing transaction,
// fencing the producer that had it, but never changes the producer id:
// the transaction's open rows, held keys and pending offsets are keyed by
// it, and its markers must carry it. An exhausted epoch stays at its
// maximum. t.mu must be held.
func (c *Coordinator) fenceLocked(t *txnState) {
	t.prevPID, t.prevEpoch = t.pid, t.epoch
	if t.epoch < math.MaxInt16 {
		t.epoch++
	}
}

// AddPartitionsToTxn adds partitions to the producer's transaction,
// starting one when none is ongoing, and returns an error code per
// partition: 0, UNKNOWN_TOPIC_OR_PARTITION for a partition that does not
// exist (the others then OPERATION_NOT_ATTEMPTED, as Kafka answers). With
// VerifyOnly nothing is added: a partition not in the transaction is
// INVALID_TXN_STATE. Request-level failures (the error):
// INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS
// while the previous transaction is being completed.
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req coordapi.AddPartitionsRequest) ([]int16, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	t, err := c.lockTxn(req.TxnProducer)
	if err != nil {
		return nil, err
	}
	defer t.mu.Unlock()
	codes := make([]int16, len(req.Partitions))
	if req.VerifyOnly {
		for i, tp := range req.Partitions {
			if t.state != coordapi.TxnOngoing || !slices.Contains(t.parts, partKey{tp.TopicID, tp.Partition}) {
				codes[i] = kerr.InvalidTxnState.Code
			}
		}
		return codes, nil
	}
	// Memory changes only with a durable write: restored on any failure.
	saved := t.save()
	if err := c.beginLocked(t); err != nil {
		return nil, err
	}
	failed := false
	c.mu.RLock()
	for i, tp := range req.Partitions {
		if _, _, err := c.partitionLocked(tp.TopicID, tp.Partition); err != nil {
			codes[i], failed = kerr.UnknownTopicOrPartition.Code, true
		}
	}
	c.mu.RUnlock()
	if failed {
		t.restore(saved)
		for i := range codes {
			if codes[i] == 0 {
				codes[i] = kerr.OperationNotAttempted.Code
			}
		}
		return codes, nil
	}
	before := len(t.parts)
	for _, tp := range req.Partitions {
		pk := partKey{tp.TopicID, tp.Partition}
		if !slices.Contains(t.parts, pk) {
			t.parts = append(t.parts, pk)
		}
	}
	if len(t.parts) == before && t.state == coordapi.TxnOngoing && t.startMs >= 0 {
		return codes, nil // nothing new
	}
	slices.SortFunc(t.parts, comparePartKeys)
	if err := c.persistTxnLocked(t); err != nil {
		t.restore(saved)
		return nil, err
	}
	return codes, nil
}

// txnSaved is what a transaction step may change of a txnState before
// its write, to restore when the write fails.
type txnSaved struct {
	state       coordapi.TxnState
	parts       []partKey
	groups      []string
	startMs     int64
	markersDone bool
}

func (t *txnState) save() txnSaved {
	return txnSaved{t.state, slices.Clone(t.parts), slices.Clone(t.groups), t.startMs, t.markersDone}
}

func (t *txnState) restore(s txnSaved) {
	t.state, t.parts, t.groups, t.startMs, t.markersDone = s.state, s.parts, s.groups, s.startMs, s.markersDone
}

func comparePartKeys(a, b partKey) int {
	if c := slices.Compare(a.topic[:], b.topic[:]); c != 0 {
		return c
	}
	return int(a.partition) - int(b.partition)
}

// beginLocked makes t's transaction ongoing, starting a new one when the
// last one completed. t.mu must be held.
func (c *Coordinator) beginLocked(t *txnState) error {
	switch t.state {
	case coordapi.TxnOngoing:
		return nil
	case coordapi.TxnPrepareCommit, coordapi.TxnPrepareAbort:
		return coordapi.Errorf(kerr.ConcurrentTransactions, "The previous transaction of %q is being completed", t.id)
	case coordapi.TxnDead:
		return coordapi.Errorf(kerr.InvalidTxnState, "Transactional id %q is dead", t.id)
	}
	t.state = coordapi.TxnOngoing
	t.parts, t.groups = nil, nil
	t.startMs = c.now().UnixMilli()
	t.markersDone = false
	return nil
}

// AddOffsetsToTxn adds a consumer group to the producer's transaction, so
// that EndTxn commits or drops its transactional offsets; it starts a
// transaction when none is ongoing. Failures: as AddPartitionsToTxn's
// request-level ones.
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, p coordapi.TxnProducer, group string) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	t, err := c.lockTxn(p)
	if err != nil {
		return err
	}
	defer t.mu.Unlock()
	saved := t.save()
	if err := c.beginLocked(t); err != nil {
		return err
	}
	if !slices.Contains(t.groups, group) {
		t.groups = append(t.groups, group)
	}
	if err := c.persistTxnLocked(t); err != nil {
		t.restore(saved)
		return err
	}
	return nil
}

// EndTxn commits or aborts the producer's ongoing transaction: it writes
// the markers into every partition the transaction holds, commits or drops
// its groups' transactional offsets, and only then answers. A retry of an
// EndTxn already done succeeds; ending a transaction other than the way it
// was already ended, or with none ongoing, is INVALID_TXN_STATE; a
// completion that fails (the object store, the group coordinator) leaves
// the transaction prepared, finished by a retry or by the coordinator.
func (c *Coordinator) EndTxn(ctx context.Context, req coordapi.EndTxnRequest) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	// A retry after a timeout abort bumped the epoch is PRODUCER_FENCED,
	// as in Kafka.
	t, err := c.lockTxn(req.TxnProducer)
	if err != nil {
		return err
	}
	defer t.mu.Unlock()
	want := map[bool][2]coordapi.TxnState{
		true:  {coordapi.TxnPrepareCommit, coordapi.TxnCompleteCommit},
		false: {coordapi.TxnPrepareAbort, coordapi.TxnCompleteAbort},
	}[req.Commit]
	switch t.state {
	case coordapi.TxnOngoing:
		return c.endLocked(ctx, t, req.Commit)
	case want[0]:
		return c.completeLocked(ctx, t)
	case want[1]:
		return nil // a retry
	}
	return coordapi.Errorf(kerr.InvalidTxnState, "Transaction of %q is %s: it cannot be %s", t.id, t.state,
		map[bool]string{true: "committed", false: "aborted"}[req.Commit])
}

// endLocked prepares t's ongoing transaction to commit or abort and
// completes it. t.mu must be held.
func (c *Coordinator) endLocked(ctx context.Context, t *txnState, commit bool) error {
	t.state = coordapi.TxnPrepareAbort
	if commit {
		t.state = coordapi.TxnPrepareCommit
	}
	if err := c.persistTxnLocked(t); err != nil {
		t.state = coordapi.TxnOngoing
		return err
	}
	return c.completeLocked(ctx, t)
}

// completeLocked finishes t's prepared transaction: markers, group
// offsets, the complete state. t.mu must be held.
func (c *Coordinator) completeLocked(ctx context.Context, t *txnState) error {
	commit := t.state == coordapi.TxnPrepareCommit
	if !t.markersDone && len(t.parts) > 0 {
		if err := c.writeMarkers(ctx, t, commit); err != nil {
			return fmt.Errorf("transaction %q: markers: %w", t.id, err)
		}
		t.markersDone = true
	}
	if len(t.groups) > 0 {
		c.txns.Lock()
		offsets := c.txns.offsets
		c.txns.Unlock()
		if offsets == nil {
			return coordapi.Errorf(kerr.CoordinatorNotAvailable, "the group coordinator is not available to complete the offsets of %q", t.id)
		}
		for _, g := range t.groups {
			if err := offsets.CompleteTxnOffsets(ctx, g, t.pid, commit); err != nil {
				return fmt.Errorf("transaction %q: offsets of group %q: %w", t.id, g, err)
			}
		}
	}
	t.state = coordapi.TxnCompleteAbort
	if commit {
		t.state = coordapi.TxnCompleteCommit
	}
	parts := len(t.parts)
	t.parts, t.groups, t.startMs = nil, nil, -1
	if err := c.persistTxnLocked(t); err != nil {
		return err
	}
	c.log.Debug("transaction completed", "transactional_id", t.id, "producer_id", t.pid, "epoch", t.epoch,
		"commit", commit, "partitions", parts)
	return nil
}

// DescribeTransactions describes transactional ids; an unknown one is
// TRANSACTIONAL_ID_NOT_FOUND in its result.
func (c *Coordinator) DescribeTransactions(ctx context.Context, ids []string) ([]coordapi.TxnDescription, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	out := make([]coordapi.TxnDescription, len(ids))
	for i, id := range ids {
		out[i] = coordapi.TxnDescription{TransactionalID: id, ProducerID: -1, ProducerEpoch: -1, StartMs: -1}
		t := c.txnFor(id)
		if t == nil {
			out[i].ErrorCode = kerr.TransactionalIDNotFound.Code
			continue
		}
		t.mu.Lock()
		if t.pid < 0 {
			out[i].ErrorCode = kerr.TransactionalIDNotFound.Code
		} else {
			out[i].State, out[i].ProducerID, out[i].ProducerEpoch, out[i].TimeoutMs = t.state, t.pid, t.epoch, t.timeoutMs
			out[i].StartMs = t.startMs
			for _, pk := range t.parts {
				out[i].Partitions = append(out[i].Partitions, coordapi.TopicPartition{TopicID: pk.topic, Partition: pk.partition})
			}
		}
		t.mu.Unlock()
	}
	return out, nil
}

// ListTransactions lists the transactional ids, those in one of states
// and of one of producerIDs when they are given.
func (c *Coordinator) ListTransactions(ctx context.Context, states []coordapi.TxnState, producerIDs []int64) ([]coordapi.TxnListing, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	c.txns.Lock()
	all := make([]*txnState, 0, len(c.txns.byID))
	for _, t := range c.txns.byID {
		all = append(all, t)
	}
	c.txns.Unlock()
	var out []coordapi.TxnListing
	for _, t := range all {
		t.mu.Lock()
		l := coordapi.TxnListing{TransactionalID: t.id, ProducerID: t.pid, State: t.state}
		t.mu.Unlock()
		if l.ProducerID < 0 || (len(states) > 0 && !slices.Contains(states, l.State)) ||
			(len(producerIDs) > 0 && !slices.Contains(producerIDs, l.ProducerID)) {
			continue
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b coordapi.TxnListing) int { return cmp.Compare(a.TransactionalID, b.TransactionalID) })
	return out, nil
}

// DescribeProducers lists the producers with state on a partition: their
// epochs, last sequences and timestamps, and their open transactions'
// first offsets. Kafka-level failures: UnknownTopicID,
// UnknownTopicOrPartition.
func (c *Coordinator) DescribeProducers(ctx context.Context, id coordapi.TopicID, partition int32) ([]coordapi.ProducerDescription, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	c.mu.RLock()
	_, _, err := c.partitionLocked(id, partition)
	c.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	c.commit.Lock()
	defer c.commit.Unlock()
	pk := partKey{id, partition}
	var out []coordapi.ProducerDescription
	for k, st := range c.commit.producers {
		if k.topic != id || k.partition != partition || st.epoch == noProducerEpoch {
			continue
		}
		d := coordapi.ProducerDescription{ProducerID: k.producerID, ProducerEpoch: st.epoch, LastSequence: -1, LastTimestamp: -1,
			CoordinatorEpoch: -1, CurrentTxnStartOffset: -1}
		if st.n > 0 {
			last := st.batches[st.n-1]
			d.LastSequence, d.LastTimestamp = last.lastSeq, last.timestamp
		}
		if first, ok := c.commit.openTxns[pk][k.producerID]; ok {
			d.CurrentTxnStartOffset = first
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b coordapi.ProducerDescription) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out, nil
}

// abortedLocked returns the aborted transactions of a partition whose
// marker is at or after from and whose first offset is below upTo, by first
// offset. c.mu must be held (read).
func (c *Coordinator) abortedLocked(pk partKey, from, upTo int64) []coordapi.AbortedTxn {
	var out []coordapi.AbortedTxn
	all := c.mu.aborted[pk] // by marker offset: commits append in offset order
	i, _ := slices.BinarySearchFunc(all, from, func(a coordapi.AbortedTxn, from int64) int { return cmp.Compare(a.LastOffset, from) })
	for _, a := range all[i:] {
		if a.FirstOffset < upTo {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b coordapi.AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return out
}

// errNoMarkerStore is EndTxn's failure on a coordinator that cannot write
// objects.
var errNoMarkerStore = errors.New("the coordinator has no object store to write transaction markers to (cmd/coordinator needs --s3-bucket)")

// txnOp is one accepted transactional batch or marker of a commit.
type txnOp struct {
	part    int32 // index in the commit's parts
	pid     int64
	base    int64
	control bool
	commit  bool
}

// txnChanges are what a commit changes of the open and aborted
// transactions, installed once it is durable.
type txnChanges struct {
	open    map[partKey]map[int64]int64 // the partitions' new open transactions
	aborted map[partKey][]coordapi.AbortedTxn
	// keys are transactional batches' keys held until their transaction
	// ends; doneKeys the (partition, producer) whose held keys went.
	keys, doneKeys []pendingKeys
}

// pendingKeys are one transactional batch's keys for the key index, held
// until its transaction ends: applied at its commit marker, dropped at its
// abort marker, so that /kv never answers an uncommitted or aborted value.
type pendingKeys struct {
	pid int64
	kv  kvApply
}

// txnKeysKey is the row holding a transactional batch's keys:
//
//	z <topic id(16)> <partition(4)> <producer id(8)> <base offset(8)>
//	                      -> version 1, n keys × (key str, offset delta, tombstone(1))
func txnKeysKey(pk partKey, pid, base int64) []byte {
	return txnFamilyKey(prefixTxnKeys, pk, pid, base)
}

func encodeTxnKeys(keys []coordapi.KeyEntry) []byte {
	b := binary.AppendUvarint([]byte{valenc.Version1}, uint64(len(keys)))
	for _, k := range keys {
		b = valenc.AppendString(b, string(k.Key))
		b = binary.AppendVarint(b, int64(k.OffsetDelta))
		if k.Tombstone {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	return b
}

func decodeTxnKeys(v []byte) ([]coordapi.KeyEntry, error) {
	d := valenc.New("transaction keys", v)
	n := d.Uvarint()
	var out []coordapi.KeyEntry
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		k := coordapi.KeyEntry{Key: []byte(d.String()), OffsetDelta: int32(d.Varint())}
		k.Tombstone = d.Byte() == 1
		out = append(out, k)
	}
	return out, d.Done("transaction keys")
}

// checkTxnBatchLocked decides a transactional batch by its producer's
// transaction (KIP-890: the partition must be in the ongoing
// transaction): 0 to accept it, else INVALID_PRODUCER_EPOCH for an epoch
// other than the transaction's (a fenced producer) or INVALID_TXN_STATE.
// c.commit must be held.
func (c *Coordinator) checkTxnBatchLocked(cb *coordapi.CommitBatch) int16 {
	v := c.commit.txnViews[cb.ProducerID]
	switch {
	case v == nil:
		return kerr.InvalidTxnState.Code
	case v.id != cb.TransactionalID:
		return kerr.InvalidProducerIDMapping.Code // another id's producer
	case cb.ProducerEpoch != v.epoch:
		return codeInvalidProducerEpoch
	case !v.ongoing:
		return kerr.InvalidTxnState.Code
	}
	if _, ok := v.parts[partKey{cb.TopicID, cb.Partition}]; !ok {
		return kerr.InvalidTxnState.Code
	}
	return 0
}

// applyTxnOpsLocked writes a commit's transactional changes into b: a
// transaction's first batch in a partition opens it there, its marker
// closes it (an abort marker records the aborted range). It sets the
// partitions' pending first open offsets and returns the changes to
// install once b is durable. c.commit must be held.
func (c *Coordinator) applyTxnOpsLocked(b *pebble.Batch, parts []pendingPart, ops []txnOp, keys []pendingKeys) (txnChanges, error) {
	var ch txnChanges
	if len(ops) == 0 {
		return ch, nil
	}
	ch.open = map[partKey]map[int64]int64{}
	for _, pk := range keys {
		part := partKey{pk.kv.id, pk.kv.partition}
		_ = b.Set(txnKeysKey(part, pk.pid, pk.kv.base), encodeTxnKeys(pk.kv.keys), nil)
		ch.keys = append(ch.keys, pk)
	}
	for _, op := range ops {
		pp := &parts[op.part]
		pk := partKey{pp.topic.id, pp.partition}
		m, ok := ch.open[pk]
		if !ok {
			m = maps.Clone(c.commit.openTxns[pk])
			if m == nil {
				m = map[int64]int64{}
			}
			ch.open[pk] = m
		}
		first, isOpen := m[op.pid]
		switch {
		case !op.control && !isOpen:
			m[op.pid] = op.base
			_ = b.Set(txnOpenKey(pk, op.pid), encodeOffset(op.base), nil)
		case op.control && isOpen:
			delete(m, op.pid)
			_ = b.Delete(txnOpenKey(pk, op.pid), nil)
			// The transaction's keys: into the key index if it commits,
			// gone either way.
			if pending := c.commit.txnKeys[pk][op.pid]; len(pending) > 0 {
				if op.commit {
					// Only where newer than the index: a write to the key
					// committed while the transaction was open wins.
					for _, kv := range pending {
						if err := c.kv.ApplyNewer(b, kv.id, kv.partition, kv.base, kvEntries(kv.keys)); err != nil {
							return ch, fmt.Errorf("key index: %w", err)
						}
					}
				}
				lo := txnKeysKey(pk, op.pid, 0)
				_ = b.DeleteRange(lo, txnKeysKey(pk, op.pid+1, 0), nil)
				ch.doneKeys = append(ch.doneKeys, pendingKeys{pid: op.pid, kv: kvApply{id: pk.topic, partition: pk.partition}})
			}
			if !op.commit {
				if ch.aborted == nil {
					ch.aborted = map[partKey][]coordapi.AbortedTxn{}
				}
				ch.aborted[pk] = append(ch.aborted[pk], coordapi.AbortedTxn{ProducerID: op.pid, FirstOffset: first, LastOffset: op.base})
				_ = b.Set(abortedKey(pk, op.base, op.pid), encodeOffset(first), nil)
			}
		}
	}
	for j := range parts {
		pp := &parts[j]
		if m, ok := ch.open[partKey{pp.topic.id, pp.partition}]; ok {
			pp.st.firstOpen, pp.st.hasOpen = firstOpen(m)
		}
	}
	return ch, nil
}

// heldRef names one held batch of keys: c.commit.txnKeys[pk][pid][i].
type heldRef struct {
	pk  partKey
	pid int64
	i   int
}

// supersedeHeldLocked drops, from the keys open transactions hold, every
// key that kvs (a commit's non-transactional writes) write again at a later
// offset: when such a transaction commits, its older value must not come
// back (ApplyNewer covers a newer live value; this covers a newer
// tombstone, which leaves no entry to compare with). The rewritten rows go
// into b; the returned keys replace the held ones once b is durable.
// c.commit must be held.
func (c *Coordinator) supersedeHeldLocked(b *pebble.Batch, kvs []kvApply) map[heldRef][]coordapi.KeyEntry {
	var out map[heldRef][]coordapi.KeyEntry
	for _, kv := range kvs {
		pk := partKey{kv.id, kv.partition}
		held := c.commit.txnKeys[pk]
		if len(held) == 0 {
			continue
		}
		newest := make(map[string]int64, len(kv.keys))
		for _, k := range kv.keys {
			newest[string(k.Key)] = kv.base + int64(k.OffsetDelta)
		}
		for pid, list := range held {
			for i, h := range list {
				ref := heldRef{pk, pid, i}
				keys := h.keys
				if cur, ok := out[ref]; ok {
					keys = cur
				}
				kept := keys[:0:0]
				for _, k := range keys {
					if at, ok := newest[string(k.Key)]; ok && at > h.base+int64(k.OffsetDelta) {
						continue // superseded
					}
					kept = append(kept, k)
				}
				if len(kept) == len(keys) {
					continue
				}
				if out == nil {
					out = map[heldRef][]coordapi.KeyEntry{}
				}
				out[ref] = kept
				if len(kept) == 0 {
					_ = b.Delete(txnKeysKey(pk, pid, h.base), nil)
				} else {
					_ = b.Set(txnKeysKey(pk, pid, h.base), encodeTxnKeys(kept), nil)
				}
			}
		}
	}
	return out
}

// installSupersededLocked installs supersedeHeldLocked's rewrites. c.commit
// must be held.
func (c *Coordinator) installSupersededLocked(rw map[heldRef][]coordapi.KeyEntry) {
	for ref, keys := range rw {
		if list := c.commit.txnKeys[ref.pk][ref.pid]; ref.i < len(list) {
			list[ref.i].keys = keys
		}
	}
}

// installLocked installs a durable commit's transactional changes. c.mu
// and c.commit must be held.
func (ch txnChanges) installLocked(c *Coordinator) {
	for pk, m := range ch.open {
		if len(m) == 0 {
			delete(c.commit.openTxns, pk)
		} else {
			c.commit.openTxns[pk] = m
		}
	}
	for pk, as := range ch.aborted {
		c.mu.aborted[pk] = append(c.mu.aborted[pk], as...)
	}
	for _, d := range ch.doneKeys {
		pk := partKey{d.kv.id, d.kv.partition}
		delete(c.commit.txnKeys[pk], d.pid)
		if len(c.commit.txnKeys[pk]) == 0 {
			delete(c.commit.txnKeys, pk)
		}
	}
	for _, k := range ch.keys {
		c.holdKeysLocked(k)
	}
}

// holdKeysLocked keeps a transactional batch's keys until its transaction
// ends. c.commit must be held.
func (c *Coordinator) holdKeysLocked(k pendingKeys) {
	pk := partKey{k.kv.id, k.kv.partition}
	m := c.commit.txnKeys[pk]
	if m == nil {
		m = map[int64][]kvApply{}
		c.commit.txnKeys[pk] = m
	}
	m[k.pid] = append(m[k.pid], k.kv)
}

// defaultTxnCheckInterval is how often the coordinator looks for
// transactions past their timeout and prepared ones to finish.
const defaultTxnCheckInterval = time.Second

// Apache Kafka's defaults of producer.id.expiration.ms,
// transactional.id.expiration.ms and
// producer.id.expiration.check.interval.ms (Options).
const (
	DefaultProducerIDExpiration      = 24 * time.Hour
	DefaultTransactionalIDExpiration = 7 * 24 * time.Hour
	DefaultExpirationCheckInterval   = 10 * time.Minute
)

// runTxns aborts the transactions that outlive their timeout and finishes
// the prepared ones (a completion that failed, or one a restart
// interrupted), every interval until ctx ends.
func (c *Coordinator) runTxns(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		c.TxnTick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pruneAborted forgets the aborted transactions whose markers the log start
// has passed (retention, DeleteRecords): no fetch can reach them. Their rows
// go in one unsynced write: one that a crash loses is pruned again.
func (c *Coordinator) pruneAborted() error {
	c.commit.Lock()
	defer c.commit.Unlock()
	c.mu.RLock()
	type cut struct {
		pk partKey
		n  int
	}
	var cuts []cut
	for pk, list := range c.mu.aborted {
		t := c.mu.topicsByID[pk.topic]
		if t == nil || int(pk.partition) >= len(t.parts) {
			continue
		}
		start := t.parts[pk.partition].logStart
		n, _ := slices.BinarySearchFunc(list, start, func(a coordapi.AbortedTxn, start int64) int { return cmp.Compare(a.LastOffset, start) })
		if n > 0 {
			cuts = append(cuts, cut{pk, n})
		}
	}
	c.mu.RUnlock()
	if len(cuts) == 0 {
		return nil
	}
	b := c.db.NewBatch()
	defer b.Close()
	c.mu.RLock()
	for _, ct := range cuts {
		for _, a := range c.mu.aborted[ct.pk][:ct.n] {
			_ = b.Delete(abortedKey(ct.pk, a.LastOffset, a.ProducerID), nil)
		}
	}
	c.mu.RUnlock()
	if err := c.write(b, pebble.NoSync); err != nil {
		return fmt.Errorf("prune aborted transactions: %w", err)
	}
	c.mu.Lock()
	for _, ct := range cuts {
		rest := c.mu.aborted[ct.pk][ct.n:]
		if len(rest) == 0 {
			delete(c.mu.aborted, ct.pk)
		} else {
			c.mu.aborted[ct.pk] = slices.Clone(rest)
		}
	}
	c.mu.Unlock()
	return nil
}

// TxnTick runs one pass of the transaction loop: a transaction ongoing for
// longer than its timeout is aborted with its epoch bumped, which fences
// its producer (Kafka's transaction.timeout.ms); a prepared one is
// completed; the aborted transactions below the log start are forgotten.
// It returns how many transactions it aborted.
func (c *Coordinator) TxnTick(ctx context.Context) int {
	if err := c.enter(ctx); err != nil {
		return 0
	}
	defer c.leave()
	c.txns.Lock()
	all := make([]*txnState, 0, len(c.txns.byID))
	for _, t := range c.txns.byID {
		all = append(all, t)
	}
	c.txns.Unlock()
	if err := c.pruneAborted(); err != nil {
		c.log.Warn("transactions", "err", err)
	}
	nowMs := c.now().UnixMilli()
	c.txns.Lock()
	expire := nowMs-c.txns.expiredMs >= c.opts.ExpirationCheckInterval.Milliseconds()
	if expire {
		c.txns.expiredMs = nowMs
	}
	c.txns.Unlock()
	if expire {
		c.expire(ctx, all, nowMs)
	}
	aborted := 0
	for _, t := range all {
		if ctx.Err() != nil {
			return aborted
		}
		if !t.mu.TryLock() {
			continue // busy: an operation of its producer is running
		}
		var err error
		switch t.state {
		case coordapi.TxnOngoing:
			if t.startMs >= 0 && nowMs-t.startMs > int64(t.timeoutMs) {
				c.fenceLocked(t)
				err = c.endLocked(ctx, t, false)
				if err == nil {
					aborted++
					c.log.Info("transaction aborted: past its timeout", "transactional_id", t.id,
						"timeout_ms", t.timeoutMs, "producer_id", t.pid, "epoch", t.epoch)
				}
			}
		case coordapi.TxnPrepareCommit, coordapi.TxnPrepareAbort:
			err = c.completeLocked(ctx, t)
		}
		t.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			c.log.Warn("transaction not completed; retrying", "transactional_id", t.id, "err", err)
		}
	}
	return aborted
}

// expire drops the producer states idle for ProducerIDExpiration and the
// transactional ids among all that have no transaction open and have not
// changed for TransactionalIDExpiration, as Kafka's coordinators do, so
// that neither grows without bound. A producer whose transactional id
// expired gets INVALID_PRODUCER_ID_MAPPING until it calls InitProducerId
// again, which registers the id anew.
func (c *Coordinator) expire(ctx context.Context, all []*txnState, nowMs int64) {
	if c.opts.ProducerIDExpiration > 0 {
		if _, err := c.expireProducers(c.opts.ProducerIDExpiration); err != nil {
			c.log.Warn("producer states not expired", "err", err)
		}
	}
	if c.opts.TransactionalIDExpiration <= 0 {
		return
	}
	cutoff := nowMs - c.opts.TransactionalIDExpiration.Milliseconds()
	// The expired ids stay locked (TryLock: none is waited for while
	// others are held) until one write has deleted them all.
	var expired []*txnState
	for _, t := range all {
		if ctx.Err() != nil {
			break
		}
		if !t.mu.TryLock() {
			continue // busy: not idle
		}
		if expirable(t, cutoff) {
			expired = append(expired, t)
		} else {
			t.mu.Unlock()
		}
	}
	if len(expired) == 0 {
		return
	}
	if err := c.expireTxnsLocked(expired); err != nil {
		c.log.Warn("transactional ids not expired", "count", len(expired), "err", err)
	} else {
		c.log.Info("transactional ids expired", "count", len(expired))
	}
	for _, t := range expired {
		t.mu.Unlock()
	}
}

// expirable reports whether t has no transaction open and last changed
// before cutoffMs. t.mu must be held.
func expirable(t *txnState, cutoffMs int64) bool {
	switch t.state {
	case coordapi.TxnEmpty, coordapi.TxnCompleteCommit, coordapi.TxnCompleteAbort:
		return t.pid >= 0 && t.updateMs < cutoffMs
	}
	return false
}

// expireTxnsLocked deletes ts in one synced write and marks them dead: the
// operations that looked one up before then look again, or fail. Each
// t.mu must be held.
func (c *Coordinator) expireTxnsLocked(ts []*txnState) error {
	b := c.db.NewBatch()
	defer b.Close()
	for _, t := range ts {
		_ = b.Delete(txnKey(t.id), nil)
	}
	if err := c.write(b, pebble.Sync); err != nil {
		return err
	}
	c.txns.Lock()
	for _, t := range ts {
		if c.txns.byID[t.id] == t {
			delete(c.txns.byID, t.id)
		}
		if c.txns.byPID[t.pid] == t {
			delete(c.txns.byPID, t.pid)
		}
	}
	c.txns.Unlock()
	c.commit.Lock()
	for _, t := range ts {
		delete(c.commit.txnViews, t.pid)
	}
	c.commit.Unlock()
	for _, t := range ts {
		t.state, t.pid = coordapi.TxnDead, -1 // a stale pointer describes no producer
	}
	return nil
}

// HiddenTxnBatch reports whether the transactional batch of producer pid at
// offset in a partition is hidden from read_committed readers: its
// transaction aborted, or is still open (kvindex.TxnLog, for the key
// index's rebuild).
func (s logSource) HiddenTxnBatch(id [16]byte, partition int32, pid, offset int64) bool {
	c := s.c
	pk := partKey{coordapi.TopicID(id), partition}
	// Not c.commit: a rebuild is stopped under it. openTxns is written
	// with c.mu held too.
	c.mu.RLock()
	defer c.mu.RUnlock()
	if first, open := c.commit.openTxns[pk][pid]; open && offset >= first {
		return true
	}
	for _, a := range c.mu.aborted[pk] {
		if a.ProducerID == pid && a.FirstOffset <= offset && offset <= a.LastOffset {
			return true
		}
	}
	return false
}

// VerifyTxnOffsetCommit checks a TxnOffsetCommit against its transaction
// before the group coordinator stores its offsets (groups.TxnVerifier):
// the transactional id's ongoing transaction must be this producer's, at
// this epoch, and hold the group (AddOffsetsToTxn). It answers 0 or the
// code for every partition: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v3, KIP-588), INVALID_TXN_STATE. It reads
// only what commits check (under c.commit), never a transaction's lock,
// since it runs under the group's lock, which EndTxn takes under its
// transaction's.
func (c *Coordinator) VerifyTxnOffsetCommit(_ context.Context, req *kmsg.TxnOffsetCommitRequest) int16 {
	c.commit.Lock()
	defer c.commit.Unlock()
	v := c.commit.txnViews[req.ProducerID]
	switch {
	case v == nil || v.id != req.TransactionalID:
		return kerr.InvalidProducerIDMapping.Code
	case v.epoch != req.ProducerEpoch:
		if req.Version < 3 {
			return kerr.InvalidProducerEpoch.Code
		}
		return kerr.ProducerFenced.Code
	case !v.ongoing || !slices.Contains(v.groups, req.Group):
		return kerr.InvalidTxnState.Code
	}
	return 0
}
