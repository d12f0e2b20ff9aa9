package kvindex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// HandlerOptions configures NewHandler.
type HandlerOptions struct {
	// RemoteReadDisabled makes a lookup of a record that lives only in tiered storage
	// (a segment object) answer 404 with CodeRecordOnlyTiered instead of reading it
	// (--kv-remote-read-enabled=false). Default: false, such records are read: in
	// floe both tiers are objects in the same store, read through the same chunk
	// cache, so a segment read costs what a WAL read does. The key-index RFC gates
	// them off by default because its cold tier is a slower remote store than its
	// local segments; floe keeps the gate for operators who want /kv to read only
	// the WAL tier.
	RemoteReadDisabled bool
	// Observer, when set, is called after every request with the status answered and
	// the time taken, for metrics. It runs on the request's goroutine and must be quick.
	// Default: nil.
	Observer func(status int, d time.Duration)
	// Logger receives internal errors (the 500s); lookups themselves are not logged.
	// Default: slog.Default().
	Logger *slog.Logger
	// BatchCache keeps compressed batches decoded for the lookups that follow; pass
	// one to share it or to read its Stats. Default: a cache of its own of
	// DefaultBatchCacheBytes (64 MiB).
	BatchCache *BatchCache
	// Gate, when set, admits or refuses every lookup first (security and
	// quotas, gate.go). Default: nil, every lookup admitted.
	Gate Gate
}

// handler serves GET /kv/{topic}/{key}.
type handler struct {
	svc   Service
	opts  HandlerOptions
	log   *slog.Logger
	cache *BatchCache
}

