package share

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

var testID = ID{Group: "g", Topic: [16]byte{1, 2, 3}, Partition: 7}

// store is an in-memory stand-in for the group coordinator's Pebble: it
// applies Mutations as a pebble.Batch would.
type store struct{ m map[string][]byte }

func newStore() *store { return &store{m: map[string][]byte{}} }

func (s *store) apply(ms []Mutation) {
	for _, m := range ms {
		switch m.Op {
		case OpSet:
			s.m[string(m.Key)] = bytes.Clone(m.Value)
		case OpDelete:
			delete(s.m, string(m.Key))
		case OpDeleteRange:
			for k := range s.m {
				if k >= string(m.Key) && (m.End == nil || k < string(m.End)) {
					delete(s.m, k)
				}
			}
		}
	}
}

// load reads share-partition id back as Open would: its head, then the
// rows under it in key order.
func (s *store) load(id ID, cfg Config) (*Partition, error) {
	h := HeadKey(id)
	hv, ok := s.m[string(h)]
	if !ok {
		return nil, errors.New("no head row")
	}
	var keys []string
	for k := range s.m {
		if strings.HasPrefix(k, string(h)) && k != string(h) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	rows := make([]Row, len(keys))
	for i, k := range keys {
		rows[i] = Row{Key: []byte(k), Value: s.m[k]}
	}
	return Load(id, cfg, hv, rows)
}

// checkInvariants checks what every operation leaves: the ranges tile
// [start, end), are well formed, canonical (no two neighbours alike), and
// do not start with a completed range.
func checkInvariants(p *Partition) error {
	if p.start < 0 || p.end < p.start {
		return fmt.Errorf("start %d, end %d", p.start, p.end)
	}
	next := p.start
	for i, r := range p.ranges {
		switch {
		case r.First != next:
			return fmt.Errorf("range %d (%v) starts at %d, expected %d", i, r, r.First, next)
		case r.Last < r.First:
			return fmt.Errorf("range %d (%v) is empty", i, r)
		case !r.State.valid():
			return fmt.Errorf("range %d (%v): bad state", i, r)
		case r.State == Acquired && (r.Member == "" || r.DeliveryCount < 1):
			return fmt.Errorf("range %d (%v): acquired without holder or count", i, r)
		case r.State != Acquired && (r.Member != "" || r.Via != 0 || r.DeadlineMs != 0):
			return fmt.Errorf("range %d (%v): holder outside Acquired", i, r)
		case r.DeliveryCount < 0:
			return fmt.Errorf("range %d (%v): negative count", i, r)
		case i == 0 && r.State.terminal():
			return fmt.Errorf("range 0 (%v) is completed: SPSO should be past it", r)
		case i > 0 && mergeable(p.ranges[i-1], r):
			return fmt.Errorf("ranges %d and %d (%v, %v) should be one", i-1, i, p.ranges[i-1], r)
		}
		next = r.Last + 1
	}
	if next != p.end {
		return fmt.Errorf("ranges end at %d, end is %d", next, p.end)
	}
	return nil
}

// samePartition reports how a and b differ in state, or "".
func samePartition(a, b *Partition) string {
	switch {
	case a.id != b.id:
		return fmt.Sprintf("id %v vs %v", a.id, b.id)
	case a.start != b.start || a.end != b.end || a.epoch != b.epoch || a.initMs != b.initMs:
		return fmt.Sprintf("head %d-%d e%d i%d vs %d-%d e%d i%d", a.start, a.end, a.epoch, a.initMs, b.start, b.end, b.epoch, b.initMs)
	case !slices.Equal(a.ranges, b.ranges):
		return fmt.Sprintf("ranges\n%v\nvs\n%v", a.ranges, b.ranges)
	}
	return ""
}

// env drives a Partition the way package groups will: every operation's
// rows go to a store, and the state read back from the store must be the
// one in memory.
type env struct {
	t     testing.TB
	p     *Partition
	s     *store
	nowMs int64
	last  Result
}

func newEnv(t testing.TB, cfg Config, offset int64) *env {
	e := &env{t: t, s: newStore()}
	p, res := New(testID, cfg, offset, e.nowMs)
	e.p = p
	e.after(res)
	return e
}

// after persists res and checks the invariants and the round trip.
func (e *env) after(res Result) Result {
	e.t.Helper()
	e.last = res
	if err := checkInvariants(e.p); err != nil {
		e.t.Fatalf("invariants: %v\n%s", err, format(e.p))
	}
	e.s.apply(res.Rows)
	back, err := e.s.load(e.p.id, e.p.cfg)
	if err != nil {
		e.t.Fatalf("load after %v: %v", res.Rows, err)
	}
	if d := samePartition(e.p, back); d != "" {
		e.t.Fatalf("stored state differs after rows %v: %s", res.Rows, d)
	}
	return res
}

func (e *env) acquire(req AcquireRequest) Result {
	e.t.Helper()
	req.NowMs = e.nowMs
	return e.after(e.p.Acquire(req))
}

func (e *env) ack(member string, via int32, batches ...AckBatch) error {
	e.t.Helper()
	before := e.p.Clone()
	res, err := e.p.Acknowledge(member, via, e.nowMs, batches)
	if err != nil {
		if d := samePartition(before, e.p); d != "" {
			e.t.Fatalf("a failed acknowledgement changed the state: %s", d)
		}
		if len(res.Rows) != 0 {
			e.t.Fatalf("a failed acknowledgement has rows: %v", res.Rows)
		}
	}
	e.after(res)
	return err
}

// batchesOf returns a BatchLast for log batches of n records from 0.
func batchesOf(n int64) func(int64) int64 {
	return func(o int64) int64 { return o - o%n + n - 1 }
}

// format prints the partition as the data-driven tests expect it.
func format(p *Partition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "spso=%d end=%d epoch=%d completed=%d\n", p.start, p.end, p.epoch, p.Completed())
	for _, r := range p.ranges {
		fmt.Fprintf(&b, "  %v\n", r)
	}
	return b.String()
}

// errString prints an acknowledgement error as its Kafka error name and the
// package's message.
func errString(err error) string {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("error %s: %s", ke.Message, strings.TrimSuffix(err.Error(), ": "+ke.Error()))
}
