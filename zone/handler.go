package zone

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/objectstore"
)

// ChunkPath is the path of the chunk endpoint on a broker's internal (HTTP)
// listener: GET ChunkPath?key=<key>&offset=<n>&length=<n>[&chunk_bytes=<n>]
// answers the chunk's bytes, exactly length of them.
const ChunkPath = "/internal/chunk"

// ChunkFunc reads the whole chunk [offset, offset+length) of key; a node
// passes its cache's GetChunk, so the owner keeps the chunk for the next
// peer. The returned bytes are not modified.
type ChunkFunc func(ctx context.Context, key string, offset, length int64) ([]byte, error)

// HandlerOptions configure a Handler. The zero value is usable.
type HandlerOptions struct {
	// ChunkBytes is the chunk size of the cache behind the handler: a
	// request must start at a multiple of it, be at most
	// cache.MaxChunkLen of it long, and, when it says its own chunk size
	// (chunk_bytes), agree, so that a peer configured otherwise never
	// leaves a chunk of the wrong length in the cache.
	// Default: cache.DefaultChunkBytes.
	ChunkBytes int64
	// Prefixes are the key prefixes served (the WAL and segment prefixes,
	// coordapi.WALPrefix and coordapi.TieredPrefix); a key under none is
	// refused. Default: none, every key objectstore.CheckKey accepts.
	Prefixes []string
	// Meter records floe.zone.peer_served. Default: no-op.
	Meter metric.Meter
	// Logger receives failures to serve. Default: discard.
	Logger *slog.Logger
}

// Handler serves GET ChunkPath: the chunks this broker owns, to the other
// brokers of its zone. It reads them through its ChunkFunc with the
// context marked as serving a peer, so that a Getter under it reads the
// object store rather than asking another peer.
//
// Answers: 200 and exactly length bytes; 400 for a missing or malformed
// parameter, a key the store refuses or outside Prefixes, or a range that
// is not a whole chunk; 404 for an object that does not exist; 405 for
// another method; 500 otherwise. It authenticates nobody: the internal
// listener must be reachable by the zone's brokers only, never publicly.
type Handler struct {
	serve   ChunkFunc
	opts    HandlerOptions
	metrics servedMetrics
}

// NewHandler returns a handler serving chunks read by serve.
func NewHandler(serve ChunkFunc, opts HandlerOptions) *Handler {
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = cache.DefaultChunkBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{serve: serve, opts: opts, metrics: newServedMetrics(opts.Meter)}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	key, offset, length, err := h.parse(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	data, err := h.serve(withServingPeer(r.Context()), key, offset, length)
	if err == nil && int64(len(data)) != length {
		err = fmt.Errorf("zone: chunk of %s at %d holds %d bytes, not %d", key, offset, len(data), length)
	}
	if err != nil {
		code := errorStatus(err)
		if code == http.StatusInternalServerError && r.Context().Err() == nil {
			h.opts.Logger.Warn("zone: cannot serve a chunk to a peer", "key", key, "offset", offset, "remote", r.RemoteAddr, "err", err)
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	if _, err := w.Write(data); err != nil {
		return // the peer went away; it reads the store
	}
	h.metrics.count(r.Context(), len(data))
}

// parse returns the request's key, offset and length, checked.
func (h *Handler) parse(r *http.Request) (key string, offset, length int64, err error) {
	q := r.URL.Query()
	key = q.Get("key")
	if err := objectstore.CheckKey(key); err != nil {
		return "", 0, 0, fmt.Errorf("zone: key: %w", err)
	}
	if len(h.opts.Prefixes) > 0 && !hasAnyPrefix(key, h.opts.Prefixes) {
		return "", 0, 0, fmt.Errorf("zone: key %q is not under %s", key, strings.Join(h.opts.Prefixes, ", "))
	}
	num := func(name string) (int64, error) {
		v, err := strconv.ParseInt(q.Get(name), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("zone: parameter %s: %w", name, err)
		}
		return v, nil
	}
	if offset, err = num("offset"); err != nil {
		return "", 0, 0, err
	}
	if length, err = num("length"); err != nil {
		return "", 0, 0, err
	}
	cb := h.opts.ChunkBytes
	if q.Has("chunk_bytes") {
		theirs, err := num("chunk_bytes")
		if err != nil {
			return "", 0, 0, err
		}
		if theirs != cb {
			return "", 0, 0, fmt.Errorf("zone: chunk size %d, this broker's is %d", theirs, cb)
		}
	}
	if offset < 0 || offset%cb != 0 || length <= 0 || length > cache.MaxChunkLen(cb) {
		return "", 0, 0, fmt.Errorf("zone: [%d, +%d) is not a whole chunk of %d bytes", offset, length, cb)
	}
	return key, offset, length, nil
}

// errorStatus is the HTTP status of a ChunkFunc error.
func errorStatus(err error) int {
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, cache.ErrNotChunk), errors.Is(err, objectstore.ErrInvalidKey), errors.Is(err, objectstore.ErrInvalidRange):
		return http.StatusBadRequest
	default:
		return http.StatusInternalServerError
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// servingPeerKey marks a context as serving a peer's chunk request.
type servingPeerKey struct{}

// withServingPeer returns ctx marked as serving a peer. The mark survives
// the cache's load (it keeps the reader's context values), so the Getter
// under the owner's cache sees it.
func withServingPeer(ctx context.Context) context.Context {
	return context.WithValue(ctx, servingPeerKey{}, true)
}

// servingPeer reports whether ctx serves a peer's chunk request.
func servingPeer(ctx context.Context) bool {
	v, _ := ctx.Value(servingPeerKey{}).(bool)
	return v
}
