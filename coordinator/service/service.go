// Package service runs the coordinator service as one part: the batch
// coordinator and the group coordinator, each in its own Pebble, served over
// NATS request/reply to the brokers of one cluster, with the garbage
// collector the batch coordinator runs from Open to Close. cmd/coordinator
// runs it as a process of its own; node embeds it in the embedded default,
// on an in-process NATS server. Both start it with Start, so they open,
// serve and close the same parts in the same order.
//
//	Start:  coordinator.Open -> groups.Open (TxnOffsetCommits verified by the
//	        coordinator, whose EndTxn completes them) -> metrics -> rpc.ServeWith
//	Close:  groups (answers held joins) -> rpc server (drains) -> coordinator
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/coordinator/shards"
	"github.com/floe-io/floe/groups"
)

// Meters names the meters of the service's parts; *metrics.Provider
// implements it.
type Meters interface {
	Meter(name string) metric.Meter
}

// Options configure a Service.
type Options struct {
	// Cluster is the cluster name, the prefix of the NATS subjects
	// (<cluster>.coord.<op>). Default: "floe".
	Cluster string
	// Coordinator configures the batch coordinator; its Dir is required.
	// Its Logger defaults to Logger.
	Coordinator coordinator.Options
	// Groups configures the group coordinator. Its Dir defaults to
	// <Coordinator.Dir>/groups, its Logger to Logger; its Topics and
	// Partitions are the batch coordinator.
	Groups groups.Options
	// Logger receives the service's logs. Default: discard.
	Logger *slog.Logger
	// Meters, when set, records the coordinator's gauges (meter
	// "floe/coordinator"), the consumer groups' lag and the share groups'
	// metrics ("floe/groups", lag.go and share_metrics.go) and the rpc
	// server's request durations
	// ("floe/coordinator/rpc"). Default: no metrics.
	Meters Meters
	// MaxLagSeries bounds the per-partition consumer lag series
	// (floe.consumer_group.lag; see registerLag); every group keeps its
	// floe.consumer_group.lag_sum. It bounds the share groups' per-topic
	// and per-partition series the same way, apart (registerShare).
	// Default: DefaultMaxLagSeries (10000).
	MaxLagSeries int
	// Gate, when set, is asked before every reply (rpc.ServerOptions.Gate).
	Gate func() error
	// SettledGate, when set, is asked instead of Gate before a reply that
	// depends only on what the log has (rpc.ServerOptions.SettledGate).
	SettledGate func() error
	// QueueGroup is the NATS queue group of the service's subscriptions
	// (rpc.ServerOptions.QueueGroup).
	QueueGroup string
	// ShardPeers, on shard 0 of a sharded coordinator, are shards 1 and up
	// (their rpc clients): the group coordinator reads partitions through a
	// router over them and this shard (coordinator/shards), so that share
	// groups acquire records of every shard's partitions. Default: none.
	ShardPeers []coordapi.Coordinator
}

// Service is a running coordinator service.
type Service struct {
	coord  *coordinator.Coordinator
	groups *groups.Groups
	// router, on shard 0 of a sharded coordinator, routes over every
	// shard: the lag gauges ask the others for their partitions' high
	// watermarks (lag.go).
	router *shards.Router
	srv    *rpc.Server
	reg    metric.Registration
	lagReg metric.Registration
	// shareReg reports the share groups' metrics (share_metrics.go).
	shareReg metric.Registration
	log      *slog.Logger

	groupsClosed bool
	closed       bool
}

