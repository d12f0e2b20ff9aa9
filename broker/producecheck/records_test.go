package producecheck

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/record"
)

// keyedBatch builds a batch of records with keys ("" for none).
func keyedBatch(t *testing.T, keys ...string) []byte {
	t.Helper()
	recs := make([]record.Record, len(keys))
	for i, k := range keys {
		recs[i].Value = []byte("v")
		if k != "" {
			recs[i].Key = []byte(k)
		}
	}
	data, err := record.Build(record.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRecordsKeys: what each kind of topic gets from a batch's pass: a
// plain topic nothing, a kv-indexed one every keyed record, a
// hierarchical one each distinct key once at its first record, keyless
// records counted; a compacted topic refuses them.
func TestRecordsKeys(t *testing.T) {
	data := keyedBatch(t, "a", "b", "", "a", "c", "b")
	for _, tc := range []struct {
		name   string
		rules  Rules
		keys   string
		null   int64
		refuse bool
	}{
		{name: "plain", keys: "[]"},
		{name: "kv-indexed", rules: Rules{KVIndexed: true}, keys: "[a@0 b@1 a@3 c@4 b@5]", null: 1},
		{name: "hierarchical", rules: Rules{Hierarchical: true}, keys: "[a@0 b@1 c@4]", null: 1},
		{name: "compacted", rules: Rules{Compacted: true}, refuse: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, null, err := Records(data, tc.rules)
			if tc.refuse {
				if !errors.Is(err, kerr.InvalidRecord) {
					t.Fatalf("keyless record on a compacted topic: %v, want INVALID_RECORD", err)
				}
				return
			}
			got := []string{}
			for _, k := range keys {
				got = append(got, fmt.Sprintf("%s@%d", k.Key, k.OffsetDelta))
			}
			if err != nil || fmt.Sprint(got) != tc.keys || null != tc.null {
				t.Errorf("keys %v, %d keyless, %v; want %s, %d", got, null, err, tc.keys, tc.null)
			}
		})
	}
}

// TestTransactional: a transactional batch needs the request's
// transactional id, and its commit carries it.
func TestTransactional(t *testing.T) {
	batches := []ingest.Batch{{}, {Commit: coordapi.CommitBatch{Transactional: true}}}
	if err := Transactional(batches, nil); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("without a transactional id: %v, want INVALID_RECORD", err)
	}
	id := "tx"
	if err := Transactional(batches, &id); err != nil || batches[1].Commit.TransactionalID != "tx" || batches[0].Commit.TransactionalID != "" {
		t.Fatalf("with one: %v, commits %+v", err, batches)
	}
}

// BenchmarkRecordsIndexed measures the produce path's record pass on a
// kv-indexed topic: a 500-record lz4 batch, keys extracted for the index.
func BenchmarkRecordsIndexed(b *testing.B) {
	recs := make([]record.Record, 500)
	for i := range recs {
		recs[i] = record.Record{Key: fmt.Appendf(nil, "key-%06d", i), Value: make([]byte, 100)}
	}
	data, err := record.Build(record.BuildOptions{Codec: record.CodecLZ4, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		keys, _, err := Records(data, Rules{Compacted: true, KVIndexed: true})
		if err != nil || len(keys) != len(recs) {
			b.Fatalf("%d keys, %v", len(keys), err)
		}
	}
}
