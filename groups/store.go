package groups

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/floe-io/floe/groups/sharegroups"
	"github.com/floe-io/floe/internal/keyspan"
	"github.com/floe-io/floe/internal/pebblelog"
	"github.com/floe-io/floe/internal/valenc"
)

// On-disk layout: see the package doc for the key families.

const (
	famMeta   byte = 'm'
	famGroup  byte = 'g'
	famOffset byte = 'o'
	famTxn    byte = 'p'

	valueV1 = valenc.Version1
	valueV2 = valenc.Version2

	// formatVersion is the on-disk format this code writes and reads.
	formatVersion = 1
)

var formatKey = []byte{famMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// groupRecord is what survives a restart of a group: enough to list and
// describe it as Empty and to expire its offsets.
type groupRecord struct {
	protocolType string
	generation   int32
	// emptySinceMs is when the group last became Empty; 0 when it was not
	// empty at the time of the write.
	emptySinceMs int64
	// consumer marks a KIP-848 consumer group, share a KIP-932 share
	// group; generation is then its group epoch.
	consumer bool
	share    bool
}

// offsetRecord is one committed offset.
type offsetRecord struct {
	offset      int64
	leaderEpoch int32
	commitMs    int64
	metadata    string
	// topicID is the id the topic had at the commit (zero: unknown); a
	// recreated topic does not inherit its predecessor's offsets.
	topicID topicID
	// seq orders the writes of a partition's offsets, committed and
	// pending (Kafka's record offset in __consumer_offsets): a
	// transaction that commits does not overwrite an offset committed
	// after its TxnOffsetCommit. 0 for offsets written before seq existed.
	seq uint64
}

// pendingRecord is one pending transactional offset (TxnOffsetCommit) of a
// producer, committed or dropped when its transaction ends.
type pendingRecord struct {
	offsetRecord
	// producerEpoch is the epoch of the TxnOffsetCommit that wrote it.
	producerEpoch int16
}

func groupKey(group string) []byte {
	k := make([]byte, 0, 1+len(group))
	k = append(k, famGroup)
	return append(k, group...)
}

// offsetPrefix is the prefix of every offset key of group.
func offsetPrefix(group string) []byte {
	k := make([]byte, 0, 3+len(group))
	k = append(k, famOffset)
	k = binary.BigEndian.AppendUint16(k, uint16(len(group)))
	return append(k, group...)
}

func offsetKey(group, topic string, partition int32) []byte {
	k := offsetPrefix(group)
	k = binary.BigEndian.AppendUint16(k, uint16(len(topic)))
	k = append(k, topic...)
	return binary.BigEndian.AppendUint32(k, uint32(partition))
}

// parseOffsetKey splits an offset key into its group, topic and partition.
func parseOffsetKey(k []byte) (group, topic string, partition int32, err error) {
	bad := fmt.Errorf("groups: bad offset key %x", k)
	if len(k) < 3 || k[0] != famOffset {
		return "", "", 0, bad
	}
	k = k[1:]
	n := int(binary.BigEndian.Uint16(k))
	k = k[2:]
	if len(k) < n+2 {
		return "", "", 0, bad
	}
	group, k = string(k[:n]), k[n:]
	n = int(binary.BigEndian.Uint16(k))
	k = k[2:]
	if len(k) != n+4 {
		return "", "", 0, bad
	}
	topic = string(k[:n])
	partition = int32(binary.BigEndian.Uint32(k[n:]))
	return group, topic, partition, nil
}

// pendingPrefix is the prefix of every pending offset key of group.
func pendingPrefix(group string) []byte {
	k := make([]byte, 0, 3+len(group))
	k = append(k, famTxn)
	k = binary.BigEndian.AppendUint16(k, uint16(len(group)))
	return append(k, group...)
}

// pendingProducerPrefix is the prefix of the pending offset keys of one
// producer in group.
func pendingProducerPrefix(group string, producerID int64) []byte {
	return binary.BigEndian.AppendUint64(pendingPrefix(group), uint64(producerID))
}

func pendingKey(group string, producerID int64, topic string, partition int32) []byte {
	k := pendingProducerPrefix(group, producerID)
	k = binary.BigEndian.AppendUint16(k, uint16(len(topic)))
	k = append(k, topic...)
	return binary.BigEndian.AppendUint32(k, uint32(partition))
}

// parsePendingKey splits a pending offset key into its group, producer id,
// topic and partition.
func parsePendingKey(k []byte) (group string, producerID int64, topic string, partition int32, err error) {
	bad := fmt.Errorf("groups: bad pending offset key %x", k)
	if len(k) < 3 || k[0] != famTxn {
		return "", 0, "", 0, bad
	}
	k = k[1:]
	n := int(binary.BigEndian.Uint16(k))
	k = k[2:]
	if len(k) < n+8+2 {
		return "", 0, "", 0, bad
	}
	group, k = string(k[:n]), k[n:]
	producerID, k = int64(binary.BigEndian.Uint64(k)), k[8:]
	n = int(binary.BigEndian.Uint16(k))
	k = k[2:]
	if len(k) != n+4 {
		return "", 0, "", 0, bad
	}
	topic = string(k[:n])
	partition = int32(binary.BigEndian.Uint32(k[n:]))
	return group, producerID, topic, partition, nil
}

func (r groupRecord) encode() []byte {
	v := []byte{valueV1}
	v = valenc.AppendString(v, r.protocolType)
	v = binary.AppendVarint(v, int64(r.generation))
	v = binary.AppendVarint(v, r.emptySinceMs)
	typ := byte(0)
	switch {
	case r.consumer:
		typ = 1
	case r.share:
		typ = 2
	}
	return append(v, typ)
}

// encode writes a committed offset in format 2: format 1's fields, then
// seq.
func (r offsetRecord) encode() []byte {
	v := r.appendFields([]byte{valueV2})
	return binary.AppendUvarint(v, r.seq)
}

// appendFields appends the fields every offset layout starts with.
func (r offsetRecord) appendFields(v []byte) []byte {
	v = binary.AppendVarint(v, r.offset)
	v = binary.AppendVarint(v, int64(r.leaderEpoch))
	v = binary.AppendVarint(v, r.commitMs)
	v = valenc.AppendString(v, r.metadata)
	return append(v, r.topicID[:]...)
}

func (r pendingRecord) encode() []byte {
	v := r.appendFields([]byte{valueV1})
	v = binary.AppendUvarint(v, r.seq)
	return binary.AppendVarint(v, int64(r.producerEpoch))
}

func decodeGroupRecord(b []byte) (groupRecord, error) {
	d := valenc.New("group", b)
	var r groupRecord
	r.protocolType = d.String()
	r.generation = int32(d.Varint())
	r.emptySinceMs = d.Varint()
	switch d.Byte() {
	case 1:
		r.consumer = true
	case 2:
		r.share = true
	}
	return r, d.Err()
}

// decodeOffsetRecord reads a committed offset of format 1 (seq 0) or 2.
func decodeOffsetRecord(b []byte) (offsetRecord, error) {
	version := byte(valueV1)
	if len(b) > 0 && b[0] == valueV2 {
		version = valueV2
	}
	d := valenc.NewVersion("offset", version, b)
	r := decodeOffsetFields(d)
	if version == valueV2 {
		r.seq = d.Uvarint()
	}
	return r, d.Done("offset")
}

func decodeOffsetFields(d *valenc.Decoder) offsetRecord {
	var r offsetRecord
	r.offset = d.Varint()
	r.leaderEpoch = int32(d.Varint())
	r.commitMs = d.Varint()
	r.metadata = d.String()
	for i := range r.topicID {
		r.topicID[i] = d.Byte()
	}
	return r
}

func decodePendingRecord(b []byte) (pendingRecord, error) {
	d := valenc.New("pending offset", b)
	r := pendingRecord{offsetRecord: decodeOffsetFields(d)}
	r.seq = d.Uvarint()
	r.producerEpoch = int16(d.Varint())
	return r, d.Done("pending offset")
}

// openDB opens Pebble in dir (on fs; nil is the OS filesystem) and checks (or writes) the format version.
func openDB(dir string, fs vfs.FS, log *slog.Logger, replicated Log) (*pebble.DB, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebblelog.New(log, "groups"), FS: fs})
	if err != nil {
		return nil, fmt.Errorf("groups: open pebble %s: %w", dir, err)
	}
	v, closer, err := db.Get(formatKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		b := batch{db.NewBatch(), replicated, db}
		_ = b.b.Set(formatKey, binary.BigEndian.AppendUint64(nil, formatVersion), nil)
		if err := b.commit(); err != nil {
			db.Close()
			return nil, fmt.Errorf("groups: write format: %w", err)
		}
	case err != nil:
		db.Close()
		return nil, fmt.Errorf("groups: read format: %w", err)
	default:
		ok := len(v) == 8 && binary.BigEndian.Uint64(v) == formatVersion
		closer.Close()
		if !ok {
			db.Close()
			return nil, fmt.Errorf("groups: %s holds an unknown format %x", dir, v)
		}
	}
	return db, nil
}

