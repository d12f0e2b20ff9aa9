package share

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// model is a share-partition kept one offset at a time, the simplest
// reading of the rules, to check the ranges' splitting and merging against.
type model struct {
	cfg        Config
	start, end int64
	epoch      int32
	recs       map[int64]Range // First = Last = the offset
}

func newModel(cfg Config, offset int64) *model {
	return &model{cfg: cfg.withDefaults(), start: offset, end: offset, recs: map[int64]Range{}}
}

// runs returns the maximal runs of alike offsets: the canonical ranges.
func (m *model) runs() []Range {
	var out []Range
	for o := m.start; o < m.end; o++ {
		r := m.recs[o]
		if n := len(out); n > 0 && mergeable(out[n-1], r) {
			out[n-1].Last = o
			continue
		}
		out = append(out, r)
	}
	return out
}

func (m *model) runAt(o int64) Range {
	for _, r := range m.runs() {
		if r.First <= o && o <= r.Last {
			return r
		}
	}
	panic(fmt.Sprintf("no run at %d", o))
}

// nextDeadline is the earliest lock deadline, 0 for none (the test clock
// starts at 0, but the lock duration is not 0).
func (m *model) nextDeadline() int64 {
	var d int64
	for _, r := range m.recs {
		if r.State == Acquired && (d == 0 || r.DeadlineMs < d) {
			d = r.DeadlineMs
		}
	}
	return d
}

func (m *model) set(o int64, r Range) {
	r.First, r.Last = o, o
	m.recs[o] = r
}

// advance moves SPSO past completed offsets.
func (m *model) advance() {
	for m.start < m.end && m.recs[m.start].State.terminal() {
		delete(m.recs, m.start)
		m.start++
	}
}

func (m *model) acquire(req AcquireRequest) []AcquiredRecords {
	if req.MaxRecords <= 0 || req.Member == "" {
		return nil
	}
	want := min(int64(req.MaxRecords), int64(m.cfg.MaxRecordLocks)-(m.end-m.start))
	last := req.Bound - 1
	next := m.end
	for o := m.start; o < m.end; o++ {
		if m.recs[o].State == Available {
			next = o
			break
		}
	}
	if want <= 0 {
		if next >= m.end {
			return nil
		}
		want = min(int64(req.MaxRecords), m.end-next)
		last = min(last, m.end-1)
	}
	cut := func(a, l, got int64) int64 {
		if l-a+1 <= want-got {
			return l
		}
		e := a + want - got - 1
		if req.BatchLast != nil {
			e = max(e, req.BatchLast(e))
		}
		return min(e, l)
	}
	held := Range{State: Acquired, Member: req.Member, Via: req.Via, DeadlineMs: req.NowMs + m.cfg.LockDuration.Milliseconds()}
	var out []AcquiredRecords
	var got int64
	for o := next; o < m.end && o <= last && got < want; {
		r := m.runAt(o)
		if r.State != Available {
			o = r.Last + 1
			continue
		}
		e := cut(o, min(r.Last, last), got)
		for x := o; x <= e; x++ {
			h := held
			h.DeliveryCount = m.recs[x].DeliveryCount + 1
			m.set(x, h)
		}
		out = append(out, AcquiredRecords{o, e, r.DeliveryCount + 1})
		got += e - o + 1
		o = e + 1
	}
	if got < want && m.end <= last {
		first := m.end
		e := cut(first, last, got)
		for x := first; x <= e; x++ {
			h := held
			h.DeliveryCount = 1
			m.set(x, h)
		}
		m.end = e + 1
		out = append(out, AcquiredRecords{first, e, 1})
	}
	m.advance()
	return mergeAcquired(out)
}

