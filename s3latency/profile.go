package s3latency

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// Dist is a log-normal latency distribution given by its median and 99th
// percentile. The zero Dist is no latency.
type Dist struct {
	P50, P99 time.Duration
}

// Sample draws one latency with r.
func (d Dist) Sample(r *rand.Rand) time.Duration {
	if d.P50 <= 0 {
		return 0
	}
	if d.P99 <= d.P50 {
		return d.P50
	}
	sigma := math.Log(float64(d.P99)/float64(d.P50)) / z99
	return time.Duration(float64(d.P50) * math.Exp(sigma*r.NormFloat64()))
}

// lerp interpolates between a and b, both quantiles, at t in [0, 1].
func lerp(a, b Dist, t float64) Dist {
	t = min(max(t, 0), 1)
	return Dist{
		P50: a.P50 + time.Duration(t*float64(b.P50-a.P50)),
		P99: a.P99 + time.Duration(t*float64(b.P99-a.P99)),
	}
}

// Profile describes an object store's latency: what each operation costs,
// how fast a connection streams, and how its tail and throttling behave.
// The zero Profile adds nothing.
type Profile struct {
	// Name selects the profile (Lookup).
	Name string
	// Source says where the figures come from.
	Source string
	// FirstByte is the time to the first byte of a GET, and the whole
	// latency of HEAD, DELETE and LIST.
	FirstByte Dist
	// PutSmall is the latency of a PUT (or an upload part, or a multipart
	// call) of up to SmallBytes; PutLarge of LargeBytes. Between the two
	// the quantiles are interpolated; past LargeBytes the extra bytes take
	// the transfer time at the connection's throughput.
	PutSmall, PutLarge Dist
	// ThroughputMin and ThroughputMax bound a connection's throughput in
	// bytes per second, drawn uniformly per request: a GET's body streams
	// no faster. Zero: unbounded.
	ThroughputMin, ThroughputMax float64
	// TailFraction of requests take a further TailMin to TailMax
	// (uniform): S3's rare multi-second stragglers.
	TailFraction     float64
	TailMin, TailMax time.Duration
	// SlowDownPutRate is the PUT rate per prefix (the key up to its last
	// '/') beyond which PUTs are answered 503 SlowDown, as S3 throttles
	// (a token bucket of a second's burst). Zero: no limit.
	SlowDownPutRate float64
	// SlowDownFraction of PUTs are answered 503 SlowDown at random, as S3
	// does while it scales a prefix.
	SlowDownFraction float64
}

// Sizes at which PutSmall and PutLarge apply.
const (
	SmallBytes = 1 << 20
	LargeBytes = 8 << 20
)

// Put returns the latency distribution of a PUT of size bytes, without the
// transfer time of bytes past LargeBytes, which the proxy adds at the
// connection's throughput.
func (p *Profile) Put(size int64) Dist {
	if size <= SmallBytes {
		return p.PutSmall
	}
	return lerp(p.PutSmall, p.PutLarge, float64(size-SmallBytes)/float64(LargeBytes-SmallBytes))
}

// zero reports whether p adds nothing.
func (p *Profile) zero() bool {
	return p.FirstByte == (Dist{}) && p.PutSmall == (Dist{}) && p.PutLarge == (Dist{}) &&
		p.ThroughputMax == 0 && p.TailFraction == 0 && p.SlowDownPutRate == 0 && p.SlowDownFraction == 0
}

const mib = 1 << 20

// The named profiles; their sources are drawn in the package doc.
var (
	// None forwards every request with no delay.
	None = Profile{Name: "none", Source: "no added latency"}

	// S3Standard is S3 Standard in one region, seen from that region.
	S3Standard = Profile{
		Name: "s3-standard",
		Source: "GET first byte 15/60 ms p50/p99 and PUT 30-60/200-400 ms for 1-8 MiB " +
			"(Aiven's KIP-1150 measurements); 80-100 MiB/s per connection (AWS S3 performance guidelines)",
		FirstByte:     Dist{P50: 15 * time.Millisecond, P99: 60 * time.Millisecond},
		PutSmall:      Dist{P50: 30 * time.Millisecond, P99: 200 * time.Millisecond},
		PutLarge:      Dist{P50: 60 * time.Millisecond, P99: 400 * time.Millisecond},
		ThroughputMin: 80 * mib,
		ThroughputMax: 100 * mib,
	}

	// S3Express is S3 Express One Zone, a directory bucket in the client's
	// own zone.
	S3Express = Profile{
		Name:          "s3-express",
		Source:        "single-digit ms p50, about 10 ms p99 (AWS S3 Express One Zone)",
		FirstByte:     Dist{P50: 3 * time.Millisecond, P99: 8 * time.Millisecond},
		PutSmall:      Dist{P50: 5 * time.Millisecond, P99: 10 * time.Millisecond},
		PutLarge:      Dist{P50: 8 * time.Millisecond, P99: 14 * time.Millisecond},
		ThroughputMin: 100 * mib,
		ThroughputMax: 150 * mib,
	}

	// SlowTail is S3Standard with multi-second stragglers and throttling.
	SlowTail = func() Profile {
		p := S3Standard
		p.Name = "slow-tail"
		p.Source = "s3-standard, plus 1% of requests 1-3 s slower, and 503 SlowDown past 3,500 PUT/s " +
			"per prefix (AWS S3 performance guidelines) and for 0.1% of PUTs"
		p.TailFraction = 0.01
		p.TailMin, p.TailMax = time.Second, 3*time.Second
		p.SlowDownPutRate = 3500
		p.SlowDownFraction = 0.001
		return p
	}()
)

// Profiles lists the named profiles.
func Profiles() []Profile { return []Profile{None, S3Standard, S3Express, SlowTail} }

// Names returns the names of the profiles, for flags' help.
func Names() []string {
	var names []string
	for _, p := range Profiles() {
		names = append(names, p.Name)
	}
	return names
}

// Lookup returns the profile called name ("" is none).
func Lookup(name string) (Profile, error) {
	if name == "" {
		return None, nil
	}
	i := slices.IndexFunc(Profiles(), func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return Profile{}, fmt.Errorf("s3latency: unknown profile %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return Profiles()[i], nil
}
