package coordinator

import (
	"context"

	"github.com/floe-io/floe/coordapi"
)

// KvGetSettled is KvGet, also saying whether its answer depends on durable
// commits only, so that it may leave the process without waiting for the
// log (see package durable), as FindBatchesSettled does for fetches.
func (c *Coordinator) KvGetSettled(ctx context.Context, req coordapi.KvGetRequest) (_ coordapi.KvGetResult, settled bool, _ error) {
	res, err := c.KvGet(ctx, req)
	if err != nil {
		return res, false, err
	}
	return res, c.kvSettled(req, res), nil
}

// kvSettled reports whether a KvGet answer is settled: a ready index's, for
// a key found at an offset in [log start, high watermark) whose commit is
// durable, or for a key not found when every commit to the partition is.
func (c *Coordinator) kvSettled(req coordapi.KvGetRequest, res coordapi.KvGetResult) bool {
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
