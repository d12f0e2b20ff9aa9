package share

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/keyspan"
	"github.com/floe-io/floe/internal/valenc"
)

// On-disk layout: see the package doc for the key families.

// famPartition is the family tag of share-partition keys in the group
// coordinator's Pebble.
const famPartition byte = 'q'

// ErrCorrupt is returned (wrapped) for rows that do not decode, or that do
// not describe a share-partition.
var ErrCorrupt = errors.New("share: corrupt share-partition row")

// Op is the kind of a Mutation.
type Op uint8

// Mutation kinds, as a pebble.Batch takes them.
const (
	// OpSet writes Value at Key.
	OpSet Op = iota
	// OpDelete deletes Key.
	OpDelete
	// OpDeleteRange deletes the keys in [Key, End).
	OpDeleteRange
)

// Mutation is one write to the group coordinator's Pebble.
type Mutation struct {
	Op    Op
	Key   []byte
	Value []byte // OpSet
	End   []byte // OpDeleteRange: exclusive
}

// String formats m for tests and logs, naming keys by partition: "p7" is
// partition 7's head, "p7@12" its range from offset 12.
func (m Mutation) String() string {
	key := func(k []byte) string {
		id, first, isRange, err := ParseKey(k)
		switch {
		case err != nil:
			return fmt.Sprintf("%x", k)
		case isRange:
			return fmt.Sprintf("p%d@%d", id.Partition, first)
		}
		return fmt.Sprintf("p%d", id.Partition)
	}
	switch m.Op {
	case OpSet:
		return "set " + key(m.Key)
	case OpDelete:
		return "delete " + key(m.Key)
	case OpDeleteRange:
		return "delete-range " + key(m.Key) + " " + key(m.End)
	}
	return fmt.Sprintf("op(%d)", m.Op)
}

// Row is a key and its value, as read from Pebble.
type Row struct {
	Key, Value []byte
}

// GroupSpan returns the keys [lo, hi) of every share-partition of group:
// DeleteGroups drops them in one range deletion.
func GroupSpan(group string) (lo, hi []byte) {
	lo = binary.BigEndian.AppendUint16([]byte{famPartition}, uint16(len(group)))
	lo = append(lo, group...)
	return lo, keyspan.PrefixEnd(lo)
}

// TopicSpan returns the keys [lo, hi) of group's share-partitions of one
// topic (a deleted topic, DeleteShareGroupOffsets).
func TopicSpan(group string, topic coordapi.TopicID) (lo, hi []byte) {
	lo, _ = GroupSpan(group)
	lo = append(lo, topic[:]...)
	return lo, keyspan.PrefixEnd(lo)
}

// FamilySpan returns the keys [lo, hi) of every share-partition, for Open's
// scan.
func FamilySpan() (lo, hi []byte) { return []byte{famPartition}, []byte{famPartition + 1} }

// HeadKey is the key of share-partition id's head row; its ranges' keys
// extend it.
func HeadKey(id ID) []byte {
	k, _ := TopicSpan(id.Group, id.Topic)
	return binary.BigEndian.AppendUint32(k, uint32(id.Partition))
}

// DeleteRows is the mutation that forgets share-partition id: its head and
// its ranges.
func DeleteRows(id ID) Mutation {
	h := HeadKey(id)
	return Mutation{Op: OpDeleteRange, Key: h, End: keyspan.PrefixEnd(h)}
}

func rangeKey(head []byte, first int64) []byte {
	k := make([]byte, len(head), len(head)+8)
	copy(k, head)
	return binary.BigEndian.AppendUint64(k, uint64(first))
}

// ParseKey reads a share-partition key: its id and, for a range row, the
// range's first offset.
func ParseKey(k []byte) (id ID, first int64, isRange bool, err error) {
	bad := fmt.Errorf("%w: key %x", ErrCorrupt, k)
	if len(k) < 3 || k[0] != famPartition {
		return ID{}, 0, false, bad
	}
	n := int(binary.BigEndian.Uint16(k[1:]))
	k = k[3:]
	if len(k) < n+16+4 {
		return ID{}, 0, false, bad
	}
	id.Group, k = string(k[:n]), k[n:]
	copy(id.Topic[:], k)
	id.Partition, k = int32(binary.BigEndian.Uint32(k[16:])), k[20:]
	switch len(k) {
	case 0:
		return id, 0, false, nil
	case 8:
		first = int64(binary.BigEndian.Uint64(k))
		if first < 0 {
			return ID{}, 0, false, bad
		}
		return id, first, true, nil
	}
	return ID{}, 0, false, bad
}

func (p *Partition) headRow() Mutation {
	return Mutation{Op: OpSet, Key: p.head, Value: encodeHead(head{epoch: p.epoch, start: p.start, end: p.end, initMs: p.initMs})}
}