func (m *model) ack(member string, via int32, nowMs int64, batches []AckBatch) *kerr.Error {
	prev := int64(-1)
	for _, b := range batches {
		if b.First > b.Last || b.First < prev || len(b.Types) == 0 || (len(b.Types) > 1 && int64(len(b.Types)) != b.Last-b.First+1) {
			return kerr.InvalidRequest
		}
		for _, typ := range b.Types {
			if typ < 0 || typ > 4 || (typ == AckRenew && m.cfg.NoRenew) {
				return kerr.InvalidRequest
			}
		}
		prev = b.Last
	}
	done := map[int64]bool{}
	for _, b := range batches {
		if b.Last < m.start {
			continue
		}
		switch {
		case m.end == m.start:
			return kerr.InvalidRecordState
		case max(b.First, m.start) >= m.end || b.Last >= m.end:
			return kerr.InvalidRequest
		}
		for o := max(b.First, m.start); o <= b.Last; o++ {
			if r := m.recs[o]; done[o] || r.State != Acquired || r.Member != member {
				return kerr.InvalidRecordState
			}
			done[o] = true
		}
	}
	for _, b := range batches {
		for o := max(b.First, m.start); o <= b.Last; o++ {
			typ := b.Types[0]
			if len(b.Types) > 1 {
				typ = b.Types[o-b.First]
			}
			r := m.recs[o]
			switch typ {
			case AckAccept:
				r = r.released(Acknowledged)
			case AckGap, AckReject:
				r = r.released(Archived)
			case AckRelease:
				if int(r.DeliveryCount) >= m.cfg.DeliveryCountLimit {
					r = r.released(Archived)
				} else {
					r = r.released(Available)
				}
			case AckRenew:
				r.Via, r.DeadlineMs = via, nowMs+m.cfg.LockDuration.Milliseconds()
			}
			m.set(o, r)
		}
	}
	m.advance()
	return nil
}

func (m *model) expire(nowMs int64) {
	for o := m.start; o < m.end; o++ {
		if r := m.recs[o]; r.State == Acquired && r.DeadlineMs <= nowMs {
			if int(r.DeliveryCount) >= m.cfg.DeliveryCountLimit {
				m.set(o, r.released(Archived))
			} else {
				m.set(o, r.released(Available))
			}
		}
	}
	m.advance()
}

func (m *model) release(member string, via int32) {
	for o := m.start; o < m.end; o++ {
		if r := m.recs[o]; r.State == Acquired && r.Member == member && (via == AnyBroker || via == r.Via) {
			if int(r.DeliveryCount) >= m.cfg.DeliveryCountLimit {
				m.set(o, r.released(Archived))
			} else {
				m.set(o, r.released(Available))
			}
		}
	}
	m.advance()
}

func (m *model) logStart(offset int64) {
	if offset <= m.start {
		return
	}
	for o := m.start; o < min(offset, m.end); o++ {
		delete(m.recs, o)
	}
	m.start, m.end = offset, max(m.end, offset)
	m.advance()
}

func (m *model) reset(offset int64) {
	m.recs = map[int64]Range{}
	m.start, m.end = offset, offset
	m.epoch++
}

