package ingest

import (
	"testing"
	"time"

	"github.com/floe-io/floe/objectstore"
)

// sources.allWaiting after a script of appends and answers, on a clock the
// steps move.
func TestSourcesAllWaiting(t *testing.T) {
	const recent = 5 * time.Millisecond
	type step struct {
		at       time.Duration // since the start
		appended Source
		answered Source
		want     bool // allWaiting after the step
	}
	const none = Source(1 << 63) // no append or answer in this step
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a lone producer with one request waits for it", []step{
			{0, 1, none, true},
		}},
		{"a pipelining producer below its peak is still sending", []step{
			{0, 1, none, true},
			{time.Millisecond, 1, none, true}, // two in flight: its peak
			{2 * time.Millisecond, none, 1, false},
			{2 * time.Millisecond, none, 1, false},
			{3 * time.Millisecond, 1, none, false}, // one of two
			{3 * time.Millisecond, 1, none, true},  // at its peak again
		}},
		{"another producer that sent within the wait is still sending", []step{
			{0, 2, none, true},
			{0, none, 2, false},
			{time.Millisecond, 1, none, false},
		}},
		{"a trickle quiet for longer than the wait is not waited for", []step{
			{0, 2, none, true},
			{0, none, 2, false},
			{10 * time.Millisecond, 1, none, true},
		}},
		{"a peak is forgotten after two windows", []step{
			{0, 1, none, true},
			{0, 1, none, true},
			{0, none, 1, false},
			{0, none, 1, false},
			{sourceWindow, 1, none, false},    // the last window's peak was 2
			{2 * sourceWindow, none, 1, true}, // quiet since a window: not waited for

			{2*sourceWindow + time.Millisecond, 1, none, true}, // its peaks are 1 and 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s sources
			start := time.Unix(1e9, 0)
			s.windowStart = start
			for i, st := range tc.steps {
				now := start.Add(st.at)
				if st.appended != none {
					s.appended(st.appended, now)
				}
				if st.answered != none {
					s.answered(st.answered)
				}
				if got := s.allWaiting(now, recent); got != st.want {
					t.Fatalf("step %d (%+v): allWaiting %v, want %v", i, st, got, st.want)
				}
			}
		})
	}
}

// With EarlyRollWait, a lone producer's request still rolls at once (it
// waits for its answer, so waiting for more gains nothing), a producer
// below its peak of requests in flight has its requests wait for the next
// one, and an object of EarlyRollBytes rolls without waiting. The waits
// are an hour long, so that any object that did not roll at once would
// never be committed within the test.
func TestEarlyRollWait(t *testing.T) {
	c := &fakeCommitter{}
	in := newTestIngester(t, Options{Linger: time.Hour, MaxPutRate: 1e6, EarlyRollWait: time.Hour, EarlyRollBytes: 64 << 10}, objectstore.NewMemory(), c)
	const a, b = Source(1), Source(2)
	appendFrom := func(src Source, seq uint64, size int) *Pending {
		t.Helper()
		p, err := in.AppendFrom(waitCtx(t), src, 0, []Batch{batch(0, seq, size)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	wait := func(ps ...*Pending) {
		t.Helper()
		for _, p := range ps {
			if _, err := p.Wait(waitCtx(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
	wait(appendFrom(a, 1, 100)) // alone, one in flight: rolls at once
	if n := len(c.committed()); n != 1 {
		t.Fatalf("%d objects after a lone request, want 1", n)
	}

	// a has two requests in flight at once: its peak is 2.
	c.mu.Lock()
	c.block = make(chan struct{})
	c.mu.Unlock()
	p2 := appendFrom(a, 2, 100)
	p3 := appendFrom(a, 3, 100)
	c.mu.Lock()
	close(c.block)
	c.block = nil
	c.mu.Unlock()
	wait(p2, p3)
	before := len(c.committed())

	// One request of a's two waits for the second; both go in one object.
	p4 := appendFrom(a, 4, 100)
	p5 := appendFrom(a, 5, 100)
	wait(p4, p5)
	objs := c.committed()
	if len(objs) != before+1 || len(objs[before].Batches) != 2 {
		t.Fatalf("a's two requests below and at its peak made %d objects (the last of %d batches), want one of 2", len(objs)-before, len(objs[len(objs)-1].Batches))
	}

	// Below its peak, a request of EarlyRollBytes rolls at once.
	wait(appendFrom(a, 6, 64<<10))

	// b's request waits for a, below its peak and active within the wait
	// (an hour here), until a is at its peak again: one object of three.
	pb := appendFrom(b, 7, 100)
	p8 := appendFrom(a, 8, 100)
	p9 := appendFrom(a, 9, 100)
	wait(pb, p8, p9)
	objs = c.committed()
	last := objs[len(objs)-1]
	if len(last.Batches) != 3 {
		t.Fatalf("b's request and a's two made a last object of %d batches, want 3", len(last.Batches))
	}
}
