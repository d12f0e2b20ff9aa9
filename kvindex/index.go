package kvindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble"
)

// Key layout; see the package documentation.
const (
	// keyHeaderLen is the length of an entry key before the raw key bytes.
	keyHeaderLen = 1 + 16 + 4
	// offsetLen is the length of an entry's value, a big-endian int64 offset.
	offsetLen = 8
)

// markerValue is the value of a topic's rebuild marker; only its presence matters.
var markerValue = []byte{1}

// Index is the key index of every indexed topic, stored in a Pebble database it shares
// with the coordinator. Writes go into the caller's batches (Apply, DropTopic, SetReady)
// so that they commit atomically with the coordinator's own state; reads (Lookup, Ready)
// go to the database. An Index is safe for concurrent use.
type Index struct {
	db     *pebble.DB
	prefix byte
	keys   sync.Pool // *[]byte scratch buffers for read keys
	// commit commits the batches the index writes itself (WithCommit).
	commit CommitFunc
}

// Entry is one record's key as Apply indexes it: the record at base offset + OffsetDelta
// carries Key, and Tombstone says its value is null.
type Entry struct {
	// Key is the record's key. A nil key (null: the record has no key) is not indexed.
	Key []byte
	// OffsetDelta is the record's offset minus its batch's base offset.
	OffsetDelta int32
	// Tombstone is set when the record's value is null: the key's entry is deleted.
	Tombstone bool
}

// New returns the index stored in db under keys starting with prefix, a key family
// byte the caller reserves for it: nothing else may write keys starting with prefix.
// The index has no state outside db, so New does no I/O.
func New(db *pebble.DB, prefix byte) *Index {
	return &Index{db: db, prefix: prefix, commit: commitBatch}
}

// CommitFunc commits a batch the index wrote (a rebuild's, a sweep's) with
// the given options.
type CommitFunc func(b *pebble.Batch, opts *pebble.WriteOptions) error

// commitBatch is the default CommitFunc: the batch's own Commit.
func commitBatch(b *pebble.Batch, opts *pebble.WriteOptions) error { return b.Commit(opts) }

// WithCommit makes the index commit the batches it writes itself through
// fn: the coordinator's, which appends them to its replicated log first.
// It returns ix.
func (ix *Index) WithCommit(fn CommitFunc) *Index {
	ix.commit = fn
	return ix
}

// appendKey appends the entry key of (topicID, partition, key) to dst.
func (ix *Index) appendKey(dst []byte, topicID [16]byte, partition int32, key []byte) []byte {
	dst = append(dst, ix.prefix)
	dst = append(dst, topicID[:]...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(partition))
	return append(dst, key...)
}

// markerKey returns the key of topicID's rebuild marker: partition bytes ff ff ff ff
// with no key, after every entry of the topic.
func (ix *Index) markerKey(topicID [16]byte) []byte {
	return ix.appendKey(make([]byte, 0, keyHeaderLen), topicID, -1, nil)
}

// topicBounds returns [lower, upper) covering every key of topicID, marker included:
// the marker is exactly keyHeaderLen bytes, so one more byte bounds it from above.
func (ix *Index) topicBounds(topicID [16]byte) (lower, upper []byte) {
	lower = ix.appendKey(make([]byte, 0, keyHeaderLen), topicID, 0, nil)
	upper = append(ix.markerKey(topicID), 0)
	return lower, upper
}

// entryBounds returns [lower, upper) covering every entry of topicID, marker excluded.
func (ix *Index) entryBounds(topicID [16]byte) (lower, upper []byte) {
	lower = ix.appendKey(make([]byte, 0, keyHeaderLen), topicID, 0, nil)
	upper = ix.appendKey(make([]byte, 0, keyHeaderLen), topicID, -1<<31, nil)
	return lower, upper
}

// Apply adds to b the index updates for one committed batch of partition of topicID
// whose first record got baseOffset: each entry with a non-nil key sets that key to
// baseOffset+OffsetDelta, or deletes it for a tombstone. Entries are applied in order,
// so within one call (and one Pebble batch) a later entry for a key wins over an earlier
// one, as the later record does in the log.
//
// The caller commits b (with pebble.Sync) together with the offsets it assigned, so an
// entry is never visible before the record it points at is committed. partition must
// not be negative; Apply ignores a call with a negative partition.
func (ix *Index) Apply(b *pebble.Batch, topicID [16]byte, partition int32, baseOffset int64, entries []Entry) {
	if partition < 0 {
		return
	}
	var scratch [128]byte
	k := scratch[:0]
	for i := range entries {
		e := &entries[i]
		if e.Key == nil {
			continue
		}
		k = ix.appendKey(k[:0], topicID, partition, e.Key)
		ix.put(b, k, baseOffset+int64(e.OffsetDelta), e.Tombstone)
	}
}

// ApplyNewer is Apply for entries that may be older than what the index
// holds: a committed transaction's held keys, applied at its marker. An
// entry is written only where it is newer than the key's current entry
// (a tombstone deletes only an older entry), so that a later write to the
// key, committed meanwhile, is not overwritten by the transaction's.
func (ix *Index) ApplyNewer(b *pebble.Batch, topicID [16]byte, partition int32, baseOffset int64, entries []Entry) error {
	var k []byte
	for i := range entries {
		e := &entries[i]
		if e.Key == nil {
			continue
		}
		offset := baseOffset + int64(e.OffsetDelta)
		cur, found, err := ix.Lookup(topicID, partition, e.Key)
		if err != nil {
			return err
		}
		if found && cur >= offset {
			continue
		}
		k = ix.appendKey(k[:0], topicID, partition, e.Key)
		if err := ix.put(b, k, offset, e.Tombstone); err != nil {
			return err
		}
	}
	return nil
}

