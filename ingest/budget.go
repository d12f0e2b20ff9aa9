package ingest

import "time"

// putBudget is a token bucket of object PUTs per second, which bytes
// appended fill too (Options.MaxPutsPerGiB). Early rolls take a token only
// when one is there; rolls forced by size or linger spend one regardless
// (the bucket goes into debt), so that under load early rolls stop and
// objects fill up.
type putBudget struct {
	rate    float64 // tokens per second
	perByte float64 // tokens per byte appended
	burst   float64
	tokens  float64
	last    time.Time
}

func newPutBudget(rate, perGiB float64, now time.Time) *putBudget {
	burst := max(1, rate/10)
	return &putBudget{rate: rate, perByte: perGiB / (1 << 30), burst: burst, tokens: burst, last: now}
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
}

func (b *putBudget) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
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
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}
