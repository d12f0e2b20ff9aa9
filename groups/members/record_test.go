package members

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/floe-io/floe/internal/valenc"
)

func strPtr(s string) *string { return &s }

var (
	t1 = TopicID{1, 2, 3}
	t2 = TopicID{0xff, 9}
	t3 = TopicID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// The golden bytes below were written by package groups' appendOptString
// and appendPartitions before they moved here: a change to them is a
// change of the 'c' and 'h' families' on-disk format.

func TestOptStringGolden(t *testing.T) {
	long := strings.Repeat("x", 200) // a length of two uvarint bytes
	for _, tc := range []struct {
		s    *string
		want string
	}{
		{nil, "00"},
		{strPtr(""), "0100"},
		{strPtr("rack-1"), "01067261636b2d31"},
		{&long, "01c801" + strings.Repeat("78", 200)},
	} {
		v := AppendOptString(nil, tc.s)
		if got := hex.EncodeToString(v); got != tc.want {
			t.Fatalf("%v: got %s, want %s", tc.s, got, tc.want)
		}
		d := NewDecoder("test", valenc.Version1, append([]byte{valenc.Version1}, v...))
		got := d.OptString()
		if err := d.Done(); err != nil {
			t.Fatalf("%v: %v", tc.s, err)
		}
		if !reflect.DeepEqual(got, tc.s) {
			t.Fatalf("round trip: got %v, want %v", got, tc.s)
		}
	}
}

func TestPartitionsGolden(t *testing.T) {
	for _, tc := range []struct {
		ps   Partitions
		want string
	}{
		{nil, "00"},
		{Partitions{}, "00"},
		{Partitions{t1: {0, 1}}, "0101020300000000000000000000000000020002"},
		// Written in topic id order, whatever the map's.
		{Partitions{t2: {3, 4, 1000000}, t1: {0}}, "02010203000000000000000000000000000100ff09000000000000000000000000000003060880897a"},
		// An empty list is written (and read back) as one.
		{Partitions{t3: {0, 63, 64, 2147483647}, t1: {}}, "020102030000000000000000000000000000ffffffffffffffffffffffffffffffff04007e8001feffffff0f"},
	} {
		v := AppendPartitions(nil, tc.ps)
		if got := hex.EncodeToString(v); got != tc.want {
			t.Fatalf("%v: got %s, want %s", tc.ps, got, tc.want)
		}
		d := NewDecoder("test", valenc.Version1, append([]byte{valenc.Version1}, v...))
		got := d.Partitions()
		if err := d.Done(); err != nil {
			t.Fatalf("%v: %v", tc.ps, err)
		}
		if !got.Equal(tc.ps) && !(tc.ps == nil && len(got) == 0) {
			t.Fatalf("round trip: got %v, want %v", got, tc.ps)
		}
	}
}

func TestStringsRoundTrip(t *testing.T) {
	for _, ss := range [][]string{nil, {""}, {"a", "b"}, {"b", "a", "b"}} {
		v := AppendStrings([]byte{valenc.Version1}, ss)
		d := NewDecoder("test", valenc.Version1, v)
		got := d.Strings()
		if err := d.Done(); err != nil || !reflect.DeepEqual(got, ss) {
			t.Fatalf("%q: got %q %v", ss, got, err)
		}
	}
}

// TestRecord: fields written one after the other read back, and the
// format byte is the caller's.
func TestRecord(t *testing.T) {
	v := []byte{valenc.Version2}
	v = AppendOptString(v, strPtr("inst"))
	v = AppendStrings(v, []string{"a", "b"})
	v = AppendPartitions(v, Partitions{t1: {0}, t2: {7}})
	v = AppendOptString(v, nil)
	d := NewDecoder("test", valenc.Version2, v)
	inst, topics, ps, none := d.OptString(), d.Strings(), d.Partitions(), d.OptString()
	if err := d.Done(); err != nil {
		t.Fatal(err)
	}
	if *inst != "inst" || !reflect.DeepEqual(topics, []string{"a", "b"}) || !ps.Equal(Partitions{t1: {0}, t2: {7}}) || none != nil {
		t.Fatalf("got %v %v %v %v", inst, topics, ps, none)
	}
	if err := NewDecoder("test", valenc.Version1, v).Done(); err == nil {
		t.Fatal("a record of another format: no error")
	}
}

// TestDecoderSortsPartitions: a list written unsorted, with repeats, or
// split over two entries of one topic, reads back as a valid set.
func TestDecoderSortsPartitions(t *testing.T) {
	v := []byte{valenc.Version1, 2}
	v = append(v, t1[:]...)
	v = append(v, 3, 6, 2, 6) // 3, 1, 3
	v = append(v, t1[:]...)
	v = append(v, 1, 0) // 0
	d := NewDecoder("test", valenc.Version1, v)
	got := d.Partitions()
	if err := d.Done(); err != nil || !got.Equal(Partitions{t1: {0, 1, 3}}) {
		t.Fatalf("got %v %v", got, err)
	}
}

func TestDecoderCorrupt(t *testing.T) {
	v1 := func(b ...byte) []byte { return append([]byte{valenc.Version1}, b...) }
	for _, tc := range []struct {
		name string
		v    []byte
		read func(d *Decoder)
		want string
	}{
		{"empty", nil, func(d *Decoder) { d.OptString() }, "unknown format"},
		{"bad presence byte", v1(2), func(d *Decoder) { d.OptString() }, "bad presence byte"},
		{"truncated string", v1(1, 5, 'a'), func(d *Decoder) { d.OptString() }, "truncated"},
		{"huge string count", v1(0xff, 0xff, 0xff, 0xff, 0x0f), func(d *Decoder) { d.Strings() }, "count 4294967295 with 0 bytes left"},
		{"huge topic count", v1(0xff, 0xff, 0x03), func(d *Decoder) { d.Partitions() }, "count 65535 with 0 bytes left"},
		{"huge partition count", append(append(v1(1), t1[:]...), 0xff, 0xff, 0xff, 0x7f), func(d *Decoder) { d.Partitions() }, "count 268435455 with 0 bytes left"},
		{"truncated topic id", v1(1, 1, 2), func(d *Decoder) { d.Partitions() }, "truncated"},
		{"trailing bytes", v1(0, 0), func(d *Decoder) { d.OptString() }, "1 trailing bytes"},
		{"caller's corruption", v1(0), func(d *Decoder) { d.OptString(); d.Corrupt(errors.New("unknown state")) }, "unknown state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder("test member", valenc.Version1, tc.v)
			tc.read(d)
			err := d.Done()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "decode test member value: ") {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
