package objectstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floe-io/floe/objectstore"
)

func TestFaulty(t *testing.T) {
	ctx := context.Background()
	type result struct {
		err      error // nil, or what errors.Is must match
		inInner  bool  // for puts: the object reached the inner store
		injected bool
	}
	for _, tc := range []struct {
		name  string
		opts  objectstore.FaultOptions
		op    string // put, get, delete, list, head
		calls []result
		stats objectstore.FaultStats
	}{
		{
			name:  "no faults",
			op:    "put",
			calls: []result{{inInner: true}, {inInner: true}},
			stats: objectstore.FaultStats{Puts: 2},
		},
		{
			name:  "put error rate 1 writes nothing",
			opts:  objectstore.FaultOptions{PutErrorRate: 1},
			op:    "put",
			calls: []result{{err: objectstore.ErrInjected}},
			stats: objectstore.FaultStats{Puts: 1, PutErrors: 1},
		},
		{
			name: "fail next 2 puts",
			opts: objectstore.FaultOptions{FailNextPuts: 2},
			op:   "put",
			calls: []result{
				{err: objectstore.ErrInjected}, {err: objectstore.ErrInjected}, {inInner: true},
			},
			stats: objectstore.FaultStats{Puts: 3, PutErrors: 2},
		},
		{
			name:  "ambiguous next put writes then fails",
			opts:  objectstore.FaultOptions{AmbiguousNextPuts: 1},
			op:    "put",
			calls: []result{{err: objectstore.ErrInjected, inInner: true}, {inInner: true}},
			stats: objectstore.FaultStats{Puts: 2, AmbiguousPuts: 1},
		},
		{
			name:  "ambiguous put rate 1",
			opts:  objectstore.FaultOptions{AmbiguousPutRate: 1},
			op:    "put",
			calls: []result{{err: objectstore.ErrInjected, inInner: true}},
			stats: objectstore.FaultStats{Puts: 1, AmbiguousPuts: 1},
		},
		{
			name:  "fail next put wins over ambiguous",
			opts:  objectstore.FaultOptions{FailNextPuts: 1, AmbiguousNextPuts: 1},
			op:    "put",
			calls: []result{{err: objectstore.ErrInjected}, {err: objectstore.ErrInjected, inInner: true}, {inInner: true}},
			stats: objectstore.FaultStats{Puts: 3, PutErrors: 1, AmbiguousPuts: 1},
		},
		{
			name:  "get error rate 1",
			opts:  objectstore.FaultOptions{GetErrorRate: 1},
			op:    "get",
			calls: []result{{err: objectstore.ErrInjected}},
			stats: objectstore.FaultStats{Gets: 1, GetErrors: 1},
		},
		{
			name:  "get passes through not found",
			op:    "get",
			calls: []result{{err: objectstore.ErrNotFound}},
			stats: objectstore.FaultStats{Gets: 1},
		},
		{
			name:  "delete error rate 1",
			opts:  objectstore.FaultOptions{DeleteErrorRate: 1},
			op:    "delete",
			calls: []result{{err: objectstore.ErrInjected}},
			stats: objectstore.FaultStats{Deletes: 1, DeleteErrors: 1},
		},
		{
			name:  "list error rate 1",
			opts:  objectstore.FaultOptions{ListErrorRate: 1},
			op:    "list",
			calls: []result{{err: objectstore.ErrInjected}},
			stats: objectstore.FaultStats{Lists: 1, ListErrors: 1},
		},
		{
			name:  "head error rate 1",
			opts:  objectstore.FaultOptions{HeadErrorRate: 1},
			op:    "head",
			calls: []result{{err: objectstore.ErrInjected}},
			stats: objectstore.FaultStats{Heads: 1, HeadErrors: 1},
		},
		{
			name:  "other ops unaffected by put faults",
			opts:  objectstore.FaultOptions{PutErrorRate: 1, FailNextPuts: 3},
			op:    "list",
			calls: []result{{}, {}},
			stats: objectstore.FaultStats{Lists: 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := objectstore.NewMemory()
			f := objectstore.NewFaulty(inner, tc.opts)
			for i, want := range tc.calls {
				key := fmt.Sprintf("k/%d", i)
				var err error
				switch tc.op {
				case "put":
					err = f.Put(ctx, key, []byte("data"))
				case "get":
					_, err = f.GetRange(ctx, key, 0, -1)
				case "delete":
					err = f.Delete(ctx, key)
				case "list":
					_, err = f.List(ctx, "k/")
				case "head":
					_, err = f.Head(ctx, key)
				}
				if want.err == nil && err != nil || want.err != nil && !errors.Is(err, want.err) {
					t.Errorf("call %d: error = %v, want %v", i, err, want.err)
				}
				if tc.op == "put" {
					_, herr := inner.Head(ctx, key)
					if got := herr == nil; got != want.inInner {
						t.Errorf("call %d: object in inner store = %v, want %v", i, got, want.inInner)
					}
				}
			}
			if got := f.Stats(); got != tc.stats {
				t.Errorf("Stats = %+v, want %+v", got, tc.stats)
			}
		})
	}
}