// put adds the update of one entry key to b. Pebble copies key and value into the
// batch, so callers may reuse their buffers.
func (ix *Index) put(b *pebble.Batch, key []byte, offset int64, tombstone bool) error {
	if tombstone {
		return b.Delete(key, nil)
	}
	var v [offsetLen]byte
	binary.BigEndian.PutUint64(v[:], uint64(offset))
	return b.Set(key, v[:], nil)
}

// Lookup returns the offset of the latest record with key in partition of topicID, as
// far as committed index writes know; found is false when the key has no entry (never
// written, or tombstoned). The offset may point at a record compaction has since removed
// or replaced: readers must check the key of the record they read back.
func (ix *Index) Lookup(topicID [16]byte, partition int32, key []byte) (offset int64, found bool, err error) {
	if partition < 0 {
		return 0, false, fmt.Errorf("kvindex: lookup in negative partition %d", partition)
	}
	bp, _ := ix.keys.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	k := ix.appendKey((*bp)[:0], topicID, partition, key)
	v, closer, err := ix.db.Get(k)
	*bp = k
	ix.keys.Put(bp)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("kvindex: lookup: %w", err)
	}
	defer closer.Close()
	if len(v) != offsetLen {
		return 0, false, fmt.Errorf("kvindex: entry value of %d bytes, want %d", len(v), offsetLen)
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

// LookupMany returns Lookup's offset of each of keys in partition of
// topicID, -1 for a key with no entry, in the order of keys. It seeks one
// iterator through the keys in sorted order, so that each seek starts from
// where the last one ended (Pebble then steps forward instead of descending
// every memtable and level again, as a Get does): a compaction pass asks
// for up to 4,096 keys at once, and key by key that was 1.78 s of a 30 s
// CPU profile of the lifecycle soak's broker (9% of its samples).
func (ix *Index) LookupMany(topicID [16]byte, partition int32, keys [][]byte) ([]int64, error) {
	if partition < 0 {
		return nil, fmt.Errorf("kvindex: lookup in negative partition %d", partition)
	}
	out := make([]int64, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	lower := ix.appendKey(make([]byte, 0, keyHeaderLen), topicID, partition, nil)
	// The next partition's first key bounds this one's from above; the
	// marker's partition, ff ff ff ff, is not a partition a lookup names.
	upper := ix.appendKey(make([]byte, 0, keyHeaderLen), topicID, partition+1, nil)
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("kvindex: lookup: %w", err)
	}
	k := lower
	for _, i := range order {
		k = append(k[:keyHeaderLen], keys[i]...)
		out[i] = -1
		if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, fmt.Errorf("kvindex: lookup: %w", err)
		}
		if len(v) != offsetLen {
			_ = it.Close()
			return nil, fmt.Errorf("kvindex: entry value of %d bytes, want %d", len(v), offsetLen)
		}
		out[i] = int64(binary.BigEndian.Uint64(v))
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("kvindex: lookup: %w", err)
	}
	return out, nil
}

// DropTopic adds to b the deletion of every entry of topicID and of its rebuild marker,
// as one range deletion. The coordinator calls it in the batch that deletes the topic or
// turns kv.index.enabled off; a Rebuild of the topic then stops with ErrRebuildAborted.
func (ix *Index) DropTopic(b *pebble.Batch, topicID [16]byte) {
	lower, upper := ix.topicBounds(topicID)
	_ = b.DeleteRange(lower, upper, nil) // fails only on a batch being committed
}

// SetReady adds to b the change of topicID's readiness. SetReady(b, id, false) marks the
// topic's index as being built from the log: lookups answer 503 until Rebuild finishes
// and marks it ready again. The marker is stored with the index, so a restart finds the
// topics whose rebuild it interrupted (Ready is false) and can start it again. A topic
// that was never marked is ready.
func (ix *Index) SetReady(b *pebble.Batch, topicID [16]byte, ready bool) {
	if ready {
		_ = b.Delete(ix.markerKey(topicID), nil)
		return
	}
	_ = b.Set(ix.markerKey(topicID), markerValue, nil)
}

// Ready reports whether topicID's index is complete: false from a committed
// SetReady(b, id, false) until Rebuild finishes, or when the database cannot be read. It
// reads the database (a memtable or block-cache hit when hot); callers that answer every
// lookup may keep the value in memory, updating it after their own SetReady commits.
func (ix *Index) Ready(topicID [16]byte) bool {
	rebuilding, err := ix.rebuilding(topicID)
	return err == nil && !rebuilding
}

// rebuilding reports whether topicID carries a rebuild marker.
func (ix *Index) rebuilding(topicID [16]byte) (bool, error) {
	_, closer, err := ix.db.Get(ix.markerKey(topicID))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kvindex: read rebuild marker: %w", err)
	}
	closer.Close()
	return true, nil
}
