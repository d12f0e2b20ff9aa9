package layout

import (
	"encoding/binary"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/keyspan"
	"github.com/floe-io/floe/internal/valenc"
)

// Handover states of a partition on one shard (EncodeHandover).
const (
	// HandoverOut: the partition is being moved out of this shard (fenced,
	// its rows still here): this shard refuses it whatever the shard
	// count says.
	HandoverOut byte = 1
	// HandoverImporting: the partition's rows are being imported here; it
	// is not this shard's yet.
	HandoverImporting byte = 2
	// HandoverIn: the partition's rows were imported here: it is this
	// shard's whatever the shard count says.
	HandoverIn byte = 3
	// HandoverGone: the partition moved out of this shard and its rows
	// here were dropped: it is refused, and never exported again.
	HandoverGone byte = 4
)

// HandoverKey is the key of a partition's handover row.
func HandoverKey(id coordapi.TopicID, partition int32) []byte {
	k := make([]byte, 0, 21)
	k = append(k, PrefixHandover)
	k = append(k, id[:]...)
	return binary.BigEndian.AppendUint32(k, uint32(partition))
}

// DecodeHandoverKey splits a handover key.
func DecodeHandoverKey(k []byte) (id coordapi.TopicID, partition int32, err error) {
	if len(k) != 21 || k[0] != PrefixHandover {
		return id, 0, fmt.Errorf("coordinator: bad handover key %x", k)
	}
	copy(id[:], k[1:17])
	return id, int32(binary.BigEndian.Uint32(k[17:])), nil
}

// EncodeHandover encodes a handover row: format 1, the state, and the map
// version the move is part of.
func EncodeHandover(state byte, version uint64) []byte {
	return binary.AppendUvarint([]byte{ValueV1, state}, version)
}

// DecodeHandover decodes a handover row.
func DecodeHandover(v []byte) (state byte, version uint64, err error) {
	d := valenc.New("handover", v)
	state = d.Byte()
	version = d.Uvarint()
	if err := d.Done("handover"); err != nil {
		return 0, 0, err
	}
	if state < HandoverOut || state > HandoverGone {
		return 0, 0, fmt.Errorf("decode handover: unknown state %d", state)
	}
	return state, version, nil
}

// PartitionRowsBounds returns, in key order, the [lower, upper) ranges
// holding one partition's rows in the families keyed by topic id and
// partition first: batch runs and segments ('b'), postings ('h'), the key
// index ('k'), aborted ('q'), open ('y') and held-keys ('z') transaction
// rows. A partition's checkpoint ('p') and its producer states ('r',
// keyed by producer first) are not among them.
func PartitionRowsBounds(id coordapi.TopicID, partition int32) [][2][]byte {
	out := make([][2][]byte, 0, 6)
	for _, prefix := range []byte{PrefixBatch, PrefixPostings, PrefixKV, PrefixAborted, PrefixTxnOpen, PrefixTxnKeys} {
		lower := make([]byte, 0, 21)
		lower = append(lower, prefix)
		lower = append(lower, id[:]...)
		lower = binary.BigEndian.AppendUint32(lower, uint32(partition))
		out = append(out, [2][]byte{lower, keyspan.PrefixEnd(lower)})
	}
	return out
}

// RowObject returns the object number a batch family value (a run or a
// segment row) names, and where its encoding ends in v.
func RowObject(v []byte) (num uint64, end int, err error) {
	if len(v) < 3 || (v[0] != ValueRun && v[0] != ValueSegment) {
		return 0, 0, fmt.Errorf("coordinator: not a batch row value: %x", v[:min(len(v), 8)])
	}
	num, n := binary.Uvarint(v[2:])
	if n <= 0 {
		return 0, 0, fmt.Errorf("coordinator: batch row value with a bad object number: %x", v[:min(len(v), 12)])
	}
	return num, 2 + n, nil
}

// WithRowObject returns a copy of batch family value v naming object num
// instead of the one it names.
func WithRowObject(v []byte, num uint64) ([]byte, error) {
	_, end, err := RowObject(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(v)+binary.MaxVarintLen64)
	out = append(out, v[:2]...)
	out = binary.AppendUvarint(out, num)
	return append(out, v[end:]...), nil
}
