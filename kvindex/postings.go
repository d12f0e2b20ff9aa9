package kvindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/internal/keyspan"
)

// Posting layout; see the package documentation.
const (
	// postingFormat is the first byte of a posting's value, its format version.
	postingFormat byte = 1
	// postingHeaderLen is the length of a posting key before the key length.
	postingHeaderLen = 1 + 16 + 4
	// maxPostingValueLen bounds a posting value: the format byte and two uvarints.
	maxPostingValueLen = 1 + 2*binary.MaxVarintLen64
)

// ErrBadPosting reports a posting key or value that does not decode.
var ErrBadPosting = errors.New("kvindex: malformed posting")

// Postings is the per-key posting index of hierarchical topics (hierarchical.enabled):
// for each (topic, partition, key) the batches holding a record with that key, by
// their base and last offsets. It shares the coordinator's Pebble database under its
// own key family byte, as Index does, and is written the same way: Apply inside the
// Pebble batch that assigns a commit's offsets. Postings are keyed by offsets, not by
// where the batch is stored, so they stay true when consolidation moves batches into
// segments; a reader resolves each posting to the batch's current coordinates. A
// Postings is safe for concurrent use.
type Postings struct {
	db     *pebble.DB
	prefix byte
	// commit commits the batches the posting index writes itself (WithCommit).
	commit CommitFunc
}

// Posting is one batch holding a key: its base and last offsets, and its length in
// bytes when it was committed (compaction may have made it shorter since).
type Posting struct {
	BaseOffset int64
	LastOffset int64
	Bytes      int32
}

// NewPostings returns the posting index stored in db under keys starting with prefix,
// a key family byte the caller reserves for it (not the key index's). It does no I/O.
func NewPostings(db *pebble.DB, prefix byte) *Postings {
	return &Postings{db: db, prefix: prefix, commit: commitBatch}
}

// WithCommit makes the posting index commit the batches it writes itself
// through fn (see Index.WithCommit). It returns p.
func (p *Postings) WithCommit(fn CommitFunc) *Postings {
	p.commit = fn
	return p
}

