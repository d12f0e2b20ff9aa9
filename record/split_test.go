package record

import (
	"bytes"
	"errors"
	"testing"
)

func TestSplit(t *testing.T) {
	b1 := mustBuild(t, noProducer, sampleRecords(3, 10, 6))
	b2 := mustBuild(t, BuildOptions{Codec: CodecGzip}, sampleRecords(5, 10, 7))
	b3 := mustBuild(t, BuildOptions{Codec: CodecSnappy, SnappyXerial: true}, sampleRecords(1, 10, 8))
	legacy := make([]byte, 26) // a magic 0 message: frames, and Validate refuses it
	be32(legacy, offBatchLength, 14)
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	setLen := func(b []byte, n uint32) []byte { b = cat(b); be32(b, offBatchLength, n); return b }

	cases := []struct {
		name string
		in   []byte
		want [][]byte
		is   error
	}{
		{"empty", nil, nil, nil},
		{"one", b1, [][]byte{b1}, nil},
		{"three", cat(b1, b2, b3), [][]byte{b1, b2, b3}, nil},
		{"legacy-frames", cat(legacy, b1), [][]byte{legacy, b1}, nil},
		{"truncated-last", cat(b1, b2[:len(b2)-1]), nil, ErrCorrupt},
		{"trailing-partial-prefix", cat(b1, b2[:11]), nil, ErrCorrupt},
		{"trailing-byte", cat(b1, []byte{0}), nil, ErrCorrupt},
		{"length-too-small", cat(b1, setLen(b2, 13)), nil, ErrCorrupt},
		{"length-negative", cat(setLen(b1, 0x80000000), b2), nil, ErrCorrupt},
		{"length-past-end", setLen(b1, uint32(len(b1))), nil, ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Split(tc.in)
			if (tc.is == nil) != (err == nil) || !errors.Is(err, tc.is) {
				t.Fatalf("Split error %v, want %v", err, tc.is)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d batches, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if !bytes.Equal(got[i], tc.want[i]) {
					t.Fatalf("batch %d differs", i)
				}
				if cap(got[i]) != len(got[i]) {
					t.Fatalf("batch %d: capacity runs into the next batch", i)
				}
				if len(got[i]) > 0 && &got[i][0] != &tc.in[bytes.Index(tc.in, tc.want[i])] {
					t.Fatalf("batch %d is a copy, want a sub-slice", i)
				}
			}
		})
	}
}

func TestBatchesIterator(t *testing.T) {
	b1 := mustBuild(t, noProducer, sampleRecords(2, 10, 9))
	in := bytes.Repeat(b1, 4)

	n := 0
	for b, err := range Batches(in) {
		if err != nil || !bytes.Equal(b, b1) {
			t.Fatalf("batch %d: %v", n, err)
		}
		if n++; n == 2 {
			break // stopping early must not panic
		}
	}
	if n != 2 {
		t.Fatalf("stopped after %d, want 2", n)
	}

	var errs []error
	n = 0
	for b, err := range Batches(append(in, 1, 2, 3)) {
		if err != nil {
			if b != nil {
				t.Fatalf("error %v with a batch", err)
			}
			errs = append(errs, err)
			continue
		}
		n++
	}
	if n != 4 || len(errs) != 1 || !errors.Is(errs[0], ErrCorrupt) {
		t.Fatalf("got %d batches and errors %v, want 4 and one ErrCorrupt", n, errs)
	}
}
