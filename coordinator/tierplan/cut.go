package tierplan

import "github.com/floe-io/floe/coordinator/layout"

// Cut decides which of a partition's WAL runs, read in order from its WAL
// start, one consolidation job takes: those past the WAL retention (by
// their object's commit time, or all of them while the partition's WAL
// bytes are over local.retention.bytes), up to segment.bytes (at least
// one run), a segment.ms span of commit times and MaxJobBatches, never
// past layout.MaxSegmentData.
type Cut struct {
	s     Settings
	nowMs int64
	// overBytes says the WAL is over local.retention.bytes: the oldest
	// runs then go a whole segment at a time, not just enough to get
	// under it, else every round would cut a sliver.
	overBytes bool
	// firstCreated is the first run's commit time; bytes and batches
	// what the runs taken hold.
	firstCreated, bytes int64
	batches             int
	// full says the job was cut by segment.bytes, segment.ms or the
	// batch bound.
	full bool
}

// NewCut starts the cut of a partition with settings s and walBytes in
// its WAL tier, at nowMs.
func NewCut(s Settings, walBytes, nowMs int64) Cut {
	return Cut{s: s, nowMs: nowMs, overBytes: s.LocalBytes >= 0 && walBytes > s.LocalBytes}
}

// Take says whether the job takes the next run, of batches batches and
// n bytes in an object committed at createdMs; false ends the job.
func (c *Cut) Take(createdMs, n int64, batches int) bool {
	if !c.overBytes && (c.s.LocalMs < 0 || c.nowMs-createdMs < c.s.LocalMs) {
		return false // not past the WAL retention
	}
	if c.batches > 0 {
		if c.bytes+n > c.s.SegmentBytes || createdMs-c.firstCreated >= c.s.SegmentMs || c.batches+batches > MaxJobBatches {
			c.full = true
			return false
		}
	} else {
		c.firstCreated = createdMs
	}
	if c.bytes+n > layout.MaxSegmentData {
		return false
	}
	c.bytes += n
	c.batches += batches
	return true
}

// Ready says whether the runs taken make a job now. Less than a segment
// past the WAL retention waits for more, so that a steady partition's
// segments reach segment.bytes rather than holding one planning round's
// worth each, but not past a second local.retention.ms, so that no batch
// stays in the WAL tier much longer than twice its retention (a quiet
// partition's segment holds what it wrote meanwhile).
func (c *Cut) Ready() bool {
	if c.batches == 0 {
		return false
	}
	return c.full || c.overBytes || c.bytes >= c.s.SegmentBytes || c.nowMs-c.firstCreated >= 2*c.s.LocalMs
}
