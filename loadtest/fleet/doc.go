// Package fleet plays a fleet of brokers against a running batch
// coordinator, with no data: it measures where one coordinator leader
// saturates (issue 39). cmd/fleetsim is its command line.
//
// Every simulated broker commits objects as ingest does, one commit in
// flight and in object order, each object a roll of B batches on B distinct
// partitions with a real WAL key but nothing uploaded; tail consumers ask
// where the new batches are (FindBatches, FindBatchesMulti), and KIP-848
// groups heartbeat and commit offsets at Kafka clients' intervals. Objects
// arrive open-loop (evenly spaced or Poisson) at the broker's share of the
// target rate, so a coordinator that falls behind shows as a growing
// backlog and a commit latency that counts the wait, as a producer would
// see it:
//
//	arrivals (t_k) ──► broker k's queue ──► CommitObject ──► latency = ack - t_k
//	                   (implicit: the next     (one in flight,
//	                    object waits for the     B batches, P partitions)
//	                    commit before it)
//	consumers: every FetchInterval, FindBatchesMulti (or FindBatches per
//	           partition) from the last offset seen on
//	groups:    ConsumerGroupHeartbeat at the interval the coordinator
//	           answers, OffsetCommit of the assigned partitions every
//	           OffsetCommitInterval
//
// The report (Report, JSON) holds commits/s and batch coordinates/s
// sustained over the window after the warmup, the latencies, and, when the
// caller can observe the coordinator (Config.Probe), its CPU seconds and
// RSS, its log's bytes per commit (the JetStream stream) and its state's
// size per partition and per batch coordinate (its /metrics).
//
// The coordinator needs no object store for this: it reads objects only to
// build key indexes (the simulator's topics have none) and deletes them only
// with a GC store, which a coordinator started without --s3-bucket has not.
// Run it with --consolidation-enabled=false: no simulated broker claims
// consolidation jobs.
package fleet
