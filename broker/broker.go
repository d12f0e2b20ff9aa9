// Package broker is floe's Kafka front: the TCP listener, request framing,
// API version negotiation, and one handler per Kafka API (one file per API,
// named by its key: 00_produce.go, 01_fetch.go, ...).
//
// Every broker accepts every partition: there are no partition leaders in a
// diskless cluster. Produce goes to ingest, which buffers batches from many
// partitions into one object; Fetch asks the coordinator where batches live
// and reads them back through the chunk cache.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/ingest"
)

// Coordinator is what the broker needs of the batch coordinator. The
// in-process *coordinator.Coordinator implements it, and so does the NATS
// client.
type Coordinator interface {
	CreateTopic(ctx context.Context, req coordinator.CreateTopicRequest) (coordinator.Topic, error)
	DeleteTopic(ctx context.Context, name string) (coordinator.TopicID, error)
	DeleteTopicByID(ctx context.Context, id coordinator.TopicID) (string, error)
	CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error
	AlterTopicConfigs(ctx context.Context, name string, ops []coordinator.ConfigOp, incremental, validateOnly bool) error
	Topic(ctx context.Context, name string) (coordinator.Topic, error)
	TopicByID(ctx context.Context, id coordinator.TopicID) (coordinator.Topic, error)
	Topics(ctx context.Context) ([]coordinator.Topic, error)
	FindBatches(ctx context.Context, req coordinator.FindBatchesRequest) (coordinator.FindBatchesResponse, error)
	PartitionState(ctx context.Context, id coordinator.TopicID, partition int32) (coordinator.PartitionState, error)
	ListOffset(ctx context.Context, id coordinator.TopicID, partition int32, timestamp int64) (offset, ts int64, err error)
	DeleteRecords(ctx context.Context, id coordinator.TopicID, partition int32, offset int64) (int64, error)
	InitProducerID(ctx context.Context, req coordinator.InitProducerIDRequest) (coordinator.InitProducerIDResponse, error)
	Subscribe(fn func([]coordinator.CommitNotice)) (cancel func())
	KvLookup(ctx context.Context, id coordinator.TopicID, partition int32, key []byte) (offset, hwm int64, found bool, err error)
	KvReady(ctx context.Context, id coordinator.TopicID) (bool, error)
	// ListBrokers returns the live brokers of the cluster (the registry
	// brokers heartbeat into), sorted by node id.
	ListBrokers(ctx context.Context) ([]coordinator.BrokerInfo, error)
}

// Appender is the produce path: ingest's object buffer.
type Appender interface {
	Append(ctx context.Context, batches []ingest.Batch) (*ingest.Pending, error)
}

// RangeReader reads batch bytes back from object storage; the chunk cache
// implements it. Returned bytes must not be modified.
type RangeReader interface {
	GetRange(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error)
}

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
	// KVIndexEnabled is the cluster switch --kv-index-enabled, shown by
	// DescribeConfigs.
	KVIndexEnabled bool
	// Logger receives the broker's logs. Default: slog.Default().
	Logger *slog.Logger
	// Meter records the broker's metrics. Default: no metrics.
	Meter metric.Meter
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
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Broker serves the Kafka protocol over TCP.
type Broker struct {
	opts   Options
	coord  Coordinator
	ingest Appender
	reader RangeReader
	groups GroupCoordinator
	log    *slog.Logger

	waiters     *waiters
	tails       *tailCache
	topics      *topicCache
	unsubscribe func()
	registry    registry
	metrics     *brokerMetrics
	// offsetsTopicReady is set once __consumer_offsets exists.
	offsetsTopicReady atomic.Bool
	// drained ends when Drain starts: group requests held in a rebalance
	// are then answered, so that the drain does not wait for them.
	drained     context.Context
	stopDrained context.CancelFunc

	mu struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		closed    bool
	}
	wg sync.WaitGroup
}

// New returns a Broker that serves clients with coord, in and reader.
func New(opts Options, coord Coordinator, in Appender, reader RangeReader) *Broker {
	opts.setDefaults()
	b := &Broker{
		opts:    opts,
		coord:   coord,
		ingest:  in,
		reader:  reader,
		log:     opts.Logger,
		waiters: newWaiters(),
		tails:   newTailCache(),
		topics:  newTopicCache(coord),
		metrics: newBrokerMetrics(opts.Meter),
	}
	b.mu.listeners = make(map[net.Listener]struct{})
	b.mu.conns = make(map[*conn]struct{})
	b.drained, b.stopDrained = context.WithCancel(context.Background())
	b.unsubscribe = coord.Subscribe(func(ns []coordinator.CommitNotice) {
		b.tails.notify(ns) // before waking fetches, so they find the batches
		b.waiters.notify(ns)
	})
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
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
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