// loaded is the durable state read at Open.
type loaded struct {
	groups    map[string]groupRecord
	stable    map[string]stableRecord
	consumers map[string]*loadedConsumer
	shares    map[string]*sharegroups.Loaded
	configs   map[string]map[string]string
	offsets   map[string]map[string]map[int32]offsetRecord
	pending   map[string]map[int64]*txnOffsets
	// maxSeq is the highest seq of any offset, committed or pending.
	maxSeq uint64
}

// loadedConsumer is a KIP-848 group's consumer-family keys as read at Open.
type loadedConsumer struct {
	state    *consumerStateRecord // nil when the group has no state key
	stateRaw []byte
	members  []*consumerMember // each with written set to its value
}

func loadAll(db *pebble.DB) (loaded, error) {
	l := loaded{groups: make(map[string]groupRecord), stable: make(map[string]stableRecord),
		consumers: make(map[string]*loadedConsumer), shares: make(map[string]*sharegroups.Loaded), offsets: make(map[string]map[string]map[int32]offsetRecord),
		pending: make(map[string]map[int64]*txnOffsets)}
	err := keyspan.ScanFamily(db, famGroup, func(k, v []byte) error {
		r, err := decodeGroupRecord(v)
		if err != nil {
			return fmt.Errorf("group %q: %w", k[1:], err)
		}
		l.groups[string(k[1:])] = r
		return nil
	})
	if err != nil {
		return l, err
	}
	err = keyspan.ScanFamily(db, famStable, func(k, v []byte) error {
		r, err := decodeStableRecord(v)
		if err != nil {
			return fmt.Errorf("stable group %q: %w", k[1:], err)
		}
		l.stable[string(k[1:])] = r
		return nil
	})
	if err != nil {
		return l, err
	}
	if err := loadConsumers(db, l.consumers); err != nil {
		return l, err
	}
	if err := sharegroups.Load(db, l.shares); err != nil {
		return l, err
	}
	if l.configs, err = loadGroupConfigs(db); err != nil {
		return l, err
	}
	err = keyspan.ScanFamily(db, famOffset, func(k, v []byte) error {
		group, topic, partition, err := parseOffsetKey(k)
		if err != nil {
			return err
		}
		r, err := decodeOffsetRecord(v)
		if err != nil {
			return fmt.Errorf("offset %s/%s/%d: %w", group, topic, partition, err)
		}
		topics := l.offsets[group]
		if topics == nil {
			topics = make(map[string]map[int32]offsetRecord)
			l.offsets[group] = topics
		}
		parts := topics[topic]
		if parts == nil {
			parts = make(map[int32]offsetRecord)
			topics[topic] = parts
		}
		parts[partition] = r
		l.maxSeq = max(l.maxSeq, r.seq)
		return nil
	})
	if err != nil {
		return l, err
	}
	return l, loadPending(db, &l)
}