// Start opens the batch coordinator and the group coordinator and serves
// both on nc until Close. The caller owns nc and closes it after Close.
func Start(nc *nats.Conn, opts Options) (_ *Service, err error) {
	if opts.Cluster == "" {
		opts.Cluster = "floe"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := rpc.CheckCluster(opts.Cluster); err != nil {
		return nil, err
	}
	copts, gopts := opts.Coordinator, opts.Groups
	if copts.Logger == nil {
		copts.Logger = opts.Logger
	}
	if gopts.Logger == nil {
		gopts.Logger = opts.Logger
	}
	if gopts.Dir == "" && gopts.FS == nil && copts.Dir != "" {
		gopts.Dir = filepath.Join(copts.Dir, "groups")
	}
	s := &Service{log: opts.Logger}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.coord, err = coordinator.Open(copts); err != nil {
		return nil, fmt.Errorf("open coordinator: %w", err)
	}
	gopts.Topics = s.coord
	gopts.Partitions = s.coord // where share-partitions start, and their batches
	if len(opts.ShardPeers) > 0 {
		r, err := shards.New(append([]coordapi.Coordinator{s.coord}, opts.ShardPeers...))
		if err != nil {
			return nil, err
		}
		gopts.Partitions = r
		s.router = r
	}
	if gopts.VerifyTxn == nil {
		gopts.VerifyTxn = s.coord.VerifyTxnOffsetCommit
	}
	if s.groups, err = groups.Open(gopts); err != nil {
		return nil, fmt.Errorf("open group coordinator: %w", err)
	}
	// Transactions commit or drop their groups' offsets when they end.
	s.coord.SetTxnOffsets(s.groups)
	var rpcMeter metric.Meter
	if opts.Meters != nil {
		if s.reg, err = s.coord.RegisterMetrics(opts.Meters.Meter("floe/coordinator")); err != nil {
			return nil, err
		}
		maxLag := opts.MaxLagSeries
		if maxLag <= 0 {
			maxLag = DefaultMaxLagSeries
		}
		if s.lagReg, err = s.registerLag(opts.Meters.Meter("floe/groups"), maxLag); err != nil {
			return nil, err
		}
		if s.shareReg, err = s.registerShare(opts.Meters.Meter("floe/groups"), maxLag); err != nil {
			return nil, err
		}
		rpcMeter = opts.Meters.Meter("floe/coordinator/rpc")
	}
	// Served until Close, not until a context ends: a draining broker of
	// the embedded default still commits what it buffered.
	if s.srv, err = rpc.ServeWith(context.Background(), nc, opts.Cluster, s.coord,
		rpc.ServerOptions{Logger: opts.Logger, Meter: rpcMeter, Groups: s.groups, Gate: opts.Gate, SettledGate: opts.SettledGate, QueueGroup: opts.QueueGroup}); err != nil {
		return nil, err
	}
	return s, nil
}

// Coordinator returns the batch coordinator (for tests and tools).
func (s *Service) Coordinator() *coordinator.Coordinator { return s.coord }

// Groups returns the group coordinator (for tests and tools).
func (s *Service) Groups() *groups.Groups { return s.groups }

// CloseGroups closes the group coordinator ahead of the rest: the
// JoinGroups and SyncGroups held in a rebalance are answered at once
// (NOT_COORDINATOR; their clients rejoin through another broker), and later
// group requests fail, while the batch coordinator keeps serving, so that a
// draining broker still commits what it buffered. Close calls it too.
func (s *Service) CloseGroups() error {
	if s.groupsClosed || s.groups == nil {
		return nil
	}
	s.groupsClosed = true
	if err := s.groups.Close(); err != nil {
		return fmt.Errorf("close group coordinator: %w", err)
	}
	return nil
}

// Close stops serving and closes the state: the group coordinator first
// (answering held joins), then the rpc server (answering what is in
// flight), then the batch coordinator. It is safe to call more than once.
func (s *Service) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	errs := []error{s.CloseGroups()}
	if s.srv != nil {
		s.srv.Close()
	}
	if s.reg != nil {
		errs = append(errs, s.reg.Unregister())
	}
	if s.lagReg != nil {
		errs = append(errs, s.lagReg.Unregister())
	}
	if s.shareReg != nil {
		errs = append(errs, s.shareReg.Unregister())
	}
	if s.coord != nil {
		if err := s.coord.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close coordinator: %w", err))
		}
	}
	return errors.Join(errs...)
}
