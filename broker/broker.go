// Package broker is floe's Kafka front: the TCP listener, request framing,
// API version negotiation, and one handler per Kafka API (one file per API,
// named by its key: 00_produce.go, 01_fetch.go, ...).
//
// Every broker accepts every partition: there are no partition leaders in a
// diskless cluster. Produce goes to ingest, which buffers batches from many
// partitions into one object; Fetch asks the coordinator where batches live
// and reads them back through the chunk cache.
//
// The broker owns the connections, SASL, authorization (ACLs), topic
// lookups, share sessions and zones, and shapes every answer. What it
// reads back is the read path's, which knows none of those:
//
//	broker/fetchread    coordinates, tiered segments, the byte budget's plan,
//	                  ranged reads through the cache, patching for the wire;
//	                  parked fetches woken by commit notices
//	broker/tailcache  the coordinates of each partition's newest batches,
//	                  from commit notices, for tailing consumers
//
// The topics it looks up come through broker/topiccache, and the batches
// it is sent are checked by broker/producecheck before ingest takes them.
package broker

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-io/floe/broker/fetchread"
	"github.com/floe-io/floe/broker/topiccache"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/internal/bufpool"
	"github.com/floe-io/floe/metrics"
)

// Appender is the produce path: ingest's object buffer. AppendFrom waits
// at most timeout for room in the buffer; src is the client connection,
// so that the buffer can tell producers still sending from those waiting
// for their answers.
type Appender interface {
	AppendFrom(ctx context.Context, src ingest.Source, timeout time.Duration, batches []ingest.Batch) (*ingest.Pending, error)
}

// RangeReader reads batch bytes back from object storage; the chunk cache
// implements it. Returned bytes must not be modified. A RangeReader that
// is also a fetchread.DirectRangeReader (the chunk cache is) serves small
// reads of views and /kv without loading chunks.
type RangeReader = fetchread.RangeReader

// Options configure a Broker.
type Options struct {
	// NodeID is this broker's Kafka node id. Default: 1.
	NodeID int32
	// AdvertisedAddr is the host:port Metadata returns for this broker.
	// Default: the listener's address.
	AdvertisedAddr string
	// Rack is returned in Metadata when set.
	Rack string
	// ClusterID is returned in Metadata and DescribeCluster.
	// Default: "floe".
	ClusterID string
	// AutoCreateTopics lets Metadata create missing topics when the client
	// allows it (auto.create.topics.enable). Produce never creates one, as
	// in Kafka. Default: false, so that an embedding program or test opts
	// in; cmd/broker turns it on unless --auto-create-topics=false, as
	// Kafka's default is true (DescribeConfigs shows "true" as the default).
	AutoCreateTopics bool
	// DefaultPartitions is num.partitions for auto-created topics.
	// Default: 1.
	DefaultPartitions int32
	// MaxRequestBytes bounds one request frame (socket.request.max.bytes);
	// a larger frame closes the connection. Default: 100 MiB.
	MaxRequestBytes int32
	// MaxInflight bounds the requests of one connection being served at
	// once; the connection stops reading past it. Default: 32.
	MaxInflight int
	// FetchConcurrency bounds the byte ranges one Fetch reads at once
	// (each a chunk-cache read, a GET on a miss), and its per-partition
	// coordinator lookups when the coordinator predates batched ones. 1
	// reads them one after another. Default: 16.
	FetchConcurrency int
	// SASLMechanisms turns SASL on for the listener with these mechanisms
	// (sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512): a connection must
	// authenticate before any request but ApiVersions and the SASL ones.
	// Users are the coordinator's SCRAM users. Default: none, SASL off.
	SASLMechanisms []string
	// ReauthInterval is connections.max.reauth.ms (KIP-368): a SASL
	// session's lifetime, after which the client must re-authenticate on
	// the connection or have it closed. Default: 0, sessions never end.
	ReauthInterval time.Duration
	// ClientCertPrincipal names the principal of a TLS connection's
	// verified client certificate (mTLS: tlsconfig.Rules.Principal). SASL,
	// when on, authenticates the connection again and its principal wins.
	// Default: nil, certificates name no principal.
	ClientCertPrincipal func(*x509.Certificate) string
	// KVIndexEnabled is the cluster switch --kv-index-enabled, shown by
	// DescribeConfigs.
	KVIndexEnabled bool
	// ACLsEnabled turns authorization on (--acls-enabled): every request
	// is checked against the ACL bindings stored in the coordinator, as
	// Apache Kafka's authorizer does, and denied without an ALLOW binding.
	// Off, everything is allowed (the embedded default stays zero-config).
	// Default: false.
	ACLsEnabled bool
	// SuperUsers are the principals allowed everything when ACLsEnabled
	// ("User:admin"; --super-users), as Kafka's super.users. Default: none.
	SuperUsers []string
	// ACLRefreshInterval is how often the broker polls the coordinator's
	// ACL version when ACLsEnabled; a change is also announced at once,
	// and the poll bounds how long a lost announcement delays it.
	// Default: 1s.
	ACLRefreshInterval time.Duration
	// ShareGroupsDisabled leaves the share group APIs (ShareGroupHeartbeat,
	// ShareGroupDescribe, ShareFetch, ShareAcknowledge, and the share group
	// offsets admin APIs Describe-, Alter- and DeleteShareGroupOffsets) out
	// of ApiVersions and closes the connection of a client that sends one
	// anyway, as Kafka does for an API that is not enabled
	// (--share-groups-enabled=false; Kafka's share.version feature).
	// Default: false, served.
	ShareGroupsDisabled bool
	// MaxShareSessions is group.share.max.share.sessions: the share
	// sessions this broker keeps at once; a ShareFetch opening one more is
	// SHARE_SESSION_LIMIT_REACHED (--group-share-max-share-sessions).
	// Default: 2000.
	MaxShareSessions int
	// Logger receives the broker's logs. Default: slog.Default().
	Logger *slog.Logger
	// Meter records the broker's metrics. Default: no metrics.
	Meter metric.Meter
	// Tracer, when set, traces Produce and Fetch requests (tracing.go;
	// --otlp-endpoint). Default: nil, no tracing and no cost.
	Tracer trace.Tracer
}

