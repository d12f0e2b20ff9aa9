package sharegroups

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
)

// topicID is a topic's UUID, as KIP-932 requests name topics.
type topicID = [16]byte

// partitions is a set of partitions by topic id, each list sorted: what a
// member is assigned, or is targeted to own. Package groups keeps the
// same set, and writes it the same way, for KIP-848 members.
type partitions map[topicID][]int32

func (ps partitions) clone() partitions {
	out := make(partitions, len(ps))
	for id, p := range ps {
		out[id] = slices.Clone(p)
	}
	return out
}

func (ps partitions) count() int {
	n := 0
	for _, p := range ps {
		n += len(p)
	}
	return n
}

func (ps partitions) has(id topicID, p int32) bool {
	_, ok := slices.BinarySearch(ps[id], p)
	return ok
}

// add inserts p, keeping the list sorted.
func (ps partitions) add(id topicID, p int32) {
	l := ps[id]
	i, ok := slices.BinarySearch(l, p)
	if !ok {
		ps[id] = slices.Insert(l, i, p)
	}
}

func (ps partitions) equal(o partitions) bool {
	return maps.EqualFunc(ps, o, slices.Equal)
}

// subsetOf reports whether every partition of ps is in o.
func (ps partitions) subsetOf(o partitions) bool {
	for id, l := range ps {
		for _, p := range l {
			if !o.has(id, p) {
				return false
			}
		}
	}
	return true
}

// sortedIDs returns the topic ids in byte order.
func (ps partitions) sortedIDs() []topicID {
	ids := slices.Collect(maps.Keys(ps))
	slices.SortFunc(ids, func(a, b topicID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// describeAssignment is ps as ShareGroupDescribe shows it, with topic
// names where known (snap may be nil).
func (ps partitions) describeAssignment(snap Topics) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range ps.sortedIDs() {
		t := kmsg.NewAssignmentTopicPartition()
		t.TopicID, t.Partitions = id, slices.Clone(ps[id])
		if snap != nil {
			t.Topic, _ = snap.TopicName(coordapi.TopicID(id))
		}
		a.TopicPartitions = append(a.TopicPartitions, t)
	}
	return a
}

// The member record's fields, written as package groups writes a KIP-848
// member's (its consumer_store.go): the same layout in both families.

func appendOptString(v []byte, s *string) []byte {
	if s == nil {
		return append(v, 0)
	}
	v = append(v, 1)
	return valenc.AppendString(v, *s)
}

// appendPartitions writes ps in topic id order, each list as it is kept
// (sorted).
func appendPartitions(v []byte, ps partitions) []byte {
	ids := ps.sortedIDs()
	v = binary.AppendUvarint(v, uint64(len(ids)))
	for _, id := range ids {
		v = append(v, id[:]...)
		v = binary.AppendUvarint(v, uint64(len(ps[id])))
		for _, p := range ps[id] {
			v = binary.AppendVarint(v, int64(p))
		}
	}
	return v
}

// memberDecoder reads a member record. Every count is checked against the
// bytes left (each element takes at least one byte), so that a corrupt
// value fails instead of allocating.
type memberDecoder struct {
	*valenc.Decoder
	bad error
}

func (d *memberDecoder) count() uint64 {
	n := d.Uvarint()
	if d.Err() == nil && d.bad == nil && n > uint64(d.Len()) {
		d.bad = fmt.Errorf("count %d with %d bytes left", n, d.Len())
	}
	if d.bad != nil {
		return 0
	}
	return n
}

func (d *memberDecoder) optString() *string {
	switch d.Byte() {
	case 0:
		return nil
	case 1:
		s := d.String()
		return &s
	default:
		if d.bad == nil && d.Err() == nil {
			d.bad = fmt.Errorf("bad presence byte")
		}
		return nil
	}
}

func (d *memberDecoder) topicID() topicID {
	var id topicID
	copy(id[:], d.Bytes(uint64(len(id))))
	return id
}

func (d *memberDecoder) partitions() partitions {
	ps := partitions{}
	n := d.count()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		id := d.topicID()
		np := d.count()
		l := make([]int32, 0, np)
		for j := uint64(0); j < np && d.Err() == nil; j++ {
			l = append(l, int32(d.Varint()))
		}
		// Lists are kept sorted and free of duplicates, whatever the
		// bytes say.
		l = append(l, ps[id]...)
		slices.Sort(l)
		ps[id] = slices.Compact(l)
	}
	return ps
}
