package tiered

import (
	"bytes"
	"errors"
	"testing"
)

// TestStreamWriterSameBytes checks, over the round-trip cases and their
// LogAppendTime variants, that a streaming Writer writes byte for byte the
// object the in-memory Writer builds from the same batches, with the same
// Info, through outputs that take the bytes in any chunking.
func TestStreamWriterSameBytes(t *testing.T) {
	for _, tc := range roundTripCases() {
		for _, lat := range []bool{false, true} {
			name := tc.name
			if lat {
				name += " LogAppendTime"
			}
			t.Run(name, func(t *testing.T) {
				mem, err := NewWriter(tc.base, Options{IndexIntervalBytes: tc.interval})
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				str, err := NewStreamWriter(tc.base, Options{IndexIntervalBytes: tc.interval, SizeHint: 1 << 20}, &out)
				if err != nil {
					t.Fatal(err)
				}
				off := tc.base
				for i, s := range tc.specs {
					b := buildBatch(t, s, uint64(i))
					orig := bytes.Clone(b)
					epoch := int32(i % 3)
					for _, w := range []*Writer{mem, str} {
						if lat {
							err = w.AppendLogAppendTime(b, off, epoch, 2_000_000_000_000+int64(i%4)*10)
						} else {
							err = w.Append(b, off, epoch)
						}
						if err != nil {
							t.Fatalf("batch %d: %v", i, err)
						}
					}
					if !bytes.Equal(b, orig) {
						t.Fatalf("batch %d: Append modified its input", i)
					}
					if got, want := str.dataLength(), mem.dataLength(); got != want {
						t.Fatalf("batch %d: streamed data length %d, in memory %d", i, got, want)
					}
					off += int64(s.records) + tc.gap
				}
				want, wantInfo, err := mem.Finish()
				if err != nil {
					t.Fatal(err)
				}
				gotInfo, err := str.Close()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out.Bytes(), want) {
					t.Fatalf("streamed object (%d bytes) differs from the in-memory one (%d)", out.Len(), len(want))
				}
				if gotInfo != wantInfo {
					t.Errorf("streamed Info %+v, in memory %+v", gotInfo, wantInfo)
				}
				if err := parseAll(out.Bytes()); err != nil {
					t.Errorf("streamed object does not parse: %v", err)
				}
			})
		}
	}
}

// failingWriter takes n bytes, then fails every write.
type failingWriter struct{ n int }

var errOutput = errors.New("output failed")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) <= f.n {
		f.n -= len(p)
		return len(p), nil
	}
	n := f.n
	f.n = 0
	return n, errOutput
}

// TestStreamWriterOutputFails checks that a failed write of the output
// fails that Append and every call after it, and that the two kinds of
// Writer refuse each other's finish.
func TestStreamWriterOutputFails(t *testing.T) {
	b := buildBatch(t, spec{records: 5, valSize: 100, ts: 1}, 1)
	w, err := NewStreamWriter(0, Options{}, &failingWriter{n: len(b) + 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(b, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Finish(); err == nil {
		t.Error("Finish of a streaming Writer succeeded")
	}
	if err := w.Append(b, 5, 0); !errors.Is(err, errOutput) {
		t.Fatalf("Append past the output's failure: %v, want it", err)
	}
	if err := w.Append(b, 10, 0); !errors.Is(err, errOutput) {
		t.Errorf("Append after a failed write: %v, want the failure", err)
	}
	if _, err := w.Close(); !errors.Is(err, errOutput) {
		t.Errorf("Close after a failed write: %v, want the failure", err)
	}
	if _, err := NewStreamWriter(0, Options{}, nil); err == nil {
		t.Error("NewStreamWriter without an output succeeded")
	}
	mw, err := NewWriter(0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mw.Close(); err == nil {
		t.Error("Close of an in-memory Writer succeeded")
	}
}