func (o *Options) setDefaults() {
	if o.NodeID == 0 {
		o.NodeID = 1
	}
	if o.ClusterID == "" {
		o.ClusterID = "floe"
	}
	if o.DefaultPartitions <= 0 {
		o.DefaultPartitions = 1
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = 100 << 20
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = 32
	}
	if o.FetchConcurrency <= 0 {
		o.FetchConcurrency = 16
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ACLRefreshInterval <= 0 {
		o.ACLRefreshInterval = defaultACLRefresh
	}
	if o.MaxShareSessions <= 0 {
		o.MaxShareSessions = 2000
	}
}

// Broker serves the Kafka protocol over TCP.
type Broker struct {
	opts Options
	// conns numbers client connections: each one's ingest.Source.
	conns  atomic.Uint64
	coord  coordapi.Coordinator
	ingest Appender
	// bufs recycles the fetch path's records and answer frames.
	bufs bufpool.Pool
	// reads is the read path: Fetch's, ShareFetch's, ListOffsets' and
	// /kv's batches, read back through the chunk cache, and the fetches
	// waiting for new ones.
	reads  *fetchread.Reader
	groups coordapi.GroupCoordinator
	log    *slog.Logger

	topics      *topiccache.Cache
	unsubscribe func()
	registry    registry
	metrics     *brokerMetrics
	zoneMetrics *zoneMetrics
	// offsetsTopicReady is set once __consumer_offsets exists.
	offsetsTopicReady atomic.Bool
	// acls keeps the authorizer current; nil when ACLs are off
	// (authorize.go). denials counts and logs what it denies.
	acls    *aclWatcher
	denials *denials
	// testPrincipal, when set (tests only), names the principal of a
	// connection from the client id of its requests, as authentication
	// will.
	testPrincipal func(clientID string) string
	// drained ends when Drain starts: group requests held in a rebalance
	// are then answered, so that the drain does not wait for them.
	drained     context.Context
	stopDrained context.CancelFunc
	// shares are the share sessions (shares.go); shareReleases counts the
	// releases of ended sessions still being made.
	shares        shareSessions
	shareReleases sync.WaitGroup

	mu struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		closed    bool
	}
	wg sync.WaitGroup
}

// Deps are the parts a Broker serves clients with.
type Deps struct {
	// Coordinator is the batch coordinator (in this process or over NATS).
	// Required.
	Coordinator coordapi.Coordinator
	// Groups is the group coordinator. Without one the group APIs answer
	// COORDINATOR_NOT_AVAILABLE.
	Groups coordapi.GroupCoordinator
	// Appender is the produce path (ingest). Without one Produce fails.
	Appender Appender
	// Reader reads batches back from object storage (the chunk cache),
	// and the tiered segments' indexes and batches too. Without one Fetch
	// fails.
	Reader RangeReader
}