// appendKeyPrefix appends the prefix shared by every posting of (topicID, partition,
// key): family, topic id, partition, uvarint key length, key. The length makes the
// prefix of one key never a prefix of another's.
func (p *Postings) appendKeyPrefix(dst []byte, topicID [16]byte, partition int32, key []byte) []byte {
	dst = append(dst, p.prefix)
	dst = append(dst, topicID[:]...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(partition))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

// appendPostingKey appends the key of the posting of key's batch at baseOffset.
func (p *Postings) appendPostingKey(dst []byte, topicID [16]byte, partition int32, key []byte, baseOffset int64) []byte {
	dst = p.appendKeyPrefix(dst, topicID, partition, key)
	return binary.BigEndian.AppendUint64(dst, uint64(baseOffset))
}

// markerKey returns the key of topicID's rebuild marker: partition bytes ff ff ff ff
// and nothing after, above every posting of the topic.
func (p *Postings) markerKey(topicID [16]byte) []byte {
	k := make([]byte, 0, postingHeaderLen)
	k = append(k, p.prefix)
	k = append(k, topicID[:]...)
	return binary.BigEndian.AppendUint32(k, 0xffffffff)
}

// topicBounds returns [lower, upper) covering every posting of topicID and its marker.
func (p *Postings) topicBounds(topicID [16]byte) (lower, upper []byte) {
	lower = make([]byte, 0, postingHeaderLen)
	lower = append(append(lower, p.prefix), topicID[:]...)
	lower = binary.BigEndian.AppendUint32(lower, 0)
	return lower, append(p.markerKey(topicID), 0)
}

// postingBounds returns [lower, upper) covering every posting of topicID, marker
// excluded.
func (p *Postings) postingBounds(topicID [16]byte) (lower, upper []byte) {
	lower, _ = p.topicBounds(topicID)
	return lower, p.markerKey(topicID)
}

// encodePostingValue appends the value of a posting to dst: the format byte, the
// batch's last offset minus its base offset and its byte length, as uvarints.
func encodePostingValue(dst []byte, base, last int64, size int32) []byte {
	dst = append(dst, postingFormat)
	dst = binary.AppendUvarint(dst, uint64(last-base))
	return binary.AppendUvarint(dst, uint64(size))
}

// decodePosting decodes a posting's key (after the key prefix, kp bytes long) and
// value.
func decodePosting(k []byte, kp int, v []byte) (Posting, error) {
	if len(k) != kp+8 {
		return Posting{}, fmt.Errorf("%w: key of %d bytes, want %d", ErrBadPosting, len(k), kp+8)
	}
	base := binary.BigEndian.Uint64(k[kp:])
	if base > 1<<63-1 {
		return Posting{}, fmt.Errorf("%w: negative base offset", ErrBadPosting)
	}
	return DecodePostingValue(int64(base), v)
}

// DecodePostingValue decodes a posting value of the batch at base: it checks the
// format byte, that the last offset is a delta that does not overflow, and that the
// byte length fits an int32.
func DecodePostingValue(base int64, v []byte) (Posting, error) {
	if len(v) == 0 || v[0] != postingFormat {
		return Posting{}, fmt.Errorf("%w: value format %x, want %d", ErrBadPosting, v, postingFormat)
	}
	delta, n := binary.Uvarint(v[1:])
	if n <= 0 {
		return Posting{}, fmt.Errorf("%w: value %x", ErrBadPosting, v)
	}
	size, m := binary.Uvarint(v[1+n:])
	if m <= 0 || 1+n+m != len(v) || size > 1<<31-1 {
		return Posting{}, fmt.Errorf("%w: value %x", ErrBadPosting, v)
	}
	if base < 0 || delta > uint64(1<<63-1-base) {
		return Posting{}, fmt.Errorf("%w: last offset overflows: base %d delta %d", ErrBadPosting, base, delta)
	}
	return Posting{BaseOffset: base, LastOffset: base + int64(delta), Bytes: int32(size)}, nil
}

// Apply adds to b the postings of one committed batch of partition of topicID holding
// offsets baseOffset..lastOffset, size bytes long: one per distinct non-nil key among keys, however
// often it occurs in the batch. The caller commits b with the offsets it assigned, so
// a posting is never visible before its batch is committed. A negative partition is
// ignored.
func (p *Postings) Apply(b *pebble.Batch, topicID [16]byte, partition int32, baseOffset, lastOffset int64, size int32, keys [][]byte) {
	if partition < 0 {
		return
	}
	var (
		kbuf [128]byte
		vbuf [maxPostingValueLen]byte
		seen map[string]struct{} // only for batches of many keys
	)
	v := encodePostingValue(vbuf[:0], baseOffset, lastOffset, size)
	for i, key := range keys {
		if key == nil || dupKey(keys[:i], key, &seen) {
			continue
		}
		k := p.appendPostingKey(kbuf[:0], topicID, partition, key, baseOffset)
		_ = b.Set(k, v, nil) // fails only on a batch being committed
	}
}

// dupKey reports whether key occurs in before: a linear scan for a few keys, a set of
// them past that (built once, kept in *seen).
func dupKey(before [][]byte, key []byte, seen *map[string]struct{}) bool {
	const linear = 16
	if len(before) < linear {
		for _, k := range before {
			if k != nil && bytes.Equal(k, key) {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(before))
		for _, k := range before {
			if k != nil {
				(*seen)[string(k)] = struct{}{}
			}
		}
	}
	if _, ok := (*seen)[string(key)]; ok {
		return true
	}
	(*seen)[string(key)] = struct{}{}
	return false
}

// Find calls fn, in offset order, with each posting of key in partition of topicID
// whose batch may hold offsets at or after from (its last offset is at least from),
// until fn returns false. Postings of batches wholly below from are skipped; the
// caller skips those below the log start, which DeleteBelow removes.
func (p *Postings) Find(topicID [16]byte, partition int32, key []byte, from int64, fn func(Posting) bool) error {
	if partition < 0 {
		return fmt.Errorf("kvindex: find postings in negative partition %d", partition)
	}
	kp := p.appendKeyPrefix(nil, topicID, partition, key)
	upper := keyspan.PrefixEnd(kp)
	// The batch holding from starts at or before it: seek to the last posting
	// at or below from, then go on.
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: kp, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("kvindex: find postings: %w", err)
	}
	defer it.Close()
	seek := binary.BigEndian.AppendUint64(append([]byte(nil), kp...), uint64(max(from, 0)))
	ok := it.SeekLT(append(seek, 0))
	if !ok {
		ok = it.First()
	}
	for ; ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("kvindex: find postings: %w", err)
		}
		post, err := decodePosting(it.Key(), len(kp), v)
		if err != nil {
			return err
		}
		if post.LastOffset < from {
			continue
		}
		if !fn(post) {
			return nil
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("kvindex: find postings: %w", err)
	}
	return nil
}

// StaleBelow returns the base offset below which every posting of key in partition of
// topicID is stale, its batch ending below logStart (retention or DeleteRecords removed
// it), for DeleteBelow; found is false when no posting is stale. A batch the log start
// cuts into is not stale: its records from the log start on are still read. It takes
// one seek, two when the log start cuts into a batch of the key.
func (p *Postings) StaleBelow(topicID [16]byte, partition int32, key []byte, logStart int64) (bound int64, found bool, err error) {
	if partition < 0 || logStart <= 0 {
		return 0, false, nil
	}
	kp := p.appendKeyPrefix(nil, topicID, partition, key)
	upper := binary.BigEndian.AppendUint64(append([]byte(nil), kp...), uint64(logStart))
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: kp, UpperBound: upper})
	if err != nil {
		return 0, false, fmt.Errorf("kvindex: postings below the log start: %w", err)
	}
	defer it.Close()
	if !it.Last() {
		return 0, false, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return 0, false, fmt.Errorf("kvindex: postings below the log start: %w", err)
	}
	last, err := decodePosting(it.Key(), len(kp), v)
	if err != nil {
		return 0, false, err
	}
	if last.LastOffset < logStart {
		return logStart, true, nil // batches never overlap: all below are stale
	}
	// The log start cuts into the key's last batch below it: the ones
	// before that batch are stale, if any.
	return last.BaseOffset, it.Prev(), it.Error()
}