func TestFaultySetters(t *testing.T) {
	ctx := context.Background()
	f := objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{})
	for _, tc := range []struct {
		name string
		set  func(float64)
		call func() error
	}{
		{"put", f.SetPutErrorRate, func() error { return f.Put(ctx, "s/k", []byte("x")) }},
		{"get", f.SetGetErrorRate, func() error { _, err := f.GetRange(ctx, "s/k", 0, -1); return err }},
		{"head", f.SetHeadErrorRate, func() error { _, err := f.Head(ctx, "s/k"); return err }},
		{"list", f.SetListErrorRate, func() error { _, err := f.List(ctx, "s/"); return err }},
		{"delete", f.SetDeleteErrorRate, func() error { return f.Delete(ctx, "s/k") }},
	} {
		tc.set(1)
		if err := tc.call(); !errors.Is(err, objectstore.ErrInjected) {
			t.Errorf("%s at rate 1: error = %v, want ErrInjected", tc.name, err)
		}
		tc.set(0)
		if err := tc.call(); err != nil {
			t.Errorf("%s at rate 0: %v", tc.name, err)
		}
	}

	f.SetAmbiguousPutRate(1)
	if err := f.Put(ctx, "s/amb", []byte("x")); !errors.Is(err, objectstore.ErrInjected) {
		t.Errorf("ambiguous put: error = %v", err)
	}
	if _, err := f.Inner().Head(ctx, "s/amb"); err != nil {
		t.Errorf("ambiguous put did not write: %v", err)
	}
	f.FailNextPuts(1)
	f.AmbiguousNextPuts(1)
	f.SetPutErrorRate(1)
	f.SetLatency(time.Hour, 0)
	f.Heal()
	if o := f.Options(); o != (objectstore.FaultOptions{}) {
		t.Errorf("after Heal, Options = %+v", o)
	}
	if err := f.Put(ctx, "s/healed", []byte("x")); err != nil {
		t.Errorf("put after Heal: %v", err)
	}
}

// faultPattern returns which of n sequential puts fail.
func faultPattern(seed uint64, rate float64, n int) []bool {
	f := objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{Seed: seed, PutErrorRate: rate})
	out := make([]bool, n)
	for i := range out {
		out[i] = f.Put(context.Background(), fmt.Sprintf("p/%d", i), nil) != nil
	}
	return out
}

func TestFaultyDeterministic(t *testing.T) {
	a, b := faultPattern(42, 0.5, 200), faultPattern(42, 0.5, 200)
	c := faultPattern(43, 0.5, 200)
	failed := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed differs at put %d", i)
		}
		if a[i] {
			failed++
		}
	}
	if failed < 60 || failed > 140 {
		t.Errorf("rate 0.5 failed %d of 200 puts", failed)
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Errorf("seeds 42 and 43 gave the same 200 outcomes")
	}
}

func TestFaultyLatency(t *testing.T) {
	ctx := context.Background()
	f := objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{
		Latency: 20 * time.Millisecond, LatencyJitter: 10 * time.Millisecond,
	})
	start := time.Now()
	if err := f.Put(ctx, "l/k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("put took %v, want >= 20ms", d)
	}

	f.SetLatency(time.Hour, 0)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err := f.GetRange(cctx, "l/k", 0, -1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("get under 1h latency with 20ms deadline: error = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("get did not give up at its deadline: took %v", d)
	}
}

// TestFaultyConcurrent changes faults while calls run; it is for the race
// detector and checks that the counters add up.
func TestFaultyConcurrent(t *testing.T) {
	ctx := context.Background()
	f := objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{
		PutErrorRate: 0.3, GetErrorRate: 0.3, AmbiguousPutRate: 0.2,
	})
	const workers, perWorker = 8, 100
	var wg sync.WaitGroup
	var mu sync.Mutex
	var putErrs, getErrs int64
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				key := fmt.Sprintf("c/%d/%d", w, i)
				if err := f.Put(ctx, key, []byte("x")); err != nil {
					mu.Lock()
					putErrs++
					mu.Unlock()
				}
				if _, err := f.GetRange(ctx, key, 0, -1); errors.Is(err, objectstore.ErrInjected) {
					mu.Lock()
					getErrs++
					mu.Unlock()
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			f.SetPutErrorRate(float64(i%3) / 4)
			f.FailNextPuts(1)
			_ = f.Stats()
		}
	})
	wg.Wait()
	st := f.Stats()
	if st.Puts != workers*perWorker || st.Gets != workers*perWorker {
		t.Errorf("Stats calls = %d puts, %d gets; want %d each", st.Puts, st.Gets, workers*perWorker)
	}
	if st.PutErrors+st.AmbiguousPuts != putErrs {
		t.Errorf("Stats put faults %d + %d, callers saw %d", st.PutErrors, st.AmbiguousPuts, putErrs)
	}
	if st.GetErrors != getErrs {
		t.Errorf("Stats get errors %d, callers saw %d", st.GetErrors, getErrs)
	}
}
