package ingest

import (
	"testing"
	"time"

	"github.com/floe-io/floe/objectstore"
)

// The PUT budget's tokens: MaxPutRate's per second, MaxPutsPerGiB's per byte
// appended, never more than the burst.
func TestPutBudget(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	const mib = 1 << 20
	for _, tc := range []struct {
		name          string
		rate, perGiB  float64
		after         time.Duration // since the first take
		appended      int64
		wantTake      bool
		wantWaitAbove time.Duration // when the take fails
	}{
		{"rate refills", 10, 0, 100 * time.Millisecond, 0, true, 0},
		{"rate not yet", 10, 0, 50 * time.Millisecond, 0, false, 40 * time.Millisecond},
		{"bytes earn a token", 0.001, 512, 0, 2 * mib, true, 0},
		{"too few bytes", 0.001, 512, 0, mib, false, time.Minute},
		{"no per-GiB budget", 0.001, 0, 0, 64 * mib, false, time.Minute},
		{"rate and bytes add up", 10, 512, 50 * time.Millisecond, mib, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newPutBudget(tc.rate, tc.perGiB, t0)
			if !b.tryTake(t0) {
				t.Fatal("a new budget has no token")
			}
			now := t0.Add(tc.after)
			if tc.appended > 0 {
				b.earn(now, tc.appended)
			}
			if got := b.tryTake(now); got != tc.wantTake {
				t.Fatalf("tryTake = %v, want %v (tokens %.3f)", got, tc.wantTake, b.tokens)
			}
			if !tc.wantTake {
				if w := b.wait(now); w <= tc.wantWaitAbove {
					t.Fatalf("wait = %s, want above %s", w, tc.wantWaitAbove)
				}
			}
		})
	}
	// Bytes earn no more than the burst: a GiB appended while uploads
	// were busy is not a thousand rolls in a row later.
	b := newPutBudget(10, 512, t0)
	b.earn(t0, 1<<30)
	if b.tokens != b.burst {
		t.Fatalf("tokens %.1f after a GiB, want the burst %.1f", b.tokens, b.burst)
	}
}

// Appends earn early rolls with MaxPutsPerGiB: with the per-second budget
// spent, an idle ingester still rolls at once once enough bytes came in.
func TestPutBudgetGrowsWithBytes(t *testing.T) {
	c := &fakeCommitter{}
	const perGiB = 1 << 20 // a token per KiB appended
	in := newTestIngester(t, Options{Linger: time.Hour, MaxPutRate: 0.001, MaxPutsPerGiB: perGiB}, objectstore.NewMemory(), c)
	for i := range 3 {
		p, err := in.Append(waitCtx(t), []Batch{batch(0, uint64(i), 2048)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(waitCtx(t)); err != nil {
			t.Fatalf("append %d: %v (rolled only at the hour's linger?)", i, err)
		}
	}
	if got := len(c.committed()); got != 3 {
		t.Fatalf("%d objects committed, want 3 (one per append)", got)
	}
}

// The per-second budget fades as appends grow: a broker appending twice
// fadeBytes a second earns only its bytes' tokens, one idle or trickling
// (up to an eighth of fadeBytes) all of the per-second rate.
func TestPutBudgetFades(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	const mib = 1 << 20
	for _, tc := range []struct {
		name       string
		bytesPerMS int64 // appended every millisecond
		want       float64
	}{
		{"idle: the per-second rate", 0, 10},
		{"at twice the fade: the bytes' budget alone", 16 * mib / 1000, 16.0 * 384 / 1024},
		{"at half the fade: 4/7 of the rate and the bytes'", 4 * mib / 1000, 10*4.0/7 + 4.0*384/1024},
		{"a trickle: all of the rate and the bytes'", mib / 2 / 1000, 10 + 0.5*384/1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newPutBudget(10, 384, t0).fading(8 * mib)
			b.burst = 1e9 // count every token earned
			// Ten seconds, the last five counted: the flow has settled.
			var before float64
			for ms := range 10_000 {
				now := t0.Add(time.Duration(ms+1) * time.Millisecond)
				if tc.bytesPerMS > 0 {
					b.earn(now, tc.bytesPerMS)
				} else {
					b.refill(now)
				}
				if ms == 4_999 {
					before = b.tokens
				}
			}
			got := (b.tokens - before) / 5
			if got < tc.want*0.97 || got > tc.want*1.03 {
				t.Fatalf("earned %.2f tokens a second, want %.2f", got, tc.want)
			}
		})
	}
}
