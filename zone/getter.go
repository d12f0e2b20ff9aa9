package zone

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/coordapi"
)

// Defaults applied to zero-valued GetterOptions fields.
const (
	DefaultPeerTimeout = 2 * time.Second
	DefaultPeerBackoff = 5 * time.Second
)

// GetterOptions configure a Getter. The zero value is usable.
type GetterOptions struct {
	// ChunkBytes is the chunk size of the cache the Getter serves
	// (cache.Options.ChunkBytes): loads of one whole chunk are the ones
	// shared. Default: cache.DefaultChunkBytes.
	ChunkBytes int64
	// PeerTimeout bounds one chunk request to a peer, body included;
	// past it the chunk is read from the store. Default: 2s.
	PeerTimeout time.Duration
	// PeerBackoff is how long a peer that could not be reached
	// (connection refused, timeout) is not asked again: its chunks are
	// read from the store meanwhile, without waiting on it each time.
	// Default: 5s.
	PeerBackoff time.Duration
	// TLS, when set, makes chunk requests over HTTPS with this client
	// configuration: the peers' HTTP listeners serve TLS. Default: nil,
	// plain HTTP.
	TLS *tls.Config
	// Transport carries chunk requests. Default: a pooled transport of
	// the Getter's own, without proxy or compression.
	Transport http.RoundTripper
	// Meter records floe.cache.chunk_loads. Default: no-op.
	Meter metric.Meter
	// Logger receives peer failures (debug) and peers backing off (warn).
	// Default: discard.
	Logger *slog.Logger
}

// Getter is a cache.Getter in front of the object store that sends the
// loads of chunks another broker of the zone owns to that broker, and
// reads the store for the rest and whenever the owner fails. See the
// package documentation.
type Getter struct {
	store   cache.Getter
	members *Membership // nil: share nothing
	opts    GetterOptions
	client  *http.Client
	metrics loadMetrics

	mu struct {
		sync.Mutex
		downUntil map[int32]time.Time // peers backing off, by node id
	}
}

var _ cache.Getter = (*Getter)(nil)

