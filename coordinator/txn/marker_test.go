package txn

import (
	"bytes"
	"testing"

	"github.com/floe-io/floe/record"
)

// TestMarkerBatch: a marker is a valid transactional control batch of the
// producer with no sequence, holding one record: key version 0 and the
// type, value version 0 and coordinator epoch 0.
func TestMarkerBatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		commit  bool
		wantKey []byte
	}{
		{"abort", false, []byte{0, 0, 0, 0}},
		{"commit", true, []byte{0, 0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := MarkerBatch(42, 3, tc.commit, 1700)
			if err != nil {
				t.Fatal(err)
			}
			h, err := record.Validate(b)
			if err != nil {
				t.Fatal(err)
			}
			if !h.Control() || h.Attributes&record.AttrTransactional == 0 || h.ProducerID != 42 || h.ProducerEpoch != 3 ||
				h.BaseSequence != -1 || h.BaseTimestamp != 1700 || h.NumRecords != 1 {
				t.Fatalf("header %+v", h)
			}
			err = record.Records(b, func(r *record.Record) error {
				if !bytes.Equal(r.Key, tc.wantKey) || !bytes.Equal(r.Value, []byte{0, 0, 0, 0, 0, 0}) {
					t.Fatalf("record key %v value %v", r.Key, r.Value)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
