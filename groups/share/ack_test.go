package share

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func ack(first, last int64, types ...AckType) AckBatch {
	return AckBatch{First: first, Last: last, Types: types}
}

// TestAcknowledgeErrors checks the error code of each way an
// acknowledgement fails, as Kafka 4.4 answers it, on this state:
//
//	0-4 acquired by a, 5 available, 6 a's, 7 acknowledged, 8-9 a's,
//	10-14 acquired by b; SPSO 0, end 15.
func TestAcknowledgeErrors(t *testing.T) {
	setup := func(t *testing.T, cfg Config) *env {
		e := newEnv(t, cfg, 0)
		e.acquire(AcquireRequest{Member: "a", Via: 1, MaxRecords: 10, Bound: 100})
		e.acquire(AcquireRequest{Member: "b", Via: 1, MaxRecords: 5, Bound: 100})
		if err := e.ack("a", 1, ack(5, 5, AckRelease), ack(7, 7, AckAccept)); err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		member  string
		batches []AckBatch
		want    *kerr.Error // nil: success
	}{
		{"own records", Config{}, "a", []AckBatch{ack(0, 4, AckAccept), ack(6, 6, AckReject)}, nil},
		{"per-offset types", Config{}, "a", []AckBatch{ack(0, 4, AckAccept, AckGap, AckRelease, AckReject, AckRenew)}, nil},
		{"another member's", Config{}, "a", []AckBatch{ack(8, 10, AckAccept)}, kerr.InvalidRecordState},
		{"unknown member", Config{}, "z", []AckBatch{ack(0, 0, AckAccept)}, kerr.InvalidRecordState},
		{"available", Config{}, "a", []AckBatch{ack(4, 5, AckAccept)}, kerr.InvalidRecordState},
		{"acknowledged", Config{}, "a", []AckBatch{ack(7, 7, AckRelease)}, kerr.InvalidRecordState},
		{"release twice", Config{}, "a", []AckBatch{ack(5, 5, AckRelease)}, kerr.InvalidRecordState},
		{"later batch fails all", Config{}, "a", []AckBatch{ack(0, 4, AckAccept), ack(5, 5, AckAccept)}, kerr.InvalidRecordState},
		{"first past end", Config{}, "b", []AckBatch{ack(15, 16, AckAccept)}, kerr.InvalidRequest},
		{"last past end", Config{}, "b", []AckBatch{ack(14, 15, AckAccept)}, kerr.InvalidRequest},
		{"first after last", Config{}, "a", []AckBatch{ack(4, 3, AckAccept)}, kerr.InvalidRequest},
		{"overlap", Config{}, "a", []AckBatch{ack(0, 3, AckAccept), ack(2, 4, AckAccept)}, kerr.InvalidRequest},
		{"out of order", Config{}, "a", []AckBatch{ack(3, 4, AckAccept), ack(0, 1, AckAccept)}, kerr.InvalidRequest},
		{"overlap by one", Config{}, "a", []AckBatch{ack(0, 3, AckAccept), ack(3, 4, AckAccept)}, kerr.InvalidRecordState},
		{"no type", Config{}, "a", []AckBatch{ack(0, 4)}, kerr.InvalidRequest},
		{"type count", Config{}, "a", []AckBatch{ack(0, 4, AckAccept, AckAccept)}, kerr.InvalidRequest},
		{"negative type", Config{}, "a", []AckBatch{ack(0, 0, -1)}, kerr.InvalidRequest},
		{"internal type", Config{}, "a", []AckBatch{ack(0, 0, 5)}, kerr.InvalidRequest},
		{"renew refused", Config{NoRenew: true}, "a", []AckBatch{ack(0, 0, AckRenew)}, kerr.InvalidRequest},
		{"malformed beats state", Config{}, "a", []AckBatch{ack(10, 10, AckAccept), ack(12, 11, AckAccept)}, kerr.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, tc.cfg)
			err := e.ack(tc.member, 1, tc.batches...)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("got %v, want success", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("got %v, want %s", err, tc.want.Message)
			}
		})
	}
}

// TestAcknowledgeBelowStart: batches below SPSO are skipped and straddling
// ones cut, with no error; with nothing in flight any batch at or past
// SPSO is INVALID_RECORD_STATE.
func TestAcknowledgeBelowStart(t *testing.T) {
	e := newEnv(t, Config{}, 0)
	e.acquire(AcquireRequest{Member: "a", Via: 1, MaxRecords: 10, Bound: 100})
	e.after(e.p.AdvanceLogStart(4))
	if err := e.ack("a", 1, ack(0, 2, AckAccept), ack(3, 5, AckAccept)); err != nil {
		t.Fatalf("acks below and across SPSO: %v", err)
	}
	if e.p.Start() != 6 {
		t.Fatalf("SPSO %d, want 6", e.p.Start())
	}
	if err := e.ack("a", 1, ack(6, 9, AckAccept)); err != nil {
		t.Fatal(err)
	}
	if err := e.ack("a", 1, ack(0, 9, AckAccept)); err != nil {
		t.Fatalf("acks wholly below SPSO: %v", err)
	}
	if err := e.ack("a", 1, ack(9, 10, AckAccept)); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("ack with nothing in flight: got %v, want INVALID_RECORD_STATE", err)
	}
	fresh := newEnv(t, Config{}, 0)
	if err := fresh.ack("a", 1, ack(0, 0, AckAccept)); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("ack on a new share-partition: got %v, want INVALID_RECORD_STATE", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	err := Config{MaxRecordLocks: -1, DeliveryCountLimit: 1 << 15, LockDuration: -1}.Validate()
	if err == nil || len(err.(interface{ Unwrap() []error }).Unwrap()) != 3 {
		t.Fatalf("bad config: %v, want three errors", err)
	}
}