// NewHandler returns the handler of GET /kv/{topic}/{key}[?partition=N]
// [&key_encoding=base64url], which reads keys through svc. It parses the full request
// path, so mount it on the "/kv/" prefix without stripping it:
//
//	mux.Handle("/kv/", kvindex.NewHandler(svc, opts))
//
// Statuses and error bodies are described in the package documentation. A lookup calls
// svc.Topic and svc.Lookup (and svc.ResolveSegment for a record in a tiered segment,
// once past the remote-read gate), then reads the record with svc.ReadBatch: the
// whole batch the first time, then nothing more (compressed batches, kept decoded in
// the batch cache) or just the record's bytes (uncompressed ones, whose record
// positions the cache keeps). The hit path starts no goroutine and allocates little beyond what svc
// does.
func NewHandler(svc Service, opts HandlerOptions) http.Handler {
	h := &handler{svc: svc, opts: opts, log: opts.Logger, cache: opts.BatchCache}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.cache == nil {
		h.cache = NewBatchCache(DefaultBatchCacheBytes)
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.Observer == nil {
		h.serve(w, r)
		return
	}
	start := time.Now()
	status := h.serve(w, r)
	h.opts.Observer(status, time.Since(start))
}

// serve answers r and returns the status it answered.
func (h *handler) serve(w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodGet {
		return h.fail(w, errMethod)
	}
	req, e := parseRequest(r.URL.Path, r.URL.RawPath, r.URL.RawQuery)
	if e != nil {
		return h.fail(w, e)
	}
	if h.opts.Gate != nil {
		if d := h.opts.Gate(r, req.topic); d != nil {
			return deny(w, d)
		}
	}
	ctx := r.Context()

	t, err := h.svc.Topic(ctx, req.topic)
	switch {
	case errors.Is(err, ErrUnknownTopic):
		return h.fail(w, topicError(CodeTopicNotFound, req.topic))
	case err != nil:
		return h.internal(w, r, "topic", err)
	case !t.Indexed:
		return h.fail(w, topicError(CodeTopicNotIndexed, req.topic))
	case t.Partitions <= 0:
		return h.fail(w, errNoPartition)
	}
	p := req.partition
	switch {
	case p < 0:
		p = Partition(req.key, t.Partitions)
	case p >= t.Partitions:
		return h.fail(w, errPartitionRange)
	}

	l, err := h.svc.Lookup(ctx, t.ID, p, req.key)
	switch {
	case err != nil:
		return h.serviceError(w, r, "lookup", err)
	case !l.Indexed:
		return h.fail(w, topicError(CodeTopicNotIndexed, req.topic))
	case !l.Ready:
		return h.fail(w, errNotReady)
	case !l.Found:
		return h.fail(w, errKeyNotFound)
	case l.Offset >= l.HighWatermark:
		return h.fail(w, errPastHWM)
	case l.Offset < l.LogStartOffset:
		return h.fail(w, errGone)
	case l.Batch.Object == "":
		return h.internal(w, r, "lookup", fmt.Errorf("no batch for offset %d in [%d, %d)", l.Offset, l.LogStartOffset, l.HighWatermark))
	case l.Batch.Remote && h.opts.RemoteReadDisabled: // a Segment ref is Remote too
		return h.fail(w, errRemote)
	}
	offset := l.Offset
	if l.Batch.Segment {
		ref, err := h.svc.ResolveSegment(ctx, l.Batch, offset)
		switch {
		case err != nil:
			return h.serviceError(w, r, "resolve segment", err)
		case ref.Segment || ref.Object == "":
			return h.internal(w, r, "resolve segment", fmt.Errorf("segment %s: no batch ref for offset %d", l.Batch.Object, offset))
		case ref.BaseOffset > offset:
			// The segment has no batch holding the offset: compacted away.
			return h.fail(w, errStale)
		}
		l.Batch = ref
	}
	value, ts, out, err := h.readRecord(ctx, &l.Batch, offset, req.key)
	switch {
	case err != nil:
		return h.serviceError(w, r, "read record", err)
	case out == tombstone:
		return h.fail(w, errTombstone)
	case out == stale:
		return h.fail(w, errStale)
	}
	writeValue(w, p, offset, ts, value)
	return http.StatusOK
}

// readRecord reads the record at offset from the batch ref locates and checks its key.
// Every batch read is indexed once into the batch cache, one read and decode shared by
// the lookups that miss on it meanwhile: a compressed one decoded (later lookups read
// from memory), an uncompressed one by where its records start (later lookups read just
// their record's bytes from svc). Without a cache, or for a batch too large to keep,
// the record is read in place, decoding no further than it.
func (h *handler) readRecord(ctx context.Context, ref *BatchRef, offset int64, key []byte) ([]byte, int64, outcome, error) {
	if h.cache.maxBytes == 0 || int64(ref.ByteLength) > h.cache.maxEntry {
		data, err := h.svc.ReadBatch(ctx, *ref, 0, ref.ByteLength)
		if err != nil {
			return nil, 0, stale, err
		}
		return readRecord(data, ref, offset, key)
	}
	k := batchKey{ref.Object, ref.ByteOffset}
	var data []byte // the whole batch, when this lookup read it
	b := h.cache.get(k)
	if b == nil {
		var err error
		b, err = h.cache.load(ctx, k, func() (*decodedBatch, error) {
			d, err := h.svc.ReadBatch(ctx, *ref, 0, ref.ByteLength)
			if err != nil {
				return nil, err
			}
			data = d
			return decodeBatch(d, *ref)
		})
		if err != nil {
			return nil, 0, stale, err
		}
	}
	if !b.raw {
		return b.record(offset, key)
	}
	from, n, ok, err := b.locate(offset)
	if !ok || err != nil {
		return nil, 0, stale, err
	}
	if data == nil {
		if data, err = h.svc.ReadBatch(ctx, *ref, from, n); err != nil {
			return nil, 0, stale, err
		}
		from = 0
	}
	return b.readOne(data[from:from+n], offset, key)
}

// writeValue answers 200 with value. The headers' values share one allocation for
// their slices and one for their text.
func writeValue(w http.ResponseWriter, partition int32, offset, ts int64, value []byte) {
	var buf [80]byte
	nums := strconv.AppendInt(buf[:0], int64(partition), 10)
	e1 := len(nums)
	nums = strconv.AppendInt(nums, offset, 10)
	e2 := len(nums)
	nums = strconv.AppendInt(nums, ts, 10)
	e3 := len(nums)
	nums = strconv.AppendInt(nums, int64(len(value)), 10)
	s := string(nums)

	vals := make([]string, 5)
	vals[0] = "application/octet-stream"
	vals[1], vals[2], vals[3], vals[4] = s[:e1], s[e1:e2], s[e2:e3], s[e3:]
	hdr := w.Header()
	hdr["Content-Type"] = vals[0:1:1]
	hdr["X-Kv-Partition"] = vals[1:2:2]
	hdr["X-Kv-Offset"] = vals[2:3:3]
	hdr["X-Kv-Timestamp"] = vals[3:4:4]
	hdr["Content-Length"] = vals[4:5:5]
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(value)
}

// fail answers e and returns its status.
func (h *handler) fail(w http.ResponseWriter, e *apiError) int {
	writeError(w, e)
	return e.status
}

// serviceError answers a Service error: its sentinels are 404s, anything else a 500.
func (h *handler) serviceError(w http.ResponseWriter, r *http.Request, op string, err error) int {
	switch {
	case errors.Is(err, ErrOffsetOutOfRange):
		return h.fail(w, errGone)
	case errors.Is(err, ErrUnknownPartition):
		return h.fail(w, errNoPartition)
	case errors.Is(err, ErrUnknownTopic): // deleted since Topic answered
		return h.fail(w, errKeyNotFound)
	}
	return h.internal(w, r, op, err)
}

// internal logs err, unless the client went away, and answers 500. The log names the
// topic but not the key, which may be personal data.
func (h *handler) internal(w http.ResponseWriter, r *http.Request, op string, err error) int {
	if ctx := r.Context(); ctx.Err() == nil {
		h.log.ErrorContext(ctx, "kv lookup failed", "op", op, "topic", topicOf(r), "err", err)
	}
	return h.fail(w, errInternal)
}

// topicOf returns the topic segment of a lookup's path, for logs.
func topicOf(r *http.Request) string {
	req, _ := parseRequest(r.URL.Path, r.URL.RawPath, "")
	return req.topic
}
