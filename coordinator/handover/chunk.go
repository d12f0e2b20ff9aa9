package handover

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// Scan calls fn for every row in [lower, upper), in key order, and
// returns fn's first error as it is; k and v are only valid during the
// call.
type Scan func(lower, upper []byte, fn func(k, v []byte) error) error

// errFull stops ExportRows' scan at a full chunk.
var errFull = errors.New("handover: chunk full")

// ExportRows reads the rows of a partition (ranges, its
// layout.PartitionRowsBounds) that follow cursor (nil: from the first),
// until about maxBytes of keys and values (at least one row). It returns
// them, the object numbers their batch rows name, and whether it stopped
// at maxBytes (full: the chunk's cursor is its last row's key).
func ExportRows(ranges [][2][]byte, cursor []byte, maxBytes int, scan Scan) (rows []coordapi.ChunkRow, objects map[uint64]bool, full bool, err error) {
	var after []byte // the first key the chunk may hold
	if len(cursor) > 0 {
		after = append(append([]byte(nil), cursor...), 0)
	}
	objects = map[uint64]bool{}
	size := 0
	for _, r := range ranges {
		lower, upper := r[0], r[1]
		if after != nil {
			if bytes.Compare(after, upper) >= 0 {
				continue
			}
			if bytes.Compare(after, lower) > 0 {
				lower = after
			}
		}
		err := scan(lower, upper, func(k, v []byte) error {
			if len(rows) > 0 && size >= maxBytes {
				full = true
				return errFull
			}
			row := coordapi.ChunkRow{Key: bytes.Clone(k), Value: bytes.Clone(v)}
			if k[0] == layout.PrefixBatch {
				num, _, err := layout.RowObject(v)
				if err != nil {
					return fmt.Errorf("batch row %x: %w", k, err)
				}
				objects[num] = true
			}
			rows = append(rows, row)
			size += len(k) + len(v)
			return nil
		})
		if err != nil && !errors.Is(err, errFull) {
			return rows, objects, false, err
		}
		if full {
			break
		}
	}
	return rows, objects, full, nil
}

// RowBytes returns what a batch row counts in its object's live bytes
// (its batches' lengths; a segment row's data length) and the object it
// names, as the coordinator's rowStats counts them.
func RowBytes(k, v []byte) (n int64, object uint64, err error) {
	last, err := layout.DecodeBatchKey(k)
	if err != nil {
		return 0, 0, err
	}
	r, err := layout.NewRunReader(last, v)
	for err == nil {
		bc, ok, nerr := r.Next()
		if !ok || nerr != nil {
			err = nerr
			break
		}
		n += int64(bc.ByteLength)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("batch row %x: %w", k, err)
	}
	return n, r.Object(), nil
}

// Rows is what an imported chunk's rows write on the importing shard
// (PlanRows).
type Rows struct {
	// Rows are the chunk's rows as written here: each batch row names
	// this shard's object of its object's key.
	Rows []coordapi.ChunkRow
	// Live is the bytes the rows add to (or, replacing rows of an
	// earlier copy of the chunk, take from) this shard's objects, by
	// number.
	Live map[uint64]int64
	// Created are the objects this shard did not know, by the numbers
	// they get here (from next on), as the chunk describes them.
	Created map[uint64]*coordapi.ChunkObject
	// Next is the shard's next object number after Created.
	Next uint64
	// Meta is the encoded size of the batch rows as written here (object
	// numbers differ in length from shard to shard).
	Meta int64
	// Written are the keys of the batch rows, on a last chunk that is not
	// also the first (whose size the import adds to the earlier chunks').
	Written map[string]bool
}

// PlanRows renumbers a chunk's rows to this shard's objects: local finds
// this shard's object of a key, next is its next object number, and old
// (asked only of a chunk after the first, which may be sent again) reads
// the batch row a row replaces (found false for none). Live starts from
// live (nil: empty). A row outside ranges (the partition's bounds), or a
// batch row naming an object the chunk does not, is refused.
func PlanRows(ch *coordapi.PartitionChunk, ranges [][2][]byte, next uint64, live map[uint64]int64,
	local func(key string) (uint64, bool), old func(k []byte) (n int64, object uint64, found bool, err error)) (*Rows, error) {
	inRanges := func(k []byte) bool {
		for _, r := range ranges {
			if bytes.Compare(k, r[0]) >= 0 && bytes.Compare(k, r[1]) < 0 {
				return true
			}
		}
		return false
	}
	if live == nil {
		live = map[uint64]int64{}
	}
	out := &Rows{Rows: make([]coordapi.ChunkRow, 0, len(ch.Rows)), Live: live,
		Created: map[uint64]*coordapi.ChunkObject{}, Written: map[string]bool{}}
	chunkObjects := make(map[uint64]*coordapi.ChunkObject, len(ch.Objects))
	for i := range ch.Objects {
		chunkObjects[ch.Objects[i].Num] = &ch.Objects[i]
	}
	created := map[string]uint64{} // new objects' numbers, by key
	for _, row := range ch.Rows {
		if !inRanges(row.Key) {
			return nil, fmt.Errorf("row %x is not the partition's", row.Key)
		}
		v := row.Value
		if row.Key[0] == layout.PrefixBatch {
			n, num, err := RowBytes(row.Key, v)
			if err != nil {
				return nil, err
			}
			co := chunkObjects[num]
			if co == nil {
				return nil, fmt.Errorf("batch row %x names object %d, which the chunk does not", row.Key, num)
			}
			here, ok := local(co.Key)
			if !ok {
				if here, ok = created[co.Key]; !ok {
					here = next
					created[co.Key] = here
					out.Created[here] = co
					next++
				}
			}
			if !ch.First {
				// A chunk sent again: the row it replaces counted once.
				if oldN, oldNum, found, err := old(row.Key); err != nil {
					return nil, err
				} else if found {
					live[oldNum] -= oldN
				}
			}
			live[here] += n
			if v, err = layout.WithRowObject(v, here); err != nil {
				return nil, err
			}
			out.Meta += int64(len(row.Key) + len(v))
			if ch.Done && !ch.First {
				out.Written[string(row.Key)] = true
			}
		}
		out.Rows = append(out.Rows, coordapi.ChunkRow{Key: row.Key, Value: v})
	}
	out.Next = next
	return out, nil
}

// Producer is a producer's state on the partition a last chunk carries.
type Producer struct {
	ID    int64
	State layout.Producer
}

// Producers decodes a last chunk's producer rows, in order, refusing one
// of another partition than the chunk's.
func Producers(ch *coordapi.PartitionChunk) ([]Producer, error) {
	out := make([]Producer, 0, len(ch.Producers))
	for _, row := range ch.Producers {
		pid, ptopic, ppart, err := layout.DecodeProducerKey(row.Key)
		if err != nil {
			return nil, err
		}
		if ptopic != ch.TopicID || ppart != ch.Partition {
			return nil, fmt.Errorf("producer row %x is not the partition's", row.Key)
		}
		pv, err := layout.DecodeProducer(row.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, Producer{ID: pid, State: pv})
	}
	return out, nil
}
