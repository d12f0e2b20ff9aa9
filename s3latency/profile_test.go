package s3latency

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestDistQuantiles draws from every named profile's distributions and
// checks that the sample's p50 and p99 are the ones the profile states.
func TestDistQuantiles(t *testing.T) {
	for _, p := range Profiles() {
		for name, d := range map[string]Dist{"first-byte": p.FirstByte, "put-small": p.PutSmall, "put-large": p.PutLarge, "put-4MiB": p.Put(4 << 20)} {
			if d == (Dist{}) {
				continue
			}
			t.Run(p.Name+"/"+name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(1, 2))
				const n = 200_000
				s := make([]time.Duration, n)
				for i := range s {
					s[i] = d.Sample(r)
				}
				slices.Sort(s)
				check := func(q string, got, want time.Duration, tol float64) {
					if diff := float64(got-want) / float64(want); diff > tol || diff < -tol {
						t.Errorf("%s = %v, want %v ±%.0f%%", q, got, want, tol*100)
					}
				}
				check("p50", s[n/2], d.P50, 0.03)
				check("p99", s[n*99/100], d.P99, 0.06)
			})
		}
	}
}

func TestPutInterpolation(t *testing.T) {
	p := S3Standard
	for _, tc := range []struct {
		size     int64
		p50, p99 time.Duration
	}{
		{0, 30 * time.Millisecond, 200 * time.Millisecond},
		{1 << 20, 30 * time.Millisecond, 200 * time.Millisecond},
		{4.5 * (1 << 20), 45 * time.Millisecond, 300 * time.Millisecond},
		{8 << 20, 60 * time.Millisecond, 400 * time.Millisecond},
		{64 << 20, 60 * time.Millisecond, 400 * time.Millisecond}, // the rest is transfer time
	} {
		if got := p.Put(tc.size); got.P50 != tc.p50 || got.P99 != tc.p99 {
			t.Errorf("Put(%d) = %v/%v, want %v/%v", tc.size, got.P50, got.P99, tc.p50, tc.p99)
		}
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"", "none", "s3-standard", "s3-express", "slow-tail"} {
		p, err := Lookup(name)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", name, err)
		}
		if name != "" && p.Name != name {
			t.Errorf("Lookup(%q).Name = %q", name, p.Name)
		}
		if p.Source == "" {
			t.Errorf("profile %q has no source", p.Name)
		}
	}
	if _, err := Lookup("s3-glacier"); err == nil {
		t.Error("Lookup of an unknown profile succeeded")
	}
	if !None.zero() || S3Standard.zero() {
		t.Error("zero() is wrong for none or s3-standard")
	}
}
