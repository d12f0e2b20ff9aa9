package fetchread

import (
	"sync"
	"sync/atomic"

	"github.com/floe-io/floe/coordapi"
)

// TopicPartition names one partition by topic id.
type TopicPartition struct {
	Topic     coordapi.TopicID
	Partition int32
}

// waiters wakes long-polling fetches when a partition they wait on gets new
// records. A fetch registers one channel (capacity 1) under each of its
// partitions; a commit notice sends on it without blocking.
type waiters struct {
	// parked counts the fetches registered now (floe.kafka.fetch.parked).
	parked atomic.Int64
	mu     struct {
		sync.Mutex
		byPartition map[TopicPartition]map[chan struct{}]struct{}
	}
}

func newWaiters() *waiters {
	w := &waiters{}
	w.mu.byPartition = make(map[TopicPartition]map[chan struct{}]struct{})
	return w
}

// Register makes ch receive a wake-up when any of tps gets new records
// (ch has capacity 1; a wake-up is never blocked on, so one pending is
// enough). The returned func unregisters it.
func (rd *Reader) Register(tps []TopicPartition, ch chan struct{}) func() {
	return rd.waiters.register(tps, ch)
}

// Parked returns how many fetches are registered now, waiting at the log
// end (the gauge floe.kafka.fetch.parked).
func (rd *Reader) Parked() int64 { return rd.waiters.parked.Load() }

// register makes ch receive a wake-up when any of tps advances. The
// returned func unregisters it.
func (w *waiters) register(tps []TopicPartition, ch chan struct{}) func() {
	w.parked.Add(1)
	w.mu.Lock()
	for _, tp := range tps {
		set := w.mu.byPartition[tp]
		if set == nil {
			set = make(map[chan struct{}]struct{})
			w.mu.byPartition[tp] = set
		}
		set[ch] = struct{}{}
	}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		for _, tp := range tps {
			if set := w.mu.byPartition[tp]; set != nil {
				delete(set, ch)
				if len(set) == 0 {
					delete(w.mu.byPartition, tp)
				}
			}
		}
		w.mu.Unlock()
		w.parked.Add(-1)
	}
}

// notify wakes the fetches waiting on the partitions in ns.
func (w *waiters) notify(ns []coordapi.CommitNotice) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range ns {
		for ch := range w.mu.byPartition[TopicPartition{n.TopicID, n.Partition}] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
