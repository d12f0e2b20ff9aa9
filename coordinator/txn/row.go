package txn

import (
	"encoding/binary"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
)

// encodeRow is a state's row (package doc): version 1.
func encodeRow(t *state) []byte {
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
	for _, tp := range t.parts {
		b = append(b, tp.TopicID[:]...)
		b = binary.AppendVarint(b, int64(tp.Partition))
	}
	b = binary.AppendUvarint(b, uint64(len(t.groups)))
	for _, g := range t.groups {
		b = valenc.AppendString(b, g)
	}
	return b
}

// decodeRow reads the row of transactional id id.
func decodeRow(id string, v []byte) (*state, error) {
	d := valenc.New("transaction", v)
	t := &state{id: id}
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
		var tp coordapi.TopicPartition
		copy(tp.TopicID[:], d.Bytes(16))
		tp.Partition = int32(d.Varint())
		t.parts = append(t.parts, tp)
	}
	n = d.Uvarint()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		t.groups = append(t.groups, d.String())
	}
	return t, d.Done("transaction")
}