// DeleteBelow adds to b the deletion of key's postings in partition of topicID whose
// batches start below bound, as one range deletion: the lazy cleanup of what retention
// and DeleteRecords left below the log start, with the bound StaleBelow returns.
// Postings are only ever added at the high watermark, so this may be committed at any
// time.
func (p *Postings) DeleteBelow(b *pebble.Batch, topicID [16]byte, partition int32, key []byte, bound int64) {
	if partition < 0 || bound <= 0 {
		return
	}
	kp := p.appendKeyPrefix(nil, topicID, partition, key)
	upper := binary.BigEndian.AppendUint64(append([]byte(nil), kp...), uint64(bound))
	_ = b.DeleteRange(kp, upper, nil)
}

// SweepPartition deletes, in unsynced writes of a few MiB, every posting of partition
// of topicID whose batch ends below logStart, whatever its key: the cleanup of keys no
// reader asks for any more after retention moved the log start. It reads every posting
// of the partition, so callers run it now and then, not at every move of the log start.
// It returns the number deleted.
func (p *Postings) SweepPartition(ctx context.Context, topicID [16]byte, partition int32, logStart int64) (int, error) {
	if partition < 0 || logStart <= 0 {
		return 0, nil
	}
	lower := make([]byte, 0, postingHeaderLen)
	lower = append(append(lower, p.prefix), topicID[:]...)
	lower = binary.BigEndian.AppendUint32(lower, uint32(partition))
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: keyspan.PrefixEnd(lower)})
	if err != nil {
		return 0, fmt.Errorf("kvindex: sweep postings: %w", err)
	}
	defer it.Close()
	b := p.db.NewBatch()
	defer func() { b.Close() }()
	deleted := 0
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		n, m := binary.Uvarint(k[postingHeaderLen:])
		if m <= 0 {
			return deleted, fmt.Errorf("%w: key %x", ErrBadPosting, k)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return deleted, fmt.Errorf("kvindex: sweep postings: %w", err)
		}
		po, err := decodePosting(k, postingHeaderLen+m+int(n), v)
		if err != nil {
			return deleted, err
		}
		if po.LastOffset >= logStart {
			continue
		}
		_ = b.Delete(k, nil)
		deleted++
		if b.Len() >= rebuildFlushBytes {
			if err := ctx.Err(); err != nil {
				return deleted, err
			}
			if err := p.commit(b, pebble.NoSync); err != nil {
				return deleted, fmt.Errorf("kvindex: sweep postings: %w", err)
			}
			b.Reset()
		}
	}
	if err := it.Error(); err != nil {
		return deleted, fmt.Errorf("kvindex: sweep postings: %w", err)
	}
	if err := p.commit(b, pebble.NoSync); err != nil {
		return deleted, fmt.Errorf("kvindex: sweep postings: %w", err)
	}
	return deleted, nil
}

// DropTopic adds to b the deletion of every posting of topicID and of its rebuild
// marker, as one range deletion: for a deleted topic, or one whose hierarchical.enabled
// was turned off.
func (p *Postings) DropTopic(b *pebble.Batch, topicID [16]byte) {
	lower, upper := p.topicBounds(topicID)
	_ = b.DeleteRange(lower, upper, nil)
}

// SetReady adds to b the change of topicID's readiness, as Index.SetReady: not ready
// marks the topic's postings as being built from the log (RebuildPostings).
func (p *Postings) SetReady(b *pebble.Batch, topicID [16]byte, ready bool) {
	if ready {
		_ = b.Delete(p.markerKey(topicID), nil)
		return
	}
	_ = b.Set(p.markerKey(topicID), markerValue, nil)
}

// Ready reports whether topicID's postings are complete: false while they are being
// built from the log, or when the database cannot be read.
func (p *Postings) Ready(topicID [16]byte) bool {
	rebuilding, err := p.rebuilding(topicID)
	return err == nil && !rebuilding
}

// rebuilding reports whether topicID carries a rebuild marker.
func (p *Postings) rebuilding(topicID [16]byte) (bool, error) {
	_, closer, err := p.db.Get(p.markerKey(topicID))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kvindex: read postings rebuild marker: %w", err)
	}
	closer.Close()
	return true, nil
}
