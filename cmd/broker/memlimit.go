package main

import (
	"log/slog"
	"runtime/debug"
)

// memoryHeadroom is what --memory-limit's automatic value adds to the
// broker's bounded buffers: connections, requests in flight, the embedded
// coordinator's Pebble, the runtime's own.
const memoryHeadroom = 512 << 20

// memoryLimit is the soft memory limit the broker gives the Go runtime
// (--memory-limit): the runtime collects sooner as the heap nears it, where
// by default it lets the heap grow to twice what is live. The 20-minute
// lifecycle soak held 862 MB live and 1.05 GB idle heap, 2.09 GB of RSS,
// against the 1.5 GB its operator planned for (docs/benchmarks/
// 2026-12-07-lifecycle-soak.md). --memory-limit 0 picks it from what the broker
// bounds (the chunk cache, the ingest buffer, the tier jobs' buffers and
// /kv's batch cache) plus memoryHeadroom, less what the embedded
// coordinator's Pebble holds outside the Go heap (pebbleOffHeap), so that
// the whole process stays within that sum: the soak's RSS ran 139-226 MiB
// above the limit without it. Negative: none. A GOMEMLIMIT in
// the environment wins over the automatic value (the runtime has read it),
// not over an explicit flag. It returns the limit to set, 0 for none.
func memoryLimit(f *flags, gomemlimit string) int64 {
	switch limit := f.memoryLimit; {
	case limit < 0, limit == 0 && gomemlimit != "":
		return 0
	case limit == 0:
		limit = f.cfg.Cache.MaxBytes + f.cfg.Ingest.MaxBufferedBytes + f.cfg.Tier.JobBufferBytes +
			max(f.cfg.KVBatchCacheBytes, 0) + memoryHeadroom
		if f.cfg.NATSURL == "" { // the coordinator is embedded
			limit -= pebbleOffHeap
		}
		return limit
	default:
		return limit
	}
}

// setMemoryLimit sets the runtime's soft memory limit to limit, if any.
func setMemoryLimit(limit int64, log *slog.Logger) {
	if limit > 0 {
		debug.SetMemoryLimit(limit)
		log.Info("memory limit", "bytes", limit)
	}
}