// loadPending reads the pending transactional offsets into l.
func loadPending(db *pebble.DB, l *loaded) error {
	return keyspan.ScanFamily(db, famTxn, func(k, v []byte) error {
		group, producerID, topic, partition, err := parsePendingKey(k)
		if err != nil {
			return err
		}
		r, err := decodePendingRecord(v)
		if err != nil {
			return fmt.Errorf("pending offset %s/%d/%s/%d: %w", group, producerID, topic, partition, err)
		}
		txns := l.pending[group]
		if txns == nil {
			txns = make(map[int64]*txnOffsets)
			l.pending[group] = txns
		}
		t := txns[producerID]
		if t == nil {
			t = newTxnOffsets(r.producerEpoch)
			txns[producerID] = t
		}
		t.put(topic, partition, r)
		l.maxSeq = max(l.maxSeq, r.seq)
		return nil
	})
}

// batch collects the writes of one operation, committed through the log
// when there is one, else with pebble.Sync. It is the share group
// coordinator's sharegroups.Batch too (share.go).
type batch struct {
	b   *pebble.Batch
	log Log
	db  *pebble.DB
}

func (gs *Groups) newBatch() batch { return batch{gs.db.NewBatch(), gs.opts.Log, gs.db} }

func (b batch) setGroup(name string, r groupRecord) {
	b.b.Set(groupKey(name), r.encode(), nil)
}

