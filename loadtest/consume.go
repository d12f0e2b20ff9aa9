package loadtest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxPollRecords bounds one poll, and so the work between context checks.
const maxPollRecords = 10000

// consumeCounters are shared by all consumers of all reader sets.
type consumeCounters struct {
	records       atomic.Int64 // records received, warmup included
	bytes         atomic.Int64
	measured      atomic.Int64 // records received after the warmup
	measuredBytes atomic.Int64
	lastRecv      atomic.Int64 // unix nanos of the latest poll that returned records
}

// readerSet is one independent reader of the whole topic: a consumer group,
// or direct consumers splitting the partitions. It tracks how far it has
// read so that the drain phase knows when it has caught up.
type readerSet struct {
	name     string        // group name; "" for direct consumers
	share    bool          // a share group: records come out of order
	caughtUp chan struct{} // closed once every partition reached its target
	mu       struct {
		sync.Mutex
		// next is, by partition, the next offset to read; of a share
		// group, the start offset plus the records received.
		next   map[int32]int64
		target map[int32]int64 // set when producers are done; nil before
		done   bool
	}
}

func newReaderSet(name string, base map[int32]int64) *readerSet {
	s := &readerSet{name: name, caughtUp: make(chan struct{})}
	s.mu.next = make(map[int32]int64, len(base))
	for p, o := range base {
		s.mu.next[p] = o
	}
	return s
}

// advance notes that partition p has been read up to next.
func (s *readerSet) advance(p int32, next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if next > s.mu.next[p] {
		s.mu.next[p] = next
	}
	s.checkLocked()
}

// received notes that a share group's consumer received n records of
// partition p: they come out of order, and each counts once (a redelivery
// would count twice, which a run without failures does not have).
func (s *readerSet) received(p int32, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.next[p] += n
	s.checkLocked()
}

// setTarget gives the offsets to reach (the high watermarks once producers
// are done).
func (s *readerSet) setTarget(target map[int32]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.target = target
	s.checkLocked()
}

// checkLocked closes caughtUp when every target is reached. s.mu must be
// held.
func (s *readerSet) checkLocked() {
	if s.mu.done || s.mu.target == nil {
		return
	}
	for p, t := range s.mu.target {
		if s.mu.next[p] < t {
			return
		}
	}
	s.mu.done = true
	close(s.caughtUp)
}

// consumer is one client reading for a reader set.
type consumer struct {
	cl        *kgo.Client
	set       *readerSet
	hist      *Histogram
	c         *consumeCounters
	errs      *ErrorCounts
	warmupEnd time.Time
}

// consumerOpts are the kgo options of consumer i of reader set name.
// parts are the partitions of a direct consumer (start: their start
// offsets); a group consumer starts at start[p] for partitions without a
// committed offset when reading from the end, else at the log start.
func consumerOpts(cfg *Config, name string, parts map[int32]kgo.Offset, start map[int32]int64) []kgo.Opt {
	// Retryable fetch errors (KAFKA_STORAGE_ERROR, NOT_LEADER...) are
	// retried by the client either way; keeping them counts them as errors
	// instead of hiding a broker that never answers with data.
	opts := append(seedOpts(cfg), kgo.KeepRetryableFetchErrors())
	if name == "" {
		return append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: parts}))
	}
	if cfg.ShareGroup != "" {
		// Where the share-partitions start is the group's (prepareShareGroup).
		opts = append(opts, kgo.ShareGroup(name), kgo.ConsumeTopics(cfg.Topic))
		if cfg.ShareMaxRecords > 0 {
			opts = append(opts, kgo.ShareMaxRecords(int32(cfg.ShareMaxRecords)))
		}
		return opts
	}
	opts = append(opts, kgo.ConsumerGroup(name), kgo.ConsumeTopics(cfg.Topic))
	if cfg.FromStart {
		return append(opts, kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()))
	}
	// ConsumeStartOffset(AtEnd) alone would skip what is produced while the
	// group joins; pin partitions without a commit to the pre-run ends.
	return append(opts,
		kgo.ConsumeStartOffset(kgo.NewOffset().AtEnd()),
		kgo.AdjustFetchOffsetsFn(func(_ context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
			for p, o := range offs[cfg.Topic] {
				if end, ok := start[p]; ok && o.EpochOffset().Offset < 0 {
					offs[cfg.Topic][p] = kgo.NewOffset().At(end).WithEpoch(-1)
				}
			}
			return offs, nil
		}),
	)
}

// run polls until ctx is done. A share consumer's poll accepts the
// records of the poll before (franz-go's implicit acknowledgement).
func (c *consumer) run(ctx context.Context) {
	warmupEnd := c.warmupEnd.UnixNano()
	for {
		fetches := c.cl.PollRecords(ctx, maxPollRecords)
		if fetches.IsClientClosed() {
			return
		}
		fetches.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil || !(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				c.errs.Add("consume", err)
			}
		})
		now := time.Now()
		nowNs := now.UnixNano()
		var n, bytes int64
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if len(fp.Records) == 0 {
				return
			}
			for _, r := range fp.Records {
				n++
				bytes += int64(len(r.Key) + len(r.Value))
				if ts, ok := sendTime(r); ok && ts >= warmupEnd {
					c.hist.Record(time.Duration(nowNs - ts))
				}
			}
			if c.set.share {
				c.set.received(fp.Partition, int64(len(fp.Records)))
			} else {
				c.set.advance(fp.Partition, fp.Records[len(fp.Records)-1].Offset+1)
			}
		})
		if n > 0 {
			c.c.records.Add(n)
			c.c.bytes.Add(bytes)
			storeMax(&c.c.lastRecv, nowNs)
			if !now.Before(c.warmupEnd) {
				c.c.measured.Add(n)
				c.c.measuredBytes.Add(bytes)
			}
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// sendTime reads the HeaderSendTime header.
func sendTime(r *kgo.Record) (int64, bool) {
	for _, h := range r.Headers {
		if h.Key == HeaderSendTime {
			ts, err := strconv.ParseInt(string(h.Value), 10, 64)
			return ts, err == nil
		}
	}
	return 0, false
}

// splitPartitions deals partitions round robin to n direct consumers.
func splitPartitions(parts []int32, n int) [][]int32 {
	out := make([][]int32, n)
	for i, p := range parts {
		out[i%n] = append(out[i%n], p)
	}
	return out
}
