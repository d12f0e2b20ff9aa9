package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/time/rate"
)

// HeaderSendTime is the record header in which producers put the send time
// (unix nanoseconds, decimal ASCII); consumers subtract it from the receive
// time for end-to-end latency.
const HeaderSendTime = "lt-ts"

// parseAcks maps --acks to kgo.
func parseAcks(s string) (kgo.Acks, error) {
	switch s {
	case "all", "-1":
		return kgo.AllISRAcks(), nil
	case "1":
		return kgo.LeaderAck(), nil
	case "0":
		return kgo.NoAck(), nil
	}
	return kgo.Acks{}, fmt.Errorf("%q, must be all, 1 or 0", s)
}

// parseCompression maps --compression to kgo.
func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch s {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("%q, must be none, gzip, snappy, lz4 or zstd", s)
}

// producerOpts are the kgo options of one producer client.
func producerOpts(cfg *Config) []kgo.Opt {
	acks, _ := parseAcks(cfg.Acks)                // validated
	codec, _ := parseCompression(cfg.Compression) // validated
	opts := append(seedOpts(cfg),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(cfg.Linger),
		kgo.MaxBufferedRecords(cfg.MaxBuffered),
	)
	if !cfg.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(cfg.MaxInflight))
	}
	return opts
}

// produceCounters are shared by all producers.
type produceCounters struct {
	started       atomic.Int64 // records handed to Produce (or about to be)
	acked         atomic.Int64 // records acknowledged, warmup included
	ackedBytes    atomic.Int64
	measured      atomic.Int64 // acknowledged records sent after the warmup
	measuredBytes atomic.Int64
	lastAck       atomic.Int64 // unix nanos of the latest acknowledgement
	aborted       atomic.Int64 // records failed by our own shutdown
}

// producer is one client and the loop feeding it.
type producer struct {
	cl        *kgo.Client
	cfg       *Config
	lim       *rate.Limiter // nil: flat out
	payload   *payload
	hist      *Histogram
	c         *produceCounters
	errs      *ErrorCounts
	warmupEnd time.Time
}

// run produces until stop is done or the record budget is spent. Produce
// gets sendCtx, which is canceled only when the drain times out, so records
// already buffered at stop are still delivered.
func (p *producer) run(stop, sendCtx context.Context) {
	for stop.Err() == nil {
		if p.lim != nil && p.lim.Wait(stop) != nil {
			return
		}
		if n := p.c.started.Add(1); p.cfg.Records > 0 && n > p.cfg.Records {
			return
		}
		now := time.Now()
		r := &kgo.Record{
			Value:     p.payload.value(),
			Timestamp: now,
			Headers:   []kgo.RecordHeader{{Key: HeaderSendTime, Value: strconv.AppendInt(nil, now.UnixNano(), 10)}},
		}
		if p.cfg.KeySpace > 0 {
			r.Key = fmt.Appendf(nil, "k-%06d", rand.IntN(p.cfg.KeySpace))
		}
		p.cl.Produce(sendCtx, r, func(r *kgo.Record, err error) { p.promise(now, r, err) })
	}
}

// promise records the outcome of the record sent at start. (The client
// truncates r.Timestamp to milliseconds, so start travels separately.)
func (p *producer) promise(start time.Time, r *kgo.Record, err error) {
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			p.c.aborted.Add(1)
			return
		}
		p.errs.Add("produce", err)
		return
	}
	now := time.Now()
	size := int64(len(r.Key) + len(r.Value))
	p.c.acked.Add(1)
	p.c.ackedBytes.Add(size)
	storeMax(&p.c.lastAck, now.UnixNano())
	if !start.Before(p.warmupEnd) {
		p.c.measured.Add(1)
		p.c.measuredBytes.Add(size)
		p.hist.Record(now.Sub(start))
	}
}

// storeMax raises a to v if v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// newLimiter returns a token bucket for perSec events/s shared by all
// workers, or nil for flat out. The bucket holds 50ms of tokens (at least
// one), so a worker that wakes late or a stalled process catches up on that
// much and the average rate holds; it starts empty so the run does not open
// with a burst.
func newLimiter(perSec float64) *rate.Limiter {
	if perSec <= 0 {
		return nil
	}
	burst := max(1, int(math.Ceil(perSec/20)))
	lim := rate.NewLimiter(rate.Limit(perSec), burst)
	lim.AllowN(time.Now(), burst)
	return lim
}

// payload hands out record values: windows of RecordSize bytes at random
// offsets into a 1 MiB pool, so values differ without a per-record
// allocation or random fill. Values are shared and must not be modified.
type payload struct {
	pool []byte
	size int
}

const payloadPool = 1 << 20

// newPayload builds the pool: random bytes, or words for a compressible
// value.
func newPayload(kind string, size int) *payload {
	pool := make([]byte, payloadPool+size)
	switch kind {
	case "text":
		words := strings.Fields("the quick brown fox jumps over lazy dog floe broker object store " +
			"partition offset record batch consumer producer latency throughput cache chunk")
		i := 0
		for i < len(pool) {
			i += copy(pool[i:], words[rand.IntN(len(words))])
			if i < len(pool) {
				pool[i] = ' '
				i++
			}
		}
	default:
		for i := 0; i < len(pool); i += 8 {
			v := rand.Uint64()
			for j := 0; j < 8 && i+j < len(pool); j++ {
				pool[i+j] = byte(v >> (8 * j))
			}
		}
	}
	return &payload{pool: pool, size: size}
}

// value returns a RecordSize-byte value.
func (p *payload) value() []byte {
	off := rand.IntN(payloadPool)
	return p.pool[off : off+p.size : off+p.size]
}
