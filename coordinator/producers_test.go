package coordinator

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

const (
	codeOOOSN = 45
	codeEpoch = 47
)

func TestIdempotentDuplicates(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 2, nil)
	const pid = 7

	req := []coordapi.CommitBatch{
		idem(tp.ID, 0, 4, pid, 0, 0), // seq 0-4
		idem(tp.ID, 1, 1, pid, 0, 0), // seq 0-1 on partition 1
		idem(tp.ID, 0, 2, pid, 0, 5), // seq 5-7: sees the first batch of this object
	}
	if got := baseOffsets(e.commit("o1", req...)); got != "0 0 5" {
		t.Fatalf("first commit: %s", got)
	}
	// The same object committed again (a retried commit): all duplicates,
	// answered with their original offsets, nothing assigned.
	if got := baseOffsets(e.commit("o1", req...)); got != "0 0 5" {
		t.Fatalf("recommit: %s", got)
	}
	if st := e.state(tp.ID, 0); st.HighWatermark != 8 {
		t.Fatalf("hwm after duplicates %d", st.HighWatermark)
	}
	if o := e.object("o1"); o.LiveBytes != 3*batchLen {
		t.Errorf("duplicates counted live: %+v", o)
	}
	// A retried batch in a later object, next to a new one.
	got := baseOffsets(e.commit("o2",
		idem(tp.ID, 0, 2, pid, 0, 5),   // retry of seq 5-7
		idem(tp.ID, 0, 0, pid, 0, 8),   // new: seq 8
		idem(tp.ID, 0, 0, pid, 0, 8),   // duplicate within the object
		idem(tp.ID, 0, 4, pid, 0, 0),   // retry of the very first
		plain(tp.ID, 0, 0),             // unrelated batch
		idem(tp.ID, 0, 0, pid+1, 0, 0), // another producer
	))
	if got != "5 8 8 0 9 10" {
		t.Fatalf("later object: %s", got)
	}
	// Duplicate on a LogAppendTime topic answers its original append time.
	lat := e.topic("lat", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	first := e.commit("o3", idem(lat.ID, 0, 0, pid, 0, 0))[0]
	e.clock.Advance(time.Second)
	dup := e.commit("o4", idem(lat.ID, 0, 0, pid, 0, 0))[0]
	if dup != first || first.LogAppendTime != e.clock.Now().Add(-time.Second).UnixMilli() {
		t.Errorf("LogAppendTime duplicate %+v, first %+v", dup, first)
	}
}

func TestIdempotentSequenceRules(t *testing.T) {
	type step struct {
		epoch int16
		seq   int32
		delta int32
		want  string // base offset or errN
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"unknown producer starts anywhere", []step{{0, 42, 0, "0"}, {0, 43, 1, "1"}}},
		{"gap", []step{{0, 0, 0, "0"}, {0, 2, 0, "err45"}, {0, 1, 0, "1"}}},
		{"going back past the last five", []step{
			{0, 0, 0, "0"}, {0, 1, 0, "1"}, {0, 2, 0, "2"}, {0, 3, 0, "3"}, {0, 4, 0, "4"}, {0, 5, 0, "5"},
			{0, 1, 0, "1"}, // still among the last five: duplicate
			{0, 0, 0, "err45"},
		}},
		{"same base, other range is not a duplicate", []step{{0, 0, 3, "0"}, {0, 0, 1, "err45"}}},
		{"stale epoch", []step{{3, 0, 0, "0"}, {2, 1, 0, "err47"}, {2, 0, 0, "err47"}, {3, 1, 0, "1"}}},
		{"epoch bump must start at 0", []step{{0, 0, 0, "0"}, {1, 5, 0, "err45"}, {1, 0, 0, "1"}, {0, 1, 0, "err47"}, {1, 1, 0, "2"}}},
		{"duplicate needs the same epoch", []step{{0, 0, 0, "0"}, {1, 0, 0, "1"}, {1, 0, 0, "1"}}},
		{"sequence wraps", []step{
			{0, math.MaxInt32 - 1, 1, "0"}, // seq MaxInt32-1 .. MaxInt32
			{0, 0, 2, "2"},                 // wraps to 0
			{0, 3, 0, "5"},
		}},
		{"batch crossing the wrap", []step{
			{0, math.MaxInt32, 2, "0"}, // seq MaxInt32, 0, 1
			{0, 2, 0, "3"},
			{0, math.MaxInt32, 2, "0"}, // duplicate
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tp := e.topic("t", 1, nil)
			for i, s := range tt.steps {
				got := baseOffsets(e.commit("o", idem(tp.ID, 0, s.delta, 1, s.epoch, s.seq)))
				if got != s.want {
					t.Fatalf("step %d %+v: got %s", i, s, got)
				}
			}
		})
	}
}

func TestIdempotentInvalidRecord(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 1, nil)
	got := baseOffsets(e.commit("o", idem(tp.ID, 0, 0, 1, -1, 0), idem(tp.ID, 0, 0, 1, 0, -1), idem(tp.ID, 0, 0, 1, 0, 0)))
	if got != "err87 err87 0" {
		t.Errorf("got %s", got)
	}
}

