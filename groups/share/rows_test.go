package share

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/floe-io/floe/internal/valenc"
)

func TestKeys(t *testing.T) {
	id := ID{Group: "grp", Topic: [16]byte{9}, Partition: 3}
	h := HeadKey(id)
	got, _, isRange, err := ParseKey(h)
	if err != nil || isRange || got != id {
		t.Fatalf("ParseKey(head) = %v, %v, %v", got, isRange, err)
	}
	r := rangeKey(h, 42)
	got, first, isRange, err := ParseKey(r)
	if err != nil || !isRange || got != id || first != 42 {
		t.Fatalf("ParseKey(range) = %v, %d, %v, %v", got, first, isRange, err)
	}
	// Pebble's order: the head, its ranges by offset, then the next
	// partition; a group's and a topic's spans hold their keys only.
	next := HeadKey(ID{Group: "grp", Topic: [16]byte{9}, Partition: 4})
	other := HeadKey(ID{Group: "grp2", Topic: [16]byte{9}, Partition: 3})
	keys := [][]byte{h, rangeKey(h, 0), rangeKey(h, 255), rangeKey(h, 256), rangeKey(h, 1<<40), next}
	if !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Fatalf("keys out of order: %x", keys)
	}
	for _, span := range []func() ([]byte, []byte){
		func() ([]byte, []byte) { return GroupSpan("grp") },
		func() ([]byte, []byte) { return TopicSpan("grp", [16]byte{9}) },
	} {
		lo, hi := span()
		for _, k := range keys {
			if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
				t.Fatalf("key %x outside span [%x, %x)", k, lo, hi)
			}
		}
		if bytes.Compare(other, lo) >= 0 && bytes.Compare(other, hi) < 0 {
			t.Fatalf("another group's key %x in span [%x, %x)", other, lo, hi)
		}
	}
	del := DeleteRows(id)
	if bytes.Compare(h, del.Key) < 0 || bytes.Compare(rangeKey(h, 1<<62), del.End) >= 0 || bytes.Compare(next, del.End) < 0 {
		t.Fatalf("DeleteRows %v does not cover exactly the partition", del)
	}
	for _, bad := range [][]byte{nil, {'q'}, {'x', 0, 0}, h[:len(h)-1], append(bytes.Clone(h), 1), rangeKey(h, -1)} {
		if _, _, _, err := ParseKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseKey(%x): %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	acquired := Range{First: 10, Last: 19, State: Acquired, DeliveryCount: 2, Member: "m", Via: 3, DeadlineMs: 1000}
	r, err := decodeRange(10, encodeRange(acquired))
	if err != nil || r != acquired {
		t.Fatalf("round trip: %v, %v", r, err)
	}
	good := encodeRange(Range{First: 10, Last: 19, State: Archived, DeliveryCount: 1})
	with := func(fields ...func(b []byte) []byte) []byte {
		b := []byte{valenc.Version1}
		for _, f := range fields {
			b = f(b)
		}
		return b
	}
	varint := func(v int64) func([]byte) []byte {
		return func(b []byte) []byte { return binary.AppendVarint(b, v) }
	}
	raw := func(v ...byte) func([]byte) []byte { return func(b []byte) []byte { return append(b, v...) } }
	for name, b := range map[string][]byte{
		"empty":          nil,
		"version":        append([]byte{2}, good[1:]...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(bytes.Clone(good), 0),
		"state 3":        with(varint(19), raw(3), varint(1)),
		"last < first":   with(varint(9), raw(byte(Archived)), varint(1)),
		"negative count": with(varint(19), raw(byte(Available)), varint(-1)),
		"huge count":     with(varint(19), raw(byte(Available)), varint(1<<15)),
		"no member":      with(varint(19), raw(byte(Acquired)), varint(1), raw(0), varint(1), varint(5)),
		"huge via":       with(varint(19), raw(byte(Acquired)), varint(1), raw(1, 'm'), varint(1<<31), varint(5)),
		"no deadline":    with(varint(19), raw(byte(Acquired)), varint(1), raw(1, 'm'), varint(1)),
	} {
		if _, err := decodeRange(10, b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"truncated":      encodeHead(head{epoch: 1, start: 5, end: 9})[:4],
		"end < start":    encodeHead(head{start: 9, end: 5}),
		"negative start": encodeHead(head{start: -1, end: 5}),
		"negative epoch": encodeHead(head{epoch: -1}),
	} {
		if _, err := decodeHead(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("head %s: %v, want ErrCorrupt", name, err)
		}
	}
}

// TestLoadChecksTiling: Load refuses rows that do not tile [SPSO, end) or
// belong to another share-partition.
func TestLoadChecksTiling(t *testing.T) {
	h := HeadKey(testID)
	hv := encodeHead(head{start: 10, end: 20})
	row := func(first, last int64) Row {
		return Row{Key: rangeKey(h, first), Value: encodeRange(Range{First: first, Last: last, State: Available, DeliveryCount: 1})}
	}
	if _, err := Load(testID, Config{}, hv, []Row{row(10, 14), row(15, 19)}); err != nil {
		t.Fatalf("good rows: %v", err)
	}
	other := Row{Key: rangeKey(HeadKey(ID{Group: "g", Partition: 1}), 15), Value: row(15, 19).Value}
	for name, rows := range map[string][]Row{
		"none":      nil,
		"gap":       {row(10, 13), row(15, 19)},
		"overlap":   {row(10, 15), row(15, 19)},
		"short":     {row(10, 14), row(15, 18)},
		"long":      {row(10, 14), row(15, 20)},
		"below":     {row(9, 14), row(15, 19)},
		"other":     {row(10, 14), other},
		"head":      {row(10, 14), {Key: h, Value: hv}},
		"bad value": {row(10, 14), {Key: rangeKey(h, 15), Value: []byte{1}}},
	} {
		if _, err := Load(testID, Config{}, hv, rows); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := Load(testID, Config{}, []byte{9}, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad head: %v, want ErrCorrupt", err)
	}
}

// FuzzDecode: no input makes the decoders panic, and what they accept
// encodes and decodes to the same value.
func FuzzDecode(f *testing.F) {
	f.Add(false, encodeRange(Range{First: 3, Last: 9, State: Acquired, DeliveryCount: 1, Member: "m", Via: 1, DeadlineMs: 30000}))
	f.Add(false, encodeRange(Range{First: 3, Last: 3, State: Archived, DeliveryCount: 5}))
	f.Add(true, encodeHead(head{epoch: 2, start: 100, end: 150, initMs: 1700000000000}))
	f.Fuzz(func(t *testing.T, isHead bool, b []byte) {
		if isHead {
			h, err := decodeHead(b)
			if err != nil {
				return
			}
			if again, err := decodeHead(encodeHead(h)); err != nil || again != h {
				t.Fatalf("head %+v: re-decoded as %+v, %v", h, again, err)
			}
			return
		}
		r, err := decodeRange(3, b)
		if err != nil {
			return
		}
		if again, err := decodeRange(3, encodeRange(r)); err != nil || again != r {
			t.Fatalf("range %v: re-decoded as %v, %v", r, again, err)
		}
	})
}
