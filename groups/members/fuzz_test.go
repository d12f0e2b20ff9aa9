package members

import (
	"bytes"
	"slices"
	"testing"

	"github.com/floe-io/floe/internal/valenc"
)

// FuzzDecoder: reading any bytes as the fields this package writes (a
// member record is read from disk) fails or yields values that are a
// valid set and read back the same once written again; it never panics.
func FuzzDecoder(f *testing.F) {
	seed := []byte{valenc.Version1}
	seed = AppendOptString(seed, strPtr("rack"))
	seed = AppendStrings(seed, []string{"a", "b"})
	seed = AppendPartitions(seed, Partitions{t1: {0, 1}, t2: {3, 4, 1000000}})
	f.Add(seed)
	f.Add([]byte{valenc.Version1, 0, 0, 0})
	f.Add([]byte{valenc.Version1, 1, 0xff, 0xff, 0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder("fuzz", valenc.Version1, b)
		s, ss, ps := d.OptString(), d.Strings(), d.Partitions()
		if d.Done() != nil {
			return
		}
		for id, l := range ps {
			if !slices.IsSorted(l) || len(slices.Compact(slices.Clone(l))) != len(l) {
				t.Fatalf("topic %x: list %v is not a set", id, l)
			}
		}
		v := []byte{valenc.Version1}
		v = AppendOptString(v, s)
		v = AppendStrings(v, ss)
		v = AppendPartitions(v, ps)
		d = NewDecoder("fuzz", valenc.Version1, v)
		s2, ss2, ps2 := d.OptString(), d.Strings(), d.Partitions()
		if err := d.Done(); err != nil {
			t.Fatalf("written again, does not read: %v", err)
		}
		v2 := []byte{valenc.Version1}
		v2 = AppendOptString(v2, s2)
		v2 = AppendStrings(v2, ss2)
		v2 = AppendPartitions(v2, ps2)
		if !bytes.Equal(v, v2) {
			t.Fatalf("not stable:\n%x\n%x", v, v2)
		}
	})
}
