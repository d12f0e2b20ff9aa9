package ingest

import "time"

// Source names who appends (AppendFrom): the broker gives each client
// connection its own. The ingester counts each source's requests in
// flight, so that an early roll can tell a producer that waits for its
// answers (waiting longer for it gains nothing) from one still sending
// (Options.EarlyRollWait). Source 0 is a source like any other.
type Source uint64

// sourceWindow is how long a source counts as active after its last
// append, and how long its peak of requests in flight is remembered: the
// peak is the larger of this window's and the last one's.
const sourceWindow = time.Second

// source is one Source's requests in flight.
type source struct {
	inFlight int // appended, not yet answered
	// peak and prevPeak are the most requests it had in flight at once in
	// the current window and the one before.
	peak, prevPeak int
	lastAt         time.Time // its last append
}

// sources tracks the sources of a broker's appends; in.mu guards it.
type sources struct {
	m           map[Source]*source
	windowStart time.Time
}

// appended counts a request of src appended at now.
func (s *sources) appended(src Source, now time.Time) {
	s.rotate(now)
	if s.m == nil {
		s.m = make(map[Source]*source)
	}
	st := s.m[src]
	if st == nil {
		st = &source{}
		s.m[src] = st
	}
	st.inFlight++
	st.peak = max(st.peak, st.inFlight)
	st.lastAt = now
}

// answered counts a request of src answered.
func (s *sources) answered(src Source) {
	if st := s.m[src]; st != nil && st.inFlight > 0 {
		st.inFlight--
	}
}

// rotate starts a new window once the current one is sourceWindow old,
// forgetting sources with nothing in flight that appended nothing in the
// last two windows.
func (s *sources) rotate(now time.Time) {
	if now.Sub(s.windowStart) < sourceWindow {
		return
	}
	s.windowStart = now
	for src, st := range s.m {
		if st.inFlight == 0 && now.Sub(st.lastAt) >= 2*sourceWindow {
			delete(s.m, src)
			continue
		}
		st.prevPeak, st.peak = st.peak, st.inFlight
	}
}

// allWaiting reports whether every source that appended within recent
// has as many requests in flight as its recent peak: all of them wait for
// answers, and none will send more before one comes. Sources quiet for
// longer are trickles, not streams to wait for: a producer sending ten
// requests a second must not make another's wait.
func (s *sources) allWaiting(now time.Time, recent time.Duration) bool {
	s.rotate(now)
	for _, st := range s.m {
		if now.Sub(st.lastAt) >= recent {
			continue
		}
		if st.inFlight < max(st.peak, st.prevPeak) {
			return false
		}
	}
	return true
}
