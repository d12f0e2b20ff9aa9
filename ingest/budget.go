package ingest

import (
	"math"
	"time"
)

// putBudget is a token bucket of object PUTs per second, which bytes
// appended fill too (Options.MaxPutsPerGiB). Early rolls take a token only
// when one is there; rolls forced by size or linger spend one regardless
// (the bucket goes into debt), so that under load early rolls stop and
// objects fill up.
//
// The per-second rate is for an idle or trickling broker: it fades as the
// bytes appended grow, to nothing at fadeBytes a second, where the bytes'
// own budget takes over. Added to the per-GiB budget instead, it made a
// loaded broker's PUTs per GiB grow with the broker count: three brokers
// sharing 50 MiB/s on S3 made 1,003 PUTs per GiB at 10/s + 512 per GiB
// (scripts/bench-s3-cluster.sh, 2026-12-06), where a GiB is worth 384.
type putBudget struct {
	rate    float64 // tokens per second, while idle
	perByte float64 // tokens per byte appended
	burst   float64
	tokens  float64
	last    time.Time

	fadeBytes float64 // bytes/s at which rate has faded to nothing; 0: never
	flow      float64 // bytes appended per second, a moving average, when fading
	pending   float64 // bytes appended since the last refill, when fading
}

// putRateFade is the append rate at which the per-second PUT budget has
// faded out (putBudget.fadeBytes): 8 MiB/s, where S3's default per-GiB
// budget (384) alone gives 3 PUTs a second. Up to an eighth of it the rate
// is whole, so that a trickle sees no difference.
const putRateFade = 8 << 20

// flowWindow is the time constant of putBudget.flow.
const flowWindow = time.Second

func newPutBudget(rate, perGiB float64, now time.Time) *putBudget {
	burst := max(1, rate/10)
	return &putBudget{rate: rate, perByte: perGiB / (1 << 30), burst: burst, tokens: burst, last: now}
}

// timeRate is the tokens a second of time earns at the current flow: all
// of rate up to an eighth of fadeBytes a second (a trickling broker gets
// exactly its rate), none from fadeBytes on, linear between.
func (b *putBudget) timeRate() float64 {
	if b.fadeBytes <= 0 {
		return b.rate
	}
	lo := b.fadeBytes / 8
	return b.rate * min(1, max(0, (b.fadeBytes-b.flow)/(b.fadeBytes-lo)))
}

// fading makes the per-second rate fade out as appends reach fadeBytes a
// second.
func (b *putBudget) fading(fadeBytes float64) *putBudget {
	b.fadeBytes = fadeBytes
	return b
}

// newByteBudget is a bucket of rate bytes per second, up to burst
// (Options.InlineMaxRate): tryTakeN takes an object's bytes.
func newByteBudget(rate, burst float64, now time.Time) *putBudget {
	return &putBudget{rate: rate, burst: burst, tokens: burst, last: now}
}

// earn adds the tokens n bytes appended are worth.
func (b *putBudget) earn(now time.Time, n int64) {
	b.refill(now)
	b.tokens = min(b.burst, b.tokens+float64(n)*b.perByte)
	if b.fadeBytes > 0 {
		b.pending += float64(n) // for flow
	}
}

func (b *putBudget) refill(now time.Time) {
	if !now.After(b.last) {
		return
	}
	dt := now.Sub(b.last).Seconds()
	if b.fadeBytes > 0 {
		b.flow = b.flow*math.Exp(-dt/flowWindow.Seconds()) + b.pending/flowWindow.Seconds()
		b.pending = 0
	}
	b.tokens = min(b.burst, b.tokens+dt*b.timeRate())
	b.last = now
}

// tryTake takes a token if one is available.
func (b *putBudget) tryTake(now time.Time) bool { return b.tryTakeN(now, 1) }

// tryTakeN takes n tokens if they are there.
func (b *putBudget) tryTakeN(now time.Time, n float64) bool {
	b.refill(now)
	if b.tokens >= n {
		b.tokens -= n
		return true
	}
	return false
}

// spend takes a token, going into debt if there is none.
func (b *putBudget) spend(now time.Time) {
	b.refill(now)
	b.tokens--
}

// wait is how long until a token is available.
func (b *putBudget) wait(now time.Time) time.Duration {
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	rate := b.timeRate()
	if rate <= 0 {
		return time.Hour // no time refill: appends or the linger roll it
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second))
}
