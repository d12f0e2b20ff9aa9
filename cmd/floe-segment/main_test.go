package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-io/floe/record"
	"github.com/floe-io/floe/tiered"
)

func TestInspect(t *testing.T) {
	w, err := tiered.NewWriter(100, tiered.Options{IndexIntervalBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []record.Codec{record.CodecNone, record.CodecZstd} {
		b, err := record.Build(record.BuildOptions{Codec: c, BaseTimestamp: int64(1000 * (i + 1)), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]record.Record{{Value: []byte("a")}, {Value: []byte("b"), TimestampDelta: 5}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(b, 100+int64(2*i), 7); err != nil {
			t.Fatal(err)
		}
	}
	obj, _, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.seg")
	if err := os.WriteFile(path, obj, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{path}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"trailer: version 1, offsets 100-103, max timestamp 2005, 2 batches",
		"offsets 102-103, 2 records, max timestamp 2005, codec zstd, epoch 7",
		"offset 102 -> position ",
		"timestamp 2005 -> offset 102",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := os.WriteFile(path, obj[:len(obj)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{path}, &out); err == nil {
		t.Fatal("a truncated segment printed without an error")
	}
}