// setStable writes a Stable group's members; deleteStable forgets them
// (the group left Stable).
func (b batch) setStable(name string, r stableRecord) {
	b.b.Set(stableKey(name), r.encode(), nil)
}

func (b batch) deleteStable(name string) {
	b.b.Delete(stableKey(name), nil)
}

func (b batch) deleteGroup(name string) {
	b.b.Delete(groupKey(name), nil)
	b.b.Delete(stableKey(name), nil)
	b.deleteConsumer(name)
	sharegroups.DeleteGroup(b, name)
	p := offsetPrefix(name)
	b.b.DeleteRange(p, keyspan.PrefixEnd(p), nil)
	p = pendingPrefix(name)
	b.b.DeleteRange(p, keyspan.PrefixEnd(p), nil)
}

// deleteConsumer forgets a KIP-848 group's state and members.
func (b batch) deleteConsumer(name string) {
	p := consumerPrefix(name)
	b.b.DeleteRange(p, keyspan.PrefixEnd(p), nil)
}

func (b batch) setOffset(group, topic string, partition int32, r offsetRecord) {
	b.b.Set(offsetKey(group, topic, partition), r.encode(), nil)
}

func (b batch) deleteOffset(group, topic string, partition int32) {
	b.b.Delete(offsetKey(group, topic, partition), nil)
}

func (b batch) setPending(group string, producerID int64, topic string, partition int32, r pendingRecord) {
	b.b.Set(pendingKey(group, producerID, topic, partition), r.encode(), nil)
}

func (b batch) deletePending(group string, producerID int64, topic string, partition int32) {
	b.b.Delete(pendingKey(group, producerID, topic, partition), nil)
}

// deletePendingProducer forgets every pending offset of producerID in group.
func (b batch) deletePendingProducer(group string, producerID int64) {
	p := pendingProducerPrefix(group, producerID)
	b.b.DeleteRange(p, keyspan.PrefixEnd(p), nil)
}

func (b batch) empty() bool { return b.b.Empty() }

// commit writes the batch durably and releases it.
func (b batch) commit() error {
	defer b.b.Close()
	if b.b.Empty() {
		return nil
	}
	if b.log != nil {
		return b.log.Commit(b.b)
	}
	return b.b.Commit(pebble.Sync)
}

// startLog is a Log that also appends without waiting, as package ha's
// does (coordinator.Log's Start).
type startLog interface {
	Start(b *pebble.Batch) (wait func() error, err error)
}

// start writes the batch as commit does, but returns once it is applied,
// before it is durable: wait returns once it is (the log has it, or
// Pebble synced its WAL) and releases the batch. Nothing derived from the
// batch may be answered before wait returns; call it without the locks
// the next writes need, so that they are synced together. A Log without
// Start commits at once.
func (b batch) start(db *pebble.DB) (wait func() error, err error) {
	if b.b.Empty() || (b.log != nil && !isStartLog(b.log)) {
		return noWait, b.commit()
	}
	if b.log != nil {
		w, err := b.log.(startLog).Start(b.b)
		if err != nil {
			b.b.Close()
			return nil, err
		}
		return func() error {
			defer b.b.Close()
			return w()
		}, nil
	}
	if err := db.ApplyNoSyncWait(b.b, pebble.Sync); err != nil {
		b.b.Close()
		return nil, err
	}
	return func() error {
		defer b.b.Close()
		return b.b.SyncWait()
	}, nil
}

func isStartLog(l Log) bool {
	_, ok := l.(startLog)
	return ok
}

func noWait() error { return nil }

// Log is the replicated log the group state is a view of; see
// coordinator.Log, which package ha's log implements too.
type Log interface {
	// Commit appends b's changes to the log and, once the log has them,
	// applies b to its database. An error means b was not applied.
	Commit(b *pebble.Batch) error
}

// Checkpoint writes a consistent copy of the group state's Pebble to dir (a
// new directory), for the snapshots of package ha. It first writes an empty
// batch through the log, so that the copy records a recent log position
// even when no group changed for a while.
func (gs *Groups) Checkpoint(dir string) error {
	if !gs.enter() {
		return ErrClosed
	}
	defer gs.leave()
	if gs.opts.Log != nil {
		b := gs.db.NewBatch()
		defer b.Close()
		if err := gs.opts.Log.Commit(b); err != nil {
			return fmt.Errorf("groups: checkpoint: %w", err)
		}
	}
	if err := gs.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("groups: checkpoint: %w", err)
	}
	return nil
}

func msOf(t time.Time) int64 { return t.UnixMilli() }
