package keyspan

import (
	"bytes"
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct {
		in, want []byte
	}{
		{nil, nil},
		{[]byte{}, nil},
		{[]byte{0x00}, []byte{0x01}},
		{[]byte("ab"), []byte("ac")},
		{[]byte{'a', 0xff}, []byte{'b'}},
		{[]byte{'a', 0xff, 0xff}, []byte{'b'}},
		{[]byte{0xff}, nil},
		{[]byte{0xff, 0xff}, nil},
		{[]byte{0x01, 0xfe}, []byte{0x01, 0xff}},
	} {
		in := bytes.Clone(tc.in)
		got := PrefixEnd(in)
		if !bytes.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("PrefixEnd(%x) = %x, want %x", tc.in, got, tc.want)
		}
		if !bytes.Equal(in, tc.in) {
			t.Errorf("PrefixEnd(%x) modified its argument to %x", tc.in, in)
		}
	}
}

// FuzzPrefixEnd checks the defining property: every key with the prefix sorts
// below the end, and the end itself does not have the prefix.
func FuzzPrefixEnd(f *testing.F) {
	f.Add([]byte("ab"), []byte("x"))
	f.Add([]byte{0xff}, []byte{})
	f.Add([]byte{'a', 0xff}, []byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, p, suffix []byte) {
		end := PrefixEnd(p)
		key := append(bytes.Clone(p), suffix...)
		if end == nil {
			for _, b := range p {
				if b != 0xff {
					t.Fatalf("PrefixEnd(%x) = nil, but a bound exists", p)
				}
			}
			return
		}
		if bytes.Compare(key, end) >= 0 {
			t.Fatalf("key %x with prefix %x is not below end %x", key, p, end)
		}
		if bytes.HasPrefix(end, p) {
			t.Fatalf("end %x has prefix %x", end, p)
		}
		if bytes.Compare(end, p) <= 0 {
			t.Fatalf("end %x is not above prefix %x", end, p)
		}
	})
}
