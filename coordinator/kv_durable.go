package coordinator

import (
	"github.com/floe-io/floe/coordapi"
)

// KvDurable reports whether a ready KvGet answer depends on durable commits
// only, so that it may leave the process without waiting for the log (see
// package durable): a key found at an offset in [log start, high
// watermark), or a key not found.
func (c *Coordinator) KvDurable(req coordapi.KvGetRequest, res coordapi.KvGetResult) bool {
	pk := partKey{req.TopicID, req.Partition}
	switch {
	case !res.Ready:
		return false
	case !res.Found:
		return c.dur.AllDurable(pk)
	case res.Offset < res.LogStartOffset || res.Offset >= res.HighWatermark:
		return false // the log start or high watermark decided it
	default:
		return c.dur.Covers(pk, res.Offset+1)
	}
}