func TestInitProducerID(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	init := func(pid int64, epoch int16) (coordapi.InitProducerIDResponse, error) {
		return e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: pid, ProducerEpoch: epoch, TimeoutMs: 60000})
	}
	r1, err := init(-1, -1)
	if err != nil || r1.ProducerEpoch != 0 {
		t.Fatalf("new: %+v %v", r1, err)
	}
	r2, _ := init(-1, -1)
	if r2.ProducerID != r1.ProducerID+1 || r2.ProducerEpoch != 0 {
		t.Fatalf("second new: %+v after %+v", r2, r1)
	}
	// KIP-360 bump.
	b1, err := init(r1.ProducerID, 0)
	if err != nil || b1 != (coordapi.InitProducerIDResponse{ProducerID: r1.ProducerID, ProducerEpoch: 1}) {
		t.Fatalf("bump: %+v %v", b1, err)
	}
	// A retry of that bump gets the same answer.
	if b, err := init(r1.ProducerID, 0); err != nil || b != b1 {
		t.Fatalf("retried bump: %+v %v", b, err)
	}
	b2, err := init(r1.ProducerID, 1)
	if err != nil || b2.ProducerEpoch != 2 {
		t.Fatalf("second bump: %+v %v", b2, err)
	}
	// Older than current and not the retried one: fenced.
	_, err = init(r1.ProducerID, 0)
	wantKerr(t, err, kerr.InvalidProducerEpoch)
	// A client ahead of us (local bumps) is bumped from its own epoch.
	if b, err := init(r1.ProducerID, 10); err != nil || b.ProducerEpoch != 11 || b.ProducerID != r1.ProducerID {
		t.Fatalf("bump from ahead: %+v %v", b, err)
	}
	// Exhausted epoch rolls to a new id.
	if b, err := init(r2.ProducerID, math.MaxInt16-1); err != nil || b.ProducerID == r2.ProducerID || b.ProducerEpoch != 0 {
		t.Fatalf("exhausted: %+v %v", b, err)
	}
	// An id never handed out gets a new one.
	if b, err := init(1<<40, 3); err != nil || b.ProducerID == 1<<40 || b.ProducerEpoch != 0 {
		t.Fatalf("unknown id: %+v %v", b, err)
	}
	_, err = init(5, -1)
	wantKerr(t, err, kerr.InvalidRequest)

	// Idempotent producers may send any timeout (librdkafka sends -1).
	if _, err := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1, TimeoutMs: math.MaxInt32}); err != nil {
		t.Fatalf("idempotent with big timeout: %v", err)
	}
	txn := "txn"
	_, err = e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{TransactionalID: &txn, TimeoutMs: 900001, ProducerID: -1, ProducerEpoch: -1})
	wantKerr(t, err, kerr.InvalidTransactionTimeout)
	// A valid transactional id gets its producer (txn_test.go).
	if r, err := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{TransactionalID: &txn, TimeoutMs: 60000, ProducerID: -1, ProducerEpoch: -1}); err != nil || r.ProducerEpoch != 0 {
		t.Fatalf("transactional id: %+v, %v", r, err)
	}
}

func TestEpochBumpThenCommit(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 1, nil)
	ctx := context.Background()
	r, _ := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	e.commit("o1", idem(tp.ID, 0, 0, r.ProducerID, r.ProducerEpoch, 0), idem(tp.ID, 0, 0, r.ProducerID, r.ProducerEpoch, 1))
	// The client hits OUT_OF_ORDER_SEQUENCE, bumps, restarts at 0.
	b, err := e.c.InitProducerID(ctx, coordapi.InitProducerIDRequest{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch})
	if err != nil {
		t.Fatal(err)
	}
	got := baseOffsets(e.commit("o2",
		idem(tp.ID, 0, 0, b.ProducerID, b.ProducerEpoch, 0),
		idem(tp.ID, 0, 0, r.ProducerID, r.ProducerEpoch, 2), // a zombie with the old epoch
	))
	if got != "2 err47" {
		t.Errorf("after bump: %s", got)
	}
}

func TestExpireProducers(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 1, nil)
	ctx := context.Background()
	e.commit("o1", idem(tp.ID, 0, 0, 1, 0, 0))
	e.clock.Advance(2 * time.Hour)
	e.commit("o2", idem(tp.ID, 0, 0, 2, 0, 0))
	n, err := e.c.ExpireProducers(ctx, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("expired %d, %v", n, err)
	}
	// The expiry is durable. Producer 1 is unknown now: any sequence goes;
	// producer 2 keeps its state.
	e.reopen()
	if got := baseOffsets(e.commit("o3", idem(tp.ID, 0, 0, 1, 0, 9), idem(tp.ID, 0, 0, 2, 0, 9))); got != "2 err45" {
		t.Errorf("after expiry: %s", got)
	}
}
