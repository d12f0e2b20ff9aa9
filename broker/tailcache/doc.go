// Package tailcache keeps the coordinates of the most recent batches of
// each partition, as the coordinator's commit notices report them, so that
// a consumer at the head of the log is answered without a coordinator
// round trip:
//
//	commit notice ──Notify──▶ Cache (per partition: ≤512 coordinates, ending at the high watermark)
//	fetch ──Find──▶ hit: the coordinates, as FindBatches answers them
//	           └──▶ miss: the caller asks the coordinator, then Verify
//
// What the cache answers is only what a notice or the coordinator
// confirmed within the last second: notices travel at most once, the log
// start moves without one (retention, DeleteRecords through another
// broker), and consolidation moves old batches out of the WAL objects the
// coordinates name. A read that finds an object gone calls Forget.
package tailcache