// clearRanges deletes every range row of p.
func (p *Partition) clearRanges() Mutation {
	return Mutation{Op: OpDeleteRange, Key: rangeKey(p.head, 0), End: keyspan.PrefixEnd(p.head)}
}

// head is a head row's value.
type head struct {
	epoch      int32
	start, end int64
	initMs     int64
}

func encodeHead(h head) []byte {
	v := []byte{valenc.Version1}
	v = binary.AppendVarint(v, int64(h.epoch))
	v = binary.AppendVarint(v, h.start)
	v = binary.AppendVarint(v, h.end)
	return binary.AppendVarint(v, h.initMs)
}

func decodeHead(b []byte) (head, error) {
	d := valenc.New("share-partition", b)
	var h head
	epoch := d.Varint()
	h.start = d.Varint()
	h.end = d.Varint()
	h.initMs = d.Varint()
	if err := d.Done("share-partition"); err != nil {
		return head{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if epoch < 0 || epoch > 1<<31-1 || h.start < 0 || h.end < h.start {
		return head{}, fmt.Errorf("%w: head epoch %d, start %d, end %d", ErrCorrupt, epoch, h.start, h.end)
	}
	h.epoch = int32(epoch)
	return h, nil
}

// encodeRange is a range row's value (the key holds First).
func encodeRange(r Range) []byte {
	v := []byte{valenc.Version1}
	v = binary.AppendVarint(v, r.Last)
	v = append(v, byte(r.State))
	v = binary.AppendVarint(v, int64(r.DeliveryCount))
	if r.State == Acquired {
		v = valenc.AppendString(v, r.Member)
		v = binary.AppendVarint(v, int64(r.Via))
		v = binary.AppendVarint(v, r.DeadlineMs)
	}
	return v
}

// decodeRange reads the value of the range row starting at first.
func decodeRange(first int64, b []byte) (Range, error) {
	d := valenc.New("share range", b)
	r := Range{First: first}
	r.Last = d.Varint()
	r.State = State(d.Byte())
	count := d.Varint()
	var via int64
	if r.State == Acquired {
		r.Member = d.String()
		via = d.Varint()
		r.DeadlineMs = d.Varint()
	}
	if err := d.Done("share range"); err != nil {
		return Range{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	switch {
	case !r.State.valid():
		return Range{}, fmt.Errorf("%w: range at %d: unknown state %d", ErrCorrupt, first, r.State)
	case r.Last < r.First:
		return Range{}, fmt.Errorf("%w: range at %d ends at %d", ErrCorrupt, first, r.Last)
	case count < 0 || count > 1<<15-1:
		return Range{}, fmt.Errorf("%w: range at %d: delivery count %d", ErrCorrupt, first, count)
	case r.State == Acquired && (r.Member == "" || via < -1<<31 || via > 1<<31-1):
		return Range{}, fmt.Errorf("%w: range at %d: acquired by %q via %d", ErrCorrupt, first, r.Member, via)
	}
	r.DeliveryCount, r.Via = int16(count), int32(via)
	return r, nil
}

// Load rebuilds share-partition id from its head row's value and its range
// rows (keys and values, in key order), as Open reads them. It fails on
// rows that do not decode, belong to another share-partition, or do not
// tile [SPSO, end).
func Load(id ID, cfg Config, headValue []byte, rows []Row) (*Partition, error) {
	h, err := decodeHead(headValue)
	if err != nil {
		return nil, fmt.Errorf("share-partition %s: %w", id, err)
	}
	p := &Partition{id: id, head: HeadKey(id), cfg: cfg.withDefaults(), epoch: h.epoch, start: h.start, end: h.end, initMs: h.initMs}
	next := p.start
	for _, row := range rows {
		rid, first, isRange, err := ParseKey(row.Key)
		if err != nil {
			return nil, fmt.Errorf("share-partition %s: %w", id, err)
		}
		if rid != id || !isRange {
			return nil, fmt.Errorf("share-partition %s: %w: key %x is not one of its ranges", id, ErrCorrupt, row.Key)
		}
		r, err := decodeRange(first, row.Value)
		if err != nil {
			return nil, fmt.Errorf("share-partition %s: %w", id, err)
		}
		if r.First != next {
			return nil, fmt.Errorf("share-partition %s: %w: range at %d, expected %d", id, ErrCorrupt, r.First, next)
		}
		p.ranges = append(p.ranges, r)
		next = r.Last + 1
	}
	if next != p.end {
		return nil, fmt.Errorf("share-partition %s: %w: ranges end at %d, end is %d", id, ErrCorrupt, next, p.end)
	}
	return p, nil
}
