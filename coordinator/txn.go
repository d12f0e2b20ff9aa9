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
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/markers"
	"github.com/floe-io/floe/coordinator/txn"
)

// Transactions (KIP-98, with KIP-360's epoch bumps and KIP-890's ordering:
// a transactional batch is accepted only into a partition its ongoing
// transaction holds, checked in the commit that assigns its offsets). The
// transaction coordinator (package txn) owns the transactional ids, their
// producers and transactions, and keeps a row per id in this database
// (family 'x', drawn in its doc: the rows of Rows). What is per partition
// is here: the views commits check a transactional batch against
// (SetTxnView), the transactions open in each partition and the aborted
// ones, the markers (WriteTxnMarkers).
//
// A transaction's first batch in a partition writes its open row ('y',
// drawn in package layout with the other families) in the commit's Pebble
// batch; its marker's commit deletes it, and for an abort writes the
// aborted row ('q') Fetch lists for read_committed consumers.
//
// On a kv-indexed topic a transactional batch's keys are held in a row of
// their own ('z', txnKeysKey) until its transaction's marker: the commit marker's
// commit writes them into the key index, either marker deletes them, so
// that /kv never answers an uncommitted or aborted value (kvindex/doc.go).

// TxnOffsets commits or drops a transaction's consumer-group offsets when
// it ends: the group coordinator (groups.Groups) implements it.
type TxnOffsets = txn.Offsets

// MarkerStore is where the coordinator writes the objects holding
// transaction markers: the cluster's object store.
type MarkerStore = markers.Store

// txnView is what commits check a transactional batch against: the
// producer's epoch and ongoing transaction (coordapi.TxnView). c.commit
// guards it.
type txnView struct {
	id      string
	epoch   int16
	ongoing bool
	parts   map[partKey]struct{}
}

func txnOpenKey(pk partKey, pid int64) []byte {
	return layout.TxnFamilyKey(layout.PrefixTxnOpen, pk.topic, pk.partition, pid)
}

func abortedKey(pk partKey, last, pid int64) []byte {
	return layout.TxnFamilyKey(layout.PrefixAborted, pk.topic, pk.partition, last, pid)
}

// decodeTxnPartKey is layout.DecodeTxnPartKey with the partition as a
// partKey.
func decodeTxnPartKey(what string, k []byte, size int) (partKey, int64, []byte, error) {
	id, p, n, rest, err := layout.DecodeTxnPartKey(what, k, size)
	return partKey{id, p}, n, rest, err
}

// SetTxnOffsets gives the transaction coordinator the group coordinator
// whose transactional offsets EndTxn commits or drops. The coordinator
// service calls it once both are open; without it a transaction holding
// offsets cannot end (COORDINATOR_NOT_AVAILABLE, retriable).
func (c *Coordinator) SetTxnOffsets(o TxnOffsets) { c.txn.SetOffsets(o) }

// loadTxns reads the open and aborted transactions of the partitions, and
// opens the transaction coordinator, which installs its producers' views.
// It runs before c is shared.
func (c *Coordinator) loadTxns() error {
	c.commit.txnViews = map[int64]*txnView{}
	c.commit.markers = map[int64]uint64{}
	c.commit.openTxns = map[partKey]map[int64]int64{}
	c.mu.aborted = map[partKey][]coordapi.AbortedTxn{}
	var err error
	c.txn, err = txn.New(txn.Options{
		Rows: familyRows{c, layout.PrefixTxn}, Partitions: txnPartitions{c}, Now: c.now, Logger: c.log,
		IDExpiration: c.opts.TransactionalIDExpiration, ExpirationCheckInterval: c.opts.ExpirationCheckInterval,
	})
	if err != nil {
		return err
	}
	if err := c.scan(layout.PrefixTxnOpen, c.loadOpenTxnLocked); err != nil {
		return err
	}
	for pk := range c.commit.openTxns {
		c.setFirstOpenLocked(pk)
	}
	c.commit.txnKeys = map[partKey]map[int64][]kvApply{}
	if err := c.scan(layout.PrefixTxnKeys, c.loadTxnKeysLocked); err != nil {
		return err
	}
	return c.scan(layout.PrefixAborted, c.loadAbortedLocked)
}

// loadOpenTxnLocked installs an open transaction's row ('y'). c.commit
// and c.mu must be held, unless c is not shared.
func (c *Coordinator) loadOpenTxnLocked(k, v []byte) error {
	pk, pid, _, err := decodeTxnPartKey("open transaction", k, 29)
	if err != nil {
		return err
	}
	first, err := layout.DecodeOffset("open transaction", v)
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
}

// loadTxnKeysLocked holds a transactional batch's keys from their row
// ('z'). c.commit and c.mu must be held, unless c is not shared.
func (c *Coordinator) loadTxnKeysLocked(k, v []byte) error {
	pk, pid, rest, err := decodeTxnPartKey("transaction keys", k, 37)
	if err != nil {
		return err
	}
	base := int64(binary.BigEndian.Uint64(rest))
	keys, err := layout.DecodeTxnKeys(v)
	if err != nil {
		return err
	}
	c.holdKeysLocked(pendingKeys{pid: pid, kv: kvApply{pk.topic, pk.partition, base, keys}})
	return nil
}