// NewGetter returns a Getter over store for the cache of a broker in
// members' zone. A nil members shares nothing: every load reads the store
// (and is still counted).
func NewGetter(store cache.Getter, members *Membership, opts GetterOptions) *Getter {
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = cache.DefaultChunkBytes
	}
	if opts.PeerTimeout <= 0 {
		opts.PeerTimeout = DefaultPeerTimeout
	}
	if opts.PeerBackoff <= 0 {
		opts.PeerBackoff = DefaultPeerBackoff
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Transport == nil {
		opts.Transport = &http.Transport{
			DialContext:         (&net.Dialer{Timeout: opts.PeerTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 64, // a Fetch reads up to 16 ranges at once, a chunk each
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true, // record batches are compressed already, if at all
			TLSClientConfig:     opts.TLS,
		}
	}
	g := &Getter{
		store:   store,
		members: members,
		opts:    opts,
		client:  &http.Client{Transport: opts.Transport},
		metrics: newLoadMetrics(opts.Meter),
	}
	g.mu.downUntil = map[int32]time.Time{}
	return g
}

// GetRange reads length bytes of key at offset: from the chunk's owner in
// the zone when the range is one whole chunk that another broker owns and
// ctx is not serving a peer already, else (and when the owner fails) from
// the store. A store error is returned as the store returned it.
func (g *Getter) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	owner, ok := g.peerFor(ctx, key, offset, length)
	if !ok {
		g.metrics.count(ctx, SourceObjectStore)
		return g.store.GetRange(ctx, key, offset, length)
	}
	if g.backingOff(owner.NodeID) {
		g.metrics.count(ctx, SourcePeerFallback)
		return g.store.GetRange(ctx, key, offset, length)
	}
	data, err := g.fromPeer(ctx, owner, key, offset, length)
	if err == nil {
		g.metrics.count(ctx, SourcePeer)
		return data, nil
	}
	if ctx.Err() != nil { // the load was given up, not the peer's fault
		return nil, err
	}
	g.opts.Logger.Debug("zone: peer failed to serve a chunk; reading the store", "peer", owner.NodeID, "key", key, "offset", offset, "err", err)
	if errors.Is(err, errUnreachable) {
		g.backOff(owner.NodeID, err)
	}
	g.metrics.count(ctx, SourcePeerFallback)
	return g.store.GetRange(ctx, key, offset, length)
}

// peerFor returns the peer to ask for [offset, offset+length) of key, if
// any: a whole aligned chunk, owned by another broker, not asked for while
// serving a peer.
func (g *Getter) peerFor(ctx context.Context, key string, offset, length int64) (coordapi.BrokerInfo, bool) {
	cb := g.opts.ChunkBytes
	if g.members == nil || !g.members.Sharing() || servingPeer(ctx) ||
		offset < 0 || offset%cb != 0 || length <= 0 || length > cache.MaxChunkLen(cb) {
		return coordapi.BrokerInfo{}, false
	}
	owner, self := g.members.Owner(key, offset/cb)
	return owner, !self
}

// errUnreachable marks a peer failure in the transport (the peer may be
// down) rather than in its answer.
var errUnreachable = errors.New("zone: peer unreachable")

// fromPeer asks owner for the chunk.
func (g *Getter) fromPeer(ctx context.Context, owner coordapi.BrokerInfo, key string, offset, length int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.PeerTimeout)
	defer cancel()
	q := url.Values{
		"key":         {key},
		"offset":      {strconv.FormatInt(offset, 10)},
		"length":      {strconv.FormatInt(length, 10)},
		"chunk_bytes": {strconv.FormatInt(g.opts.ChunkBytes, 10)},
	}
	scheme := "http://"
	if g.opts.TLS != nil {
		scheme = "https://"
	}
	u := scheme + owner.InternalAddr + ChunkPath + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("zone: chunk request to broker %d at %s: %w", owner.NodeID, owner.InternalAddr, err)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("zone: get %s at %d from broker %d: %w: %w", key, offset, owner.NodeID, errUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("zone: get %s at %d from broker %d: %s: %s", key, offset, owner.NodeID, resp.Status, msg)
	}
	if resp.ContentLength >= 0 && resp.ContentLength != length {
		return nil, fmt.Errorf("zone: get %s at %d from broker %d: %d bytes, want %d", key, offset, owner.NodeID, resp.ContentLength, length)
	}
	data := make([]byte, length)
	if _, err := io.ReadFull(resp.Body, data); err != nil {
		return nil, fmt.Errorf("zone: read %s at %d from broker %d: %w: %w", key, offset, owner.NodeID, errUnreachable, err)
	}
	var extra [1]byte
	if n, _ := io.ReadFull(resp.Body, extra[:]); n != 0 {
		return nil, fmt.Errorf("zone: get %s at %d from broker %d: more than %d bytes", key, offset, owner.NodeID, length)
	}
	return data, nil
}

// backingOff reports whether node failed to answer within the last
// PeerBackoff.
func (g *Getter) backingOff(node int32) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.mu.downUntil[node]
	if ok && time.Now().After(until) {
		delete(g.mu.downUntil, node)
		return false
	}
	return ok
}

// backOff stops asking node for PeerBackoff.
func (g *Getter) backOff(node int32, err error) {
	g.mu.Lock()
	_, already := g.mu.downUntil[node]
	g.mu.downUntil[node] = time.Now().Add(g.opts.PeerBackoff)
	g.mu.Unlock()
	if !already {
		g.opts.Logger.Warn("zone: peer unreachable; reading its chunks from the store for a while", "peer", node, "backoff", g.opts.PeerBackoff, "err", err)
	}
}

// Close closes the idle connections to peers.
func (g *Getter) Close() {
	g.client.CloseIdleConnections()
}
