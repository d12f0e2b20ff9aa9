package tiered

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"
)

// DefaultJobBufferBytes is ConsolidatorOptions.JobBufferBytes' default:
// 64 MiB, the buffers of four jobs at the node's 4 MiB reads (an 8 MiB
// upload part and a 4 MiB read each) with some read-ahead.
const DefaultJobBufferBytes = 64 << 20

// jobBudget bounds the buffer bytes a Consolidator's jobs hold at once
// (ConsolidatorOptions.JobBufferBytes): each job reserves what it needs to
// make progress before it starts, waiting for it, and reads ahead only
// with what is left (tryAcquire), so that no job waits while it holds
// bytes another job waits for. The one exception is a compaction job's
// batch larger than its read window, which waits holding its reservation;
// one compaction job runs at a time and consolidation jobs never wait
// holding anything, so it gets the bytes once they finish.
type jobBudget struct {
	sem   *semaphore.Weighted
	limit int64

	mu struct {
		sync.Mutex
		used, peak int64
	}
}

func newJobBudget(limit int64) *jobBudget {
	return &jobBudget{sem: semaphore.NewWeighted(limit), limit: limit}
}

// clamp returns n, or the whole budget if n is larger: a job that needs
// more than the budget runs alone, with all of it.
func (b *jobBudget) clamp(n int64) int64 { return min(n, b.limit) }

// acquire waits for n bytes (at most the budget) until ctx ends, and
// returns what it took.
func (b *jobBudget) acquire(ctx context.Context, n int64) (int64, error) {
	n = b.clamp(n)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return 0, err
	}
	b.note(n)
	return n, nil
}

// tryAcquire takes n bytes if the budget has them now.
func (b *jobBudget) tryAcquire(n int64) bool {
	if n > b.limit || !b.sem.TryAcquire(n) {
		return false
	}
	b.note(n)
	return true
}

// release gives back n bytes taken by acquire or tryAcquire.
func (b *jobBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.note(-n)
	b.sem.Release(n)
}

func (b *jobBudget) note(n int64) {
	b.mu.Lock()
	b.mu.used += n
	b.mu.peak = max(b.mu.peak, b.mu.used)
	b.mu.Unlock()
}

// usage returns the bytes held now and the most ever held at once.
func (b *jobBudget) usage() (used, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.used, b.mu.peak
}