// loadAbortedLocked installs an aborted transaction's row ('q'). c.commit
// and c.mu must be held, unless c is not shared.
func (c *Coordinator) loadAbortedLocked(k, v []byte) error {
	pk, last, rest, err := decodeTxnPartKey("aborted transaction", k, 37)
	if err != nil {
		return err
	}
	pid := int64(binary.BigEndian.Uint64(rest))
	first, err := layout.DecodeOffset("aborted transaction", v)
	if err != nil {
		return err
	}
	c.mu.aborted[pk] = append(c.mu.aborted[pk], coordapi.AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last})
	return nil
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

// AddPartitionsToTxn is the transaction coordinator's
// (txn.Coordinator.AddPartitionsToTxn).
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req coordapi.AddPartitionsRequest) ([]int16, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.txn.AddPartitionsToTxn(ctx, req)
}

// AddOffsetsToTxn is the transaction coordinator's
// (txn.Coordinator.AddOffsetsToTxn).
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, p coordapi.TxnProducer, group string) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	return c.txn.AddOffsetsToTxn(ctx, p, group)
}

// EndTxn is the transaction coordinator's (txn.Coordinator.EndTxn).
func (c *Coordinator) EndTxn(ctx context.Context, req coordapi.EndTxnRequest) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	return c.txn.EndTxn(ctx, req)
}

// DescribeTransactions is the transaction coordinator's
// (txn.Coordinator.DescribeTransactions).
func (c *Coordinator) DescribeTransactions(ctx context.Context, ids []string) ([]coordapi.TxnDescription, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.txn.DescribeTransactions(ctx, ids)
}

// ListTransactions is the transaction coordinator's
// (txn.Coordinator.ListTransactions).
func (c *Coordinator) ListTransactions(ctx context.Context, states []coordapi.TxnState, producerIDs []int64) ([]coordapi.TxnListing, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.txn.ListTransactions(ctx, states, producerIDs)
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
		if k.topic != id || k.partition != partition || st.Epoch == noProducerEpoch {
			continue
		}
		d := coordapi.ProducerDescription{ProducerID: k.producerID, ProducerEpoch: st.Epoch, LastSequence: -1, LastTimestamp: -1,
			CoordinatorEpoch: -1, CurrentTxnStartOffset: -1}
		if st.N > 0 {
			last := st.Batches[st.N-1]
			d.LastSequence, d.LastTimestamp = last.LastSeq, last.Timestamp
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

// txnKeysKey is the row holding a transactional batch's keys (family 'z').
func txnKeysKey(pk partKey, pid, base int64) []byte {
	return layout.TxnFamilyKey(layout.PrefixTxnKeys, pk.topic, pk.partition, pid, base)
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
		_ = b.Set(txnKeysKey(part, pk.pid, pk.kv.base), layout.EncodeTxnKeys(pk.kv.keys), nil)
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
			_ = b.Set(txnOpenKey(pk, op.pid), layout.EncodeOffset(op.base), nil)
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
				_ = b.Set(abortedKey(pk, op.base, op.pid), layout.EncodeOffset(first), nil)
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
					_ = b.Set(txnKeysKey(pk, pid, h.base), layout.EncodeTxnKeys(kept), nil)
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
	DefaultTransactionalIDExpiration = txn.DefaultIDExpiration
	DefaultExpirationCheckInterval   = txn.DefaultExpirationCheckInterval
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

// TxnTick runs one pass of the transaction loop: the aborted transactions
// below the log start are forgotten, producer states idle for
// ProducerIDExpiration are dropped (every ExpirationCheckInterval), and
// the transaction coordinator's Tick aborts the transactions past their
// timeout, completes the prepared ones and expires idle transactional
// ids. It returns how many transactions it aborted.
func (c *Coordinator) TxnTick(ctx context.Context) int {
	if err := c.enter(ctx); err != nil {
		return 0
	}
	defer c.leave()
	if err := c.pruneAborted(); err != nil {
		c.log.Warn("transactions", "err", err)
	}
	nowMs := c.now().UnixMilli()
	c.pids.Lock()
	expire := c.opts.ProducerIDExpiration > 0 && nowMs-c.pids.expiredMs >= c.opts.ExpirationCheckInterval.Milliseconds()
	if expire {
		c.pids.expiredMs = nowMs
	}
	c.pids.Unlock()
	if expire {
		if _, err := c.expireProducers(c.opts.ProducerIDExpiration); err != nil {
			c.log.Warn("producer states not expired", "err", err)
		}
	}
	return c.txn.Tick(ctx)
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

// VerifyTxnOffsetCommit is the transaction coordinator's
// (txn.Coordinator.VerifyTxnOffsetCommit): groups.TxnVerifier.
func (c *Coordinator) VerifyTxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) int16 {
	return c.txn.VerifyTxnOffsetCommit(ctx, req)
}