// TestModel drives a Partition and the per-offset model with the same
// random operations and compares them after each, with every step's rows
// applied to a store and read back (env checks that and the invariants).
func TestModel(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 5
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, uint64(seed), 400) })
	}
}

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 42))
	cfg := Config{MaxRecordLocks: 40, DeliveryCountLimit: 3, LockDuration: 10_000_000_000, NoRenew: seed%7 == 3}
	e := newEnv(t, cfg, int64(rng.IntN(5)))
	m := newModel(cfg, e.p.Start())
	members := []string{"a", "b", "c"}
	var bound int64
	var log []string
	for step := range steps {
		member := members[rng.IntN(len(members))]
		via := int32(1 + rng.IntN(2))
		var what string
		switch k := rng.IntN(100); {
		case k < 30:
			bound += int64(rng.IntN(9))
			req := AcquireRequest{Member: member, Via: via, NowMs: e.nowMs, MaxRecords: rng.IntN(12), Bound: bound}
			if rng.IntN(2) == 0 {
				req.BatchLast = batchesOf(5)
			}
			what = fmt.Sprintf("acquire %s@%d max=%d bound=%d batches=%v", member, via, req.MaxRecords, bound, req.BatchLast != nil)
			got := e.acquire(req).Acquired
			if want := m.acquire(req); !slices.Equal(got, want) {
				t.Fatalf("step %d %s: acquired %v, model %v\n%v", step, what, got, want, log)
			}
		case k < 70:
			batches := randomAcks(rng, m, member, cfg.NoRenew)
			what = fmt.Sprintf("ack %s@%d %v", member, via, batches)
			err := e.ack(member, via, batches...)
			want := m.ack(member, via, e.nowMs, batches)
			var got *kerr.Error
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("step %d %s: error %v is no Kafka error", step, what, err)
			}
			if got != want {
				t.Fatalf("step %d %s: error %v, model %v\n%v", step, what, err, want, log)
			}
		case k < 82:
			e.nowMs += int64(rng.IntN(4000))
			what = fmt.Sprintf("expire at %d", e.nowMs)
			e.after(e.p.ExpireLocks(e.nowMs))
			m.expire(e.nowMs)
		case k < 90:
			if rng.IntN(2) == 0 {
				via = AnyBroker
			}
			what = fmt.Sprintf("release %s@%d", member, via)
			e.after(e.p.ReleaseMember(member, via))
			m.release(member, via)
		case k < 98:
			o := m.start + int64(rng.IntN(int(m.end-m.start)+4)) - 2
			what = fmt.Sprintf("log-start %d", o)
			e.after(e.p.AdvanceLogStart(o))
			m.logStart(o)
			bound = max(bound, o)
		default:
			o := int64(rng.IntN(int(bound) + 10))
			what = fmt.Sprintf("reset %d", o)
			e.after(e.p.Reset(o))
			m.reset(o)
			bound = max(bound, o)
		}
		log = append(log, what)
		if len(log) > 8 {
			log = log[1:]
		}
		if d, ok := e.p.NextDeadline(); d != m.nextDeadline() || ok != (d != 0) {
			t.Fatalf("step %d %s: next deadline %d, %v; model %d", step, what, d, ok, m.nextDeadline())
		}
		if e.p.Start() != m.start || e.p.End() != m.end || e.p.StateEpoch() != m.epoch || !slices.Equal(e.p.Ranges(), m.runs()) {
			t.Fatalf("step %d %s: state\n%smodel spso=%d end=%d epoch=%d\n%v\nlast steps: %v", step, what, format(e.p), m.start, m.end, m.epoch, m.runs(), log)
		}
	}
}

// randomAcks returns acknowledgement batches for member: mostly parts of
// what it holds, sometimes anything around the share-partition, malformed
// now and then.
func randomAcks(rng *rand.Rand, m *model, member string, noRenew bool) []AckBatch {
	typ := func() AckType {
		if rng.IntN(40) == 0 {
			return AckType(5 + rng.IntN(3)) // invalid
		}
		t := AckType(rng.IntN(5))
		if t == AckRenew && noRenew && rng.IntN(2) == 0 {
			t = AckAccept
		}
		return t
	}
	batch := func(first, last int64) AckBatch {
		b := AckBatch{First: first, Last: last}
		if rng.IntN(3) == 0 && last >= first {
			for range last - first + 1 {
				b.Types = append(b.Types, typ())
			}
		} else {
			b.Types = []AckType{typ()}
		}
		return b
	}
	var held []Range
	for _, r := range m.runs() {
		if r.State == Acquired && r.Member == member {
			held = append(held, r)
		}
	}
	var bs []AckBatch
	if len(held) > 0 && rng.IntN(4) != 0 {
		for _, r := range held {
			if rng.IntN(3) == 0 {
				continue
			}
			a := r.First + int64(rng.IntN(int(r.Len())))
			b := a + int64(rng.IntN(int(r.Last-a+1)))
			bs = append(bs, batch(a, b))
		}
		if len(bs) > 0 {
			return bs
		}
	}
	o := max(0, m.start-int64(rng.IntN(4)))
	for range 1 + rng.IntN(3) {
		first := o + int64(rng.IntN(6))
		last := first + int64(rng.IntN(6))
		if rng.IntN(30) == 0 {
			first, last = last, first-1 // malformed
		}
		bs = append(bs, batch(first, last))
		o = last + 1
		if rng.IntN(20) == 0 {
			o = last // overlap by one
		}
	}
	return bs
}