// New returns a Broker that serves clients with deps.
func New(opts Options, deps Deps) *Broker {
	opts.setDefaults()
	coord := deps.Coordinator
	b := &Broker{
		opts:        opts,
		coord:       coord,
		groups:      deps.Groups,
		ingest:      deps.Appender,
		log:         opts.Logger,
		topics:      topiccache.New(coord, topiccache.Options{}),
		metrics:     newBrokerMetrics(opts.Meter),
		zoneMetrics: newZoneMetrics(metrics.OrNoop(opts.Meter), opts.Rack),
	}
	b.reads = b.newReads(deps.Reader)
	b.denials = newDenials(opts.Logger, b.metrics)
	if opts.ACLsEnabled {
		b.acls = newACLWatcher(coord, opts.SuperUsers, opts.ACLRefreshInterval, opts.Logger)
	}
	observeParked(opts.Meter, b.reads)
	observeShareSessions(opts.Meter, &b.shares)
	b.mu.listeners = make(map[net.Listener]struct{})
	b.mu.conns = make(map[*conn]struct{})
	b.drained, b.stopDrained = context.WithCancel(context.Background())
	stopCommits := coord.Subscribe(func(ns []coordapi.CommitNotice) {
		b.reads.Notify(ns)
	})
	stopTopics := coord.SubscribeTopics(b.topics.Invalidate)
	b.unsubscribe = func() { stopCommits(); stopTopics() }
	return b
}

// Serve accepts connections on ln until ln is closed or Close is called.
func (b *Broker) Serve(ln net.Listener) error {
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		return errors.New("broker: closed")
	}
	b.mu.listeners[ln] = struct{}{}
	if b.opts.AdvertisedAddr == "" {
		b.opts.AdvertisedAddr = ln.Addr().String()
	}
	b.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(delay*2, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			b.mu.Lock()
			closed := b.mu.closed
			b.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		delay = 0
		c := newConn(b, nc)
		b.mu.Lock()
		if b.mu.closed {
			b.mu.Unlock()
			nc.Close()
			return nil
		}
		b.mu.conns[c] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go func() {
			defer b.wg.Done()
			c.serve()
			b.mu.Lock()
			delete(b.mu.conns, c)
			b.mu.Unlock()
		}()
	}
}

// StopAccepting closes the listeners; open connections are served on.
func (b *Broker) StopAccepting() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.closed = true
	for ln := range b.mu.listeners {
		ln.Close()
	}
}

// Drain stops accepting connections and stops reading requests on the open
// ones; requests already read are still answered.
func (b *Broker) Drain() {
	b.StopAccepting()
	b.stopDrained()
	b.mu.Lock()
	for c := range b.mu.conns {
		c.drain()
	}
	b.mu.Unlock()
}

// Close stops accepting and drains every connection: no new requests are
// read, the ones already read are answered, then the connection closes. When
// ctx ends first, the remaining connections are closed at once.
func (b *Broker) Close(ctx context.Context) error {
	b.Drain()
	b.unsubscribe()
	if b.acls != nil {
		b.acls.close()
	}
	done := make(chan struct{})
	go func() { b.wg.Wait(); b.shareReleases.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		for c := range b.mu.conns {
			c.close()
		}
		b.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

// topicChanged drops a topic this broker just changed (deleted, altered,
// grown) from its cache, so that the broker's own next request sees the
// change without waiting for the coordinator's notice, which travels
// separately.
func (b *Broker) topicChanged(id coordapi.TopicID, name string) {
	b.topics.Invalidate([]coordapi.TopicNotice{{ID: id, Name: name}})
}

// ParkedFetches returns how many fetches are parked right now, waiting at
// the log end for new records or their max wait (the gauge
// floe.kafka.fetch.parked). Tests wait on it before producing, so that a
// produce wakes a parked fetch rather than racing it.
func (b *Broker) ParkedFetches() int { return int(b.reads.Parked()) }

// newReads returns the read path over reader (nil: reads fail).
func (b *Broker) newReads(reader RangeReader) *fetchread.Reader {
	return fetchread.New(b.coord, reader, &b.bufs, fetchread.Options{
		Concurrency: b.opts.FetchConcurrency, Logger: b.opts.Logger, Tracer: b.opts.Tracer})
}
