// Package fetchread is the broker's read path: it reads a partition's record
// batches back for Fetch, ShareFetch, ListOffsets by timestamp and GET /kv,
// from WAL objects and tiered segments, through the chunk cache. It knows
// nothing of connections, authorization or requests' topics by name: the
// broker's handlers resolve and authorize those, then hand it partitions
// by topic id.
//
//	commit notices ─Notify─▶ tail cache (broker/tailcache) + parked fetches woken
//	Plan:   coordinates  tail cache │ FindBatchesMulti │ FindKeyBatches (views)
//	                     └▶ tiered segment → the batches inside it (tiered.Reader)
//	        plan         the byte budget shared in fill order, as Kafka fills
//	Read:   ranges       every planned range at once, through the cache
//	        patch        base offset, leader epoch, LogAppendTime; a view's
//	                     batches filtered to its key
//
// The coordinator answers an offset in the partition's tiered part with one
// coordinate of a whole segment object (coordapi.BatchCoord.Segment); every
// path here finds the batches inside it before it goes on as with batches of
// the WAL (segments.go).
//
// A Reader keeps no state of its own but the tail cache, the parked
// fetches, and the gates that stop asking an old coordinator for calls it
// does not serve.
package fetchread
