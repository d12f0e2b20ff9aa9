package coordinator

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/acls"
	"github.com/floe-io/floe/coordinator/brokers"
	"github.com/floe-io/floe/coordinator/collect"
	"github.com/floe-io/floe/coordinator/durable"
	"github.com/floe-io/floe/coordinator/follow"
	"github.com/floe-io/floe/coordinator/handover"
	"github.com/floe-io/floe/coordinator/inline"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/tables"
	"github.com/floe-io/floe/coordinator/tierplan"
	"github.com/floe-io/floe/coordinator/txn"
	"github.com/floe-io/floe/coordinator/users"
	"github.com/floe-io/floe/internal/keyspan"
	"github.com/floe-io/floe/internal/pebblelog"
	"github.com/floe-io/floe/kvindex"
)

// Options configures a Coordinator.
type Options struct {
	// Dir is the Pebble directory; it is created if missing. Required.
	Dir string
	// DefaultPartitions is the partition count of topics created without
	// one (Kafka's num.partitions). Default: 1.
	DefaultPartitions int32
	// KVIndexEnabled is the cluster switch (--kv-index-enabled) without which
	// no topic may turn kv.index.enabled on. Default: false.
	KVIndexEnabled bool
	// Now returns the current time; tests replace it. Default: time.Now.
	Now func() time.Time
	// Logger receives the coordinator's and Pebble's logs. Default: discard.
	Logger *slog.Logger
	// Objects reads batches back to build a topic's key index from the log
	// when kv.index.enabled is turned on for a topic with data. Without it
	// such an index stays not ready. Default: none.
	Objects ObjectReader
	// BrokerTTL is how long a broker registration lives without a
	// heartbeat (RegisterBroker) before ListBrokers stops naming it.
	// Default: 6s.
	BrokerTTL time.Duration
	// GCGrace is how long garbage and orphan objects are kept before the
	// collector deletes them (--gc-grace). Default: 10m.
	GCGrace time.Duration
	// GCStore, when set, runs the garbage collector on it from Open to
	// Close: objects no batch references and orphans under
	// <GCPrefix>/wal/ older than GCGrace are deleted. Default: no collector.
	GCStore GCStore
	// GCPrefix is the object key prefix of the store's WAL objects.
	GCPrefix string
	// GCInterval is the time between collections. Default: GCGrace/10,
	// between 1s and 1m.
	GCInterval time.Duration

	// WALRetention is the cluster default of local.retention.ms
	// (--wal-retention): how long batches stay in WAL objects before they
	// are consolidated into segments. Default: 10m.
	WALRetention time.Duration
	// WALRetentionBytes is the cluster default of local.retention.bytes:
	// the most WAL bytes a partition keeps before its oldest batches are
	// consolidated. Default: 0, no limit (as -1).
	WALRetentionBytes int64
	// TierInterval is how often the planner queues partitions past their
	// WAL retention and retention.ms / retention.bytes are enforced.
	// Negative: never in the background (tests call TierTick). Default:
	// 10s.
	TierInterval time.Duration
	// TierJobLease is how long a broker has to complete a consolidation
	// job. Kept below GCGrace, so that the collector never takes the
	// segment of a job still allowed to complete. Default: 2m (at most
	// GCGrace/2).
	TierJobLease time.Duration
	// ConsolidationDisabled stops planning consolidation jobs; retention
	// still runs. Default: false.
	ConsolidationDisabled bool
	// TableInterval is how often a table.enabled topic's table job may
	// be planned: how often its table gets a snapshot (table lag against
	// snapshot count). Default: 1m.
	TableInterval time.Duration
	// TableMaintainInterval is how often a table.enabled topic's table
	// maintenance job (table.retention.ms, snapshot expiry, orphan
	// files) may be planned; the first after a start is planned at once.
	// Default: 24h.
	TableMaintainInterval time.Duration

	// TxnCheckInterval is how often transactions past their timeout are
	// aborted and prepared ones completed. Negative: never in the
	// background (tests call TxnTick). Default: 1s.
	TxnCheckInterval time.Duration
	// ProducerIDExpiration is how long a producer's idempotence state in a
	// partition is kept after its last batch there (Kafka's
	// producer.id.expiration.ms); TransactionalIDExpiration how long a
	// transactional id with no transaction open is kept after its last
	// change (transactional.id.expiration.ms). The transaction loop
	// expires them every ExpirationCheckInterval (Kafka's
	// producer.id.expiration.check.interval.ms), on the coordinator's
	// clock. Negative: never. Defaults: 1 day, 7 days, 10m.
	ProducerIDExpiration      time.Duration
	TransactionalIDExpiration time.Duration
	ExpirationCheckInterval   time.Duration
	// Markers is where EndTxn writes the objects holding transaction
	// markers: the cluster's object store. Without it transactions cannot
	// end. Default: none.
	Markers MarkerStore

	// Inline, when set, takes inline objects (CommitRequest.Inline): the
	// brokers' object store, which must be the one their fetches read.
	// The embedded default sets it to the node's directory store: see
	// package inline. Without it an inline commit is refused. Default: none.
	Inline InlineStore

	// Log, when set, is the replicated log of the coordinator's state
	// (package ha): every Pebble batch is appended to it, and applied only
	// once the log has it. Without it batches are written to Pebble
	// directly, synced. Default: none.
	Log Log

	// FS replaces the filesystem under Pebble: vfs.NewMem() for a state
	// that lives in memory (tests of other packages), an errorfs wrapper to
	// inject write failures. Default: the OS filesystem.
	FS vfs.FS

	// Shards is how many coordinator shards the cluster's partitions are
	// spread over, and Shard which of them this one is
	// (docs/design/coordinator-shards.md): a partition is this shard's
	// when coordapi.ShardOf says so, and a call about another shard's
	// partition is answered NOT_LEADER_OR_FOLLOWER, never from a state
	// this shard does not keep. Default: 1 shard, this one (0).
	Shards, Shard int
	// TopicOwner, on shards other than 0, is shard 0: the coordinator
	// keeps a copy of its topics (package follow), taken at Open, at each of
	// its topic notices and every FollowInterval, and asked for a topic a
	// commit names before that commit is refused. Default: none (this
	// coordinator owns its topics).
	TopicOwner TopicOwner
	// FollowInterval is how often the topics of TopicOwner are followed
	// whole, notices aside (they can be lost). Default: 10s.
	FollowInterval time.Duration
	// TxnOwner, on shards other than 0, is shard 0's transaction
	// coordinator: a transactional batch of a producer this shard has no
	// current view of is checked against the view it asks for
	// (follow_txn.go). Default: none.
	TxnOwner TxnOwner
	// ShardPeers, on shard 0 of a sharded coordinator, are the other
	// shards, index i-1 for shard i: transaction markers of their
	// partitions are committed there (WriteTxnMarkers). Default: none.
	ShardPeers []MarkerPeer
	// GrowPeers, on shard 0, are the other shards of the cluster --shards
	// (Shards) counts, index i-1 for shard i, when that is more than the
	// count the state serves by: shard 0 then grows the cluster to Shards
	// from Open on (Grow, in the background, again until it succeeds),
	// moving partitions through them. Default: none.
	GrowPeers []ShardPeer
	// ObjectPeers, on shard 0 of a sharded coordinator, are the other
	// shards: its collector (GCStore) deletes an object only when none of
	// them has it live or garbage for less than GCGrace, and has those
	// that know it forget it first (gc_shards.go). The other shards run
	// no collector. Default: none.
	ObjectPeers []ObjectPeer
	// MaxObjectAge refuses the commit of a WAL object whose key's UUIDv7
	// time is older than this on the coordinator's clock, with
	// REQUEST_TIMED_OUT (retriable: the producer sends the records again,
	// in a new object). A commit that late could otherwise name an object
	// the collector already took as an orphan: it deletes unknown WAL
	// objects once their store time is GCGrace old, so refusing them at
	// half of it leaves the other half for clock skew between brokers,
	// the store and this coordinator (package commitcheck). Keys that are not
	// UUIDv7 are not checked. Default: GCGrace/2 when this coordinator
	// collects garbage (GCStore) or is one of several shards, which shard
	// 0 collects for; else never. Negative: never.
	MaxObjectAge time.Duration
}

// Validate reports every invalid option at once, each named by the flag
// of cmd/coordinator and cmd/broker that sets it, then by its field.
func (o *Options) Validate() error {
	var errs []error
	if o.Dir == "" && o.FS == nil {
		errs = append(errs, errors.New("coordinator: --data-dir (Options.Dir) is required"))
	}
	if o.DefaultPartitions < 0 || o.DefaultPartitions > maxPartitions {
		errs = append(errs, fmt.Errorf("coordinator: --num-partitions (Options.DefaultPartitions) %d out of range 1..%d", o.DefaultPartitions, maxPartitions))
	}
	if o.BrokerTTL < 0 {
		errs = append(errs, fmt.Errorf("coordinator: --broker-ttl (Options.BrokerTTL) %s is negative", o.BrokerTTL))
	}
	if o.GCGrace < 0 {
		errs = append(errs, fmt.Errorf("coordinator: --gc-grace (Options.GCGrace) %s is negative", o.GCGrace))
	}
	if o.WALRetention < 0 {
		errs = append(errs, fmt.Errorf("coordinator: --wal-retention (Options.WALRetention) %s is negative", o.WALRetention))
	}
	if o.TierJobLease < 0 {
		errs = append(errs, fmt.Errorf("coordinator: --tier-job-lease (Options.TierJobLease) %s is negative", o.TierJobLease))
	}
	if o.Shards < 0 || o.Shard < 0 || o.Shard >= max(o.Shards, 1) {
		errs = append(errs, fmt.Errorf("coordinator: --shard (Options.Shard) %d is not a shard of --shards (Options.Shards) %d", o.Shard, o.Shards))
	}
	if o.Shards > 1 && o.GCStore != nil && (o.Shard != 0 || len(o.ObjectPeers) != o.Shards-1) {
		// A collector that knows one shard's objects deletes the others'.
		errs = append(errs, fmt.Errorf("coordinator: with %d shards only shard 0 collects garbage (Options.GCStore), asking the %d others (Options.ObjectPeers); shard %d has %d peers",
			o.Shards, o.Shards-1, o.Shard, len(o.ObjectPeers)))
	}
	if o.MaxObjectAge > 0 && o.GCGrace > 0 && o.MaxObjectAge > o.GCGrace {
		// An object that old may have been collected already.
		errs = append(errs, fmt.Errorf("coordinator: --max-object-age (Options.MaxObjectAge) %s is above --gc-grace (Options.GCGrace) %s", o.MaxObjectAge, o.GCGrace))
	}
	if o.WALRetentionBytes < -1 {
		errs = append(errs, fmt.Errorf("coordinator: --wal-retention-bytes (Options.WALRetentionBytes) %d is below -1", o.WALRetentionBytes))
	}
	return errors.Join(errs...)
}

// Coordinator is the batch coordinator: it owns topics, partition offsets,
// the coordinates of every committed batch, the objects they live in and
// the idempotent producers' state. Its state is in Pebble, every mutation
// written with pebble.Sync; the hot part (topics, partition offsets,
// producer state, objects) is also kept in memory so that CommitObject does
// no Pebble reads.
//
// Locks, in the order they may be taken (see the package doc): closeMu,
// commit, mu; pids, subs, brokers and dur are taken alone.
type Coordinator struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time
	db   *pebble.DB
	kv   *kvindex.Index
	// dur is which partitions' offsets the log has made durable (package
	// durable); its own lock, taken alone.
	dur durable.Tracker[partKey]
	// unsettled counts the writes other than commits (write, Log.Commit)
	// that the log does not have yet: while there are none, an answer
	// within the durable high watermarks depends on nothing the log lacks
	// (FindBatchesSettled).
	unsettled atomic.Int64
	// rebuilds are the running key index builds by topic; c.commit guards.
	rebuilds map[coordapi.TopicID]rebuild
	// postings is the per-key posting index of hierarchical topics;
	// postingRebuilds its running builds from the log, c.commit guards.
	postings        *kvindex.Postings
	postingRebuilds map[coordapi.TopicID]rebuild
	// indexEpoch counts the changes that drop a topic's key index or
	// postings (a rebuild, turning one off, deleting the topic), each
	// counted before its commit, and the ends of their builds. So a reader that checks a topic's index
	// ready, reads it outside the locks, and finds the count unchanged
	// after the read knows that no entry it read came from a dropped or
	// half-built index.
	indexEpoch atomic.Uint64
	// sweeps is when the tier loop last swept each partition's postings.
	sweeps postingSweeps
	// stopGC stops the garbage collector started by Open, if any; stopTier
	// the tier loop.
	stopGC   func()
	stopTier func()
	// gc is the garbage collector of this state (package collect).
	gc *collect.Collector
	// inline is the flusher of inline objects, nil without
	// Options.Inline.
	inline *inline.Flusher
	// tier is the tier planner's memory (package tierplan): its jobs, its
	// queue and its counters.
	tier *tierplan.Registry[partKey]
	// loadedFormat is the state format Open found (formatVersion for a
	// new database); load migrates older ones.
	loadedFormat uint64

	// closeMu is held for reading by every public method for as long as it
	// uses db, and for writing by Close.
	closeMu sync.RWMutex
	closed  bool // guarded by closeMu

	// commit serializes every mutation of coordinator state (commits, topic
	// admin, DeleteRecords). Its holder builds one Pebble batch, commits it
	// with Sync, and only then installs the result in memory, so that a failed
	// write leaves memory unchanged.
	// users are the SCRAM users (package users), in family 'u'; acls the
	// ACL bindings (package acls), in family 'a'.
	users *users.Store
	acls  *acls.Store
	// tables is the Iceberg catalog (package tables), in family 'l'.
	tables *tables.Catalog
	// txn is the transaction coordinator (package txn), which keeps its
	// rows in db; markers is where its markers go, under markerPrefix.
	txn          *txn.Coordinator
	markers      MarkerStore
	markerPrefix string
	// stopTxn stops the transaction timeout loop.
	stopTxn func()
	// stopFollow stops the follows of TopicOwner's topics (package follow).
	stopFollow func()
	// layoutShards is the shard count the stored state serves by at
	// Open (checkShardLayout); growTo, on shard 0, the count it grows
	// the cluster to (0: none); stopGrow stops that growth.
	layoutShards, growTo int
	stopGrow             func()

	commit struct {
		sync.Mutex
		// closing is set by Close: no index build starts after it.
		closing bool
		// producers is the idempotence state per (producer, topic, partition).
		producers map[producerStateKey]*producerState
		// nextObject is the number the next new object gets.
		nextObject uint64
		// logs are what partitions appended since their checkpoints
		// (checkpoint.go); a partition with none has no entry.
		logs map[partKey]*partLog
		// scratch is memory commits reuse.
		scratch commitScratch
		// txnViews are the transactional producers' epochs and ongoing
		// transactions, by producer id; openTxns the first offset of
		// each open transaction in each partition, by producer id
		// (txn.go), written with mu held too, so readable under mu.
		txnViews map[int64]*txnView
		// markers is, on a shard following shard 0's transactions
		// (Options.TxnOwner), the generation (markerGen) of each producer
		// id's last marker committed while a view was being fetched: a
		// view fetched across one is stale (followTxnViews). It is
		// emptied whenever no fetch is in flight (fetching), so it holds
		// only the producers of the markers of the last moments.
		markers   map[int64]uint64
		markerGen uint64
		fetching  int
		openTxns  map[partKey]map[int64]int64
		// txnKeys are transactional batches' keys held for the key index
		// until their transactions end, by partition and producer id.
		txnKeys map[partKey]map[int64][]kvApply
	}

	// mu guards the in-memory state that readers (FindBatches, Topic,
	// PartitionState...) share with mutators. Its fields change only with
	// both commit and mu held, so a commit holder may read them without mu.
	mu struct {
		sync.RWMutex
		topicsByName map[string]*topicState
		topicsByID   map[coordapi.TopicID]*topicState
		objects      map[uint64]*objectState
		objectsByKey map[string]uint64
		// aborted are each partition's aborted transactions, by marker
		// offset (txn.go).
		aborted map[partKey][]coordapi.AbortedTxn
	}

	// place is which partitions are this shard's: the shard count and the
	// partitions moving between shards (handover.go); written with
	// c.commit held, read by anyone.
	place atomic.Pointer[placement]

	// follower follows an owner's topics into this coordinator's (package
	// follow); its follows are serialized by a lock of its own.
	follower *follow.Follower

	// pids allocates producer ids and bumps their epochs (InitProducerID).
	pids struct {
		sync.Mutex
		next int64
		// expiredMs is when TxnTick last expired producer states, on the
		// coordinator's clock (0: not yet).
		expiredMs int64
	}

	subs struct {
		sync.Mutex
		next   int
		fns    map[int]func([]coordapi.CommitNotice)
		topics map[int]func([]coordapi.TopicNotice)
	}

	// brokers is the broker registry (package brokers), in memory only.
	brokers *brokers.Registry

	// testBeforeCommit, when set, runs before each Pebble commit of
	// CommitObject and fails it by returning an error (tests only).
	testBeforeCommit func() error
	// testBeforeKvLookups and testAfterKvLookups, when set, run in
	// KvLatestOffsets after its ready check, before the lookups, and after
	// them, before the check that the index did not change meanwhile
	// (tests only: the interleavings a race would have to reach).
	testBeforeKvLookups, testAfterKvLookups func()
}

var _ coordapi.Coordinator = (*Coordinator)(nil)

// topicState is a topic in memory. configs and parts are read under mu (or
// by the commit holder); parts[i] is updated in place under mu, configs is
// replaced as a whole.
type topicState struct {
	id            coordapi.TopicID
	name          string
	createdMs     int64
	configs       map[string]string
	logAppendTime bool
	// kvIndexed is kv.index.enabled: commits feed the key index.
	kvIndexed bool
	// kvRebuilding is set while the topic's key index is being built from
	// the log (kvindex.Index.Ready is false), so that lookups answer
	// "not ready" without reading the marker from Pebble. It is set before
	// the commit that drops the index for a rebuild and cleared after the
	// rebuild's own commit marks the index ready: in between, lookups see
	// not ready, never a half-built index.
	kvRebuilding bool
	// hierarchical is hierarchical.enabled: commits feed the posting
	// index. postingsRebuilding is set while its postings are built from
	// the log (kvindex.Postings.Ready is false), as kvRebuilding is.
	hierarchical       bool
	postingsRebuilding bool
	parts              []partState
}

// partState is a partition's offsets, plus what ListOffsets(TimestampMax)
// answers, kept current so that no batch scan is needed.
type partState struct {
	logStart int64
	hwm      int64
	// maxTimestamp is the largest batch max timestamp among live batches
	// (-1 when none); maxTimestampOffset is the offset ListOffsets answers for
	// it and maxTimestampLast the last offset of the batch that holds it.
	maxTimestamp       int64
	maxTimestampOffset int64
	maxTimestampLast   int64
	// walStart is the tier boundary: offsets below it are in segments (or
	// deleted), offsets from it on in WAL objects.
	walStart int64
	// bytes is the summed length of the partition's rows: every WAL batch
	// and every segment's data, including a row the log start cuts into;
	// segBytes and segments are the segments' part of it.
	bytes    int64
	segBytes int64
	segments int64
	// metaBytes is the encoded size (keys and values) of the partition's
	// rows in the batch family: what its coordinates cost the coordinator.
	metaBytes int64
	// cleanOffset is the cleaner checkpoint of a compacted topic's
	// partition: the records below it were cleaned at least once (Kafka's
	// cleaner-offset-checkpoint). horizonMs is the earliest delete horizon
	// of a tombstone the last pass kept (-1: none), when the next pass is
	// due to drop it; cleanedMs when the last pass completed (-1: never).
	cleanOffset, horizonMs, cleanedMs int64
	// gen counts the changes to the partition's rows below its high
	// watermark (DeleteRecords, retention, consolidation), so that a job
	// planned before one is refused; in memory only.
	gen uint64
	// firstOpen, when hasOpen, is the first offset of the oldest open
	// transaction in the partition: its last stable offset (txn.go). In
	// memory only, rebuilt from the open-transaction rows at Open.
	firstOpen int64
	hasOpen   bool
	// firstTs is the effective timestamp of the partition's first row (its
	// max timestamp, else its object's creation time), as retention last
	// read it, while firstTsGen is gen+1 and firstTsStart logStart at the
	// time; 0: not read. The first row changes only with gen or logStart,
	// so retention.ms's pass skips the partition's scan while that row is
	// not expired. In memory only.
	firstTs      int64
	firstTsGen   uint64
	firstTsStart int64
}

func newPartState() partState {
	return partState{maxTimestamp: -1, maxTimestampOffset: -1, maxTimestampLast: -1, horizonMs: -1, cleanedMs: -1}
}

// encode is the partition's checkpoint: its persisted fields as its 'p'
// row's value.
func (p *partState) encode() []byte {
	return layout.EncodePartition(&layout.Partition{
		LogStart: p.logStart, HWM: p.hwm, MaxTimestamp: p.maxTimestamp,
		MaxTimestampOffset: p.maxTimestampOffset, MaxTimestampLast: p.maxTimestampLast,
		WALStart: p.walStart, Bytes: p.bytes, SegBytes: p.segBytes, Segments: p.segments, MetaBytes: p.metaBytes,
		CleanOffset: p.cleanOffset, HorizonMs: p.horizonMs, CleanedMs: p.cleanedMs,
	})
}

// partStateOf is the partition state a checkpoint holds.
func partStateOf(v layout.Partition) partState {
	return partState{
		logStart: v.LogStart, hwm: v.HWM, maxTimestamp: v.MaxTimestamp,
		maxTimestampOffset: v.MaxTimestampOffset, maxTimestampLast: v.MaxTimestampLast,
		walStart: v.WALStart, bytes: v.Bytes, segBytes: v.SegBytes, segments: v.Segments, metaBytes: v.MetaBytes,
		cleanOffset: v.CleanOffset, horizonMs: v.HorizonMs, cleanedMs: v.CleanedMs,
	}
}

// walBytes is the partition's bytes in the WAL tier.
func (p *partState) walBytes() int64 { return p.bytes - p.segBytes }

// pebbleCacheSize is Pebble's block cache: reads are FindBatches and
// ListOffsets scans of recent batches.
const pebbleCacheSize = 64 << 20

// pebbleMemTableSize is Pebble's memtable size. Commits write a few
// thousand keys each: a large memtable and generous L0 limits keep flushes
// and compactions from stalling them.
const pebbleMemTableSize = 64 << 20

// PebbleMemoryBytes is what the coordinator's Pebble holds in memory in the
// usual case: its block cache and two memtables (one filling while the
// other is flushed). Built with cgo, Pebble allocates them outside the Go
// heap, where the runtime's memory limit does not see them: an embedding
// process that sets one (the broker's --memory-limit) counts them itself.
const PebbleMemoryBytes = pebbleCacheSize + 2*pebbleMemTableSize

// maxPartitions bounds a topic's partition count, so that one request
// cannot make the coordinator allocate without limit.
const maxPartitions = 1 << 20

// Open opens (creating if needed) the coordinator state in opts.Dir and
// loads its hot part into memory.
func Open(opts Options) (*Coordinator, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Shard > 0 && opts.TopicOwner == nil {
		return nil, fmt.Errorf("coordinator: shard %d needs shard 0 to follow the topics of (Options.TopicOwner)", opts.Shard)
	}
	// Unset (zero) options take their defaults.
	opts.DefaultPartitions = cmp.Or(opts.DefaultPartitions, 1)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.BrokerTTL = cmp.Or(opts.BrokerTTL, defaultBrokerTTL)
	opts.GCGrace = cmp.Or(opts.GCGrace, defaultGCGrace)
	opts.WALRetention = cmp.Or(opts.WALRetention, tierplan.DefaultWALRetention)
	opts.WALRetentionBytes = cmp.Or(opts.WALRetentionBytes, -1)
	opts.TierInterval = cmp.Or(opts.TierInterval, tierplan.DefaultTierInterval)
	opts.TableInterval = cmp.Or(opts.TableInterval, tierplan.DefaultTableInterval)
	opts.TableMaintainInterval = cmp.Or(opts.TableMaintainInterval, tierplan.DefaultTableMaintainInterval)
	if opts.MaxObjectAge == 0 && (opts.GCStore != nil || opts.Shards > 1) {
		opts.MaxObjectAge = opts.GCGrace / 2
	}
	opts.TierJobLease = max(min(cmp.Or(opts.TierJobLease, tierplan.DefaultTierJobLease), opts.GCGrace/2), time.Millisecond)
	opts.ProducerIDExpiration = cmp.Or(opts.ProducerIDExpiration, DefaultProducerIDExpiration)
	opts.TransactionalIDExpiration = cmp.Or(opts.TransactionalIDExpiration, DefaultTransactionalIDExpiration)
	opts.ExpirationCheckInterval = cmp.Or(opts.ExpirationCheckInterval, DefaultExpirationCheckInterval)
	opts.FollowInterval = cmp.Or(opts.FollowInterval, defaultFollowInterval)
	c := &Coordinator{opts: opts, log: opts.Logger, now: opts.Now, markers: opts.Markers, markerPrefix: opts.GCPrefix}
	c.brokers = brokers.New(opts.BrokerTTL, opts.Now, opts.Logger)
	c.gc = collect.New(gcState{c}, opts.ObjectPeers, opts.GCGrace, opts.Now, opts.Logger)
	c.follower = follow.New(followCopy{c})
	c.tier = c.newTier()
	c.place.Store(&placement{shards: max(opts.Shards, 1)})
	cache := pebble.NewCache(pebbleCacheSize)
	defer cache.Unref()
	popts := &pebble.Options{
		Logger:                      pebblelog.New(opts.Logger, "coordinator"),
		Cache:                       cache,
		MemTableSize:                pebbleMemTableSize,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       2,
		L0StopWritesThreshold:       1000,
		LBaseMaxBytes:               256 << 20,
		MaxConcurrentCompactions:    func() int { return 2 },
	}
	if opts.FS != nil {
		popts.FS = opts.FS
	}
	db, err := pebble.Open(opts.Dir, popts)
	if err != nil {
		return nil, fmt.Errorf("coordinator: open pebble %s: %w", opts.Dir, err)
	}
	c.db = db
	c.kv = kvindex.New(db, layout.PrefixKV).WithCommit(c.write)
	c.rebuilds = make(map[coordapi.TopicID]rebuild)
	c.postings = kvindex.NewPostings(db, layout.PrefixPostings).WithCommit(c.write)
	c.postingRebuilds = make(map[coordapi.TopicID]rebuild)
	if err := c.load(); err != nil {
		_ = db.Close()
		return nil, err
	}
	// Before anything reads objects (the index rebuilds below included):
	// objects committed inline may be only in Pebble.
	if err := inline.FlushAtOpen(context.Background(), stagedRows{c}, opts.Inline, opts.Markers, c.log); err != nil {
		_ = db.Close()
		return nil, err
	}
	c.commit.Lock()
	for _, t := range c.mu.topicsByID {
		if t.kvIndexed && !c.kv.Ready(t.id) {
			t.kvRebuilding = true   // c is not shared yet
			c.startRebuildLocked(t) // interrupted by a restart: go on
		}
		if t.hierarchical && !c.postings.Ready(t.id) {
			t.postingsRebuilding = true
			c.startPostingsRebuildLocked(t)
		}
	}
	c.commit.Unlock()
	if opts.Inline != nil {
		c.inline = inline.Start(opts.Inline, stagedRows{c}, c.log)
	}
	if opts.GCStore != nil {
		c.stopGC = background(func(ctx context.Context) { c.RunGC(ctx, opts.GCStore, opts.GCPrefix, opts.GCInterval) })
	}
	opts.TxnCheckInterval = cmp.Or(opts.TxnCheckInterval, defaultTxnCheckInterval)
	if opts.TxnCheckInterval > 0 {
		c.stopTxn = background(func(ctx context.Context) { c.runTxns(ctx, opts.TxnCheckInterval) })
	}
	if opts.TopicOwner != nil {
		c.stopFollow = c.follower.Start(opts.TopicOwner, opts.FollowInterval, opts.Shard, c.log)
	}
	if opts.TierInterval > 0 {
		c.stopTier = background(c.runTier)
	}
	c.log.Info("coordinator opened", "dir", opts.Dir,
		"topics", len(c.mu.topicsByID), "objects", len(c.mu.objects),
		"producer_states", len(c.commit.producers), "next_producer_id", c.pids.next)
	if c.growTo > 0 {
		c.startGrowing() // last: it changes what the log line above reads
	}
	return c, nil
}

// Close closes the Pebble database after in-flight calls finish. Later
// calls return ErrClosed; closing twice is a no-op.
func (c *Coordinator) Close() error {
	if c.stopGC != nil {
		c.stopGC() // before closeMu: a collection in progress holds it
		c.stopGC = nil
	}
	if c.stopTier != nil {
		c.stopTier() // likewise
		c.stopTier = nil
	}
	if c.stopTxn != nil {
		c.stopTxn()
		c.stopTxn = nil
	}
	if c.stopFollow != nil {
		c.stopFollow() // before closeMu: a follow calls in
		c.stopFollow = nil
	}
	if c.stopGrow != nil {
		c.stopGrow() // likewise
		c.stopGrow = nil
	}
	// The index builds stop before closeMu too: a build calls FindBatches,
	// which waits for closeMu, and RebuildKVIndex waits for its build.
	if c.inline != nil {
		c.inline.BeginStop() // commits waiting for a flush slot give up
	}
	c.commit.Lock()
	c.commit.closing = true
	for id := range c.rebuilds {
		c.stopRebuildLocked(id)
	}
	for id := range c.postingRebuilds {
		c.stopPostingsRebuildLocked(id)
	}
	c.commit.Unlock()
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	// Once the last commit is in (it may have waited for a flush), and
	// before Pebble closes: the flusher writes to it.
	if c.inline != nil {
		c.inline.Stop()
	}
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("coordinator: close pebble: %w", err)
	}
	return nil
}

// background runs loop in its own goroutine until the returned stop is
// called: stop cancels loop's context and waits for loop to return.
func background(loop func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop(ctx)
	}()
	return func() { cancel(); <-done }
}

// enter starts a public call: it fails on a done context or a closed
// coordinator, else holds closeMu for reading until leave.
func (c *Coordinator) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.closeMu.RLock()
	if c.closed {
		c.closeMu.RUnlock()
		return coordapi.ErrClosed
	}
	return nil
}

func (c *Coordinator) leave() { c.closeMu.RUnlock() }

// load reads the whole hot state from Pebble. It runs before c is shared.
func (c *Coordinator) load() (err error) {
	c.mu.topicsByName = map[string]*topicState{}
	c.mu.topicsByID = map[coordapi.TopicID]*topicState{}
	c.mu.objects = map[uint64]*objectState{}
	c.mu.objectsByKey = map[string]uint64{}
	c.commit.producers = map[producerStateKey]*producerState{}
	c.commit.logs = map[partKey]*partLog{}
	c.commit.scratch.reset()

	if err := c.loadMeta(); err != nil {
		return err
	}
	if err := c.loadHandovers(); err != nil {
		return err
	}
	if c.users, err = users.Open(familyRows{c, layout.PrefixUser}, c.log); err != nil {
		return err
	}
	if c.tables, err = tables.New(familyRows{c, layout.PrefixTable}); err != nil {
		return err
	}
	defer func() {
		if err == nil {
			err = c.loadTxns()
		}
	}()
	partCounts := map[coordapi.TopicID]int{}
	err = c.scan(layout.PrefixTopic, func(k, v []byte) error {
		if len(k) != 17 {
			return fmt.Errorf("coordinator: bad topic key %x", k)
		}
		var id coordapi.TopicID
		copy(id[:], k[1:])
		v1, err := layout.DecodeTopic(v)
		if err != nil {
			return err
		}
		t, n := &topicState{id: id, name: v1.Name, createdMs: v1.CreatedMs, configs: v1.Configs}, v1.Partitions
		t.logAppendTime = coordapi.IsLogAppendTime(t.configs)
		t.kvIndexed = isKVIndexed(t.configs)
		t.hierarchical = isHierarchical(t.configs)
		t.parts = make([]partState, n)
		for i := range t.parts {
			t.parts[i] = newPartState()
		}
		partCounts[id] = n
		c.mu.topicsByID[id] = t
		c.mu.topicsByName[t.name] = t
		return nil
	})
	if err != nil {
		return err
	}
	err = c.scan(layout.PrefixTopicName, func(k, v []byte) error {
		name := string(k[1:])
		t := c.mu.topicsByName[name]
		if t == nil || len(v) != 16 || coordapi.TopicID(v) != t.id {
			return fmt.Errorf("coordinator: topic name %q points to %x, which is not its topic", name, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	seen := map[coordapi.TopicID]int{}
	var oldParts []partKey // checkpoints of the format 2 layout
	err = c.scan(layout.PrefixPartition, func(k, v []byte) error {
		if len(k) != 21 {
			return fmt.Errorf("coordinator: bad partition key %x", k)
		}
		var id coordapi.TopicID
		copy(id[:], k[1:17])
		p := int(int32(binary.BigEndian.Uint32(k[17:])))
		t := c.mu.topicsByID[id]
		if t == nil || p < 0 || p >= len(t.parts) {
			return fmt.Errorf("coordinator: partition %s/%d has no topic", id, p)
		}
		st, v1, err := layout.DecodePartition(v)
		if err != nil {
			return err
		}
		t.parts[p] = partStateOf(st)
		if v1 {
			oldParts = append(oldParts, partKey{id, int32(p)})
		}
		seen[id]++
		return nil
	})
	if err != nil {
		return err
	}
	for id, n := range partCounts {
		if seen[id] != n {
			return fmt.Errorf("coordinator: topic %s has %d partitions but %d partition records", id, n, seen[id])
		}
	}
	var maxObject uint64
	err = c.scan(layout.PrefixObject, func(k, v []byte) error {
		num, err := layout.DecodeObjectKey(k)
		if err != nil {
			return err
		}
		ov, err := layout.DecodeObject(v)
		if err != nil {
			return err
		}
		o := objectStateOf(num, ov)
		c.mu.objects[num] = o
		c.mu.objectsByKey[o.key] = num
		maxObject = max(maxObject, num+1)
		return nil
	})
	if err != nil {
		return err
	}
	c.commit.nextObject = max(c.commit.nextObject, maxObject)
	err = c.scan(layout.PrefixProducer, func(k, v []byte) error {
		pid, topic, partition, err := layout.DecodeProducerKey(k)
		if err != nil {
			return err
		}
		pv, err := layout.DecodeProducer(v)
		if err != nil {
			return err
		}
		c.commit.producers[producerStateKey{pid, topic, partition}] = &producerState{Producer: pv}
		return nil
	})
	if err != nil {
		return err
	}
	if c.acls, err = acls.Open(aclRows{c}, c.log); err != nil {
		return err
	}
	if err := c.replayRuns(); err != nil {
		return err
	}
	if len(oldParts) > 0 || c.loadedFormat < layout.FormatVersion {
		return c.migrateFormat2(oldParts)
	}
	return nil
}

// loadMeta checks the format version (writing it into a new database) and
// loads the counters.
func (c *Coordinator) loadMeta() error {
	v, closer, err := c.db.Get(layout.KeyFormatVersion)
	fresh := false
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if err := c.set(layout.KeyFormatVersion, layout.EncodeUint64(layout.FormatVersion)); err != nil {
			return fmt.Errorf("coordinator: write format version: %w", err)
		}
		c.loadedFormat, fresh = layout.FormatVersion, true
	case err != nil:
		return fmt.Errorf("coordinator: read format version: %w", err)
	default:
		ver, derr := layout.DecodeUint64("format version", v)
		_ = closer.Close()
		if derr != nil {
			return derr
		}
		c.loadedFormat = ver
		switch ver {
		case layout.FormatVersion, layout.FormatVersion2:
		case layout.FormatVersion1:
			if err := c.migrateFormat1(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("coordinator: state format %d, this build reads %d (and migrates %d and %d)", ver, layout.FormatVersion, layout.FormatVersion2, layout.FormatVersion1)
		}
	}
	read := func(key []byte, what string) (uint64, error) {
		v, closer, err := c.db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("coordinator: read %s: %w", what, err)
		}
		defer closer.Close()
		return layout.DecodeUint64(what, v)
	}
	next, err := read(layout.KeyNextProducerID, "next producer id")
	if err != nil {
		return err
	}
	c.pids.next = max(int64(next), firstProducerID)
	obj, err := read(layout.KeyNextObject, "next object")
	if err != nil {
		return err
	}
	c.commit.nextObject = obj
	return c.checkShardLayout(fresh, read)
}

// checkShardLayout records which shard of how many this state is, at its
// first open, and refuses to open it as another shard
// (handover.OpenLayout): it serves by the stored count (layoutShards),
// and shard 0 started with a larger --shards grows the cluster to it
// (growTo), through Options.GrowPeers.
func (c *Coordinator) checkShardLayout(fresh bool, read func(key []byte, what string) (uint64, error)) error {
	shards, err := read(layout.KeyShards, "shard count")
	if err != nil {
		return err
	}
	shard, err := read(layout.KeyShard, "shard")
	if err != nil {
		return err
	}
	l, lerr := handover.OpenLayout(handover.Opening{Shards: c.opts.Shards, Shard: c.opts.Shard, Stored: shards, StoredShard: shard,
		Fresh: fresh, OwnerShards: c.ownerShards, GrowPeers: len(c.opts.GrowPeers)})
	if l.Write {
		b := c.db.NewBatch()
		defer b.Close()
		_ = b.Set(layout.KeyShards, layout.EncodeUint64(l.Shards), nil)
		_ = b.Set(layout.KeyShard, layout.EncodeUint64(l.Shard), nil)
		if err := c.write(b, pebble.Sync); err != nil {
			return fmt.Errorf("coordinator: write the shard layout: %w", err)
		}
	}
	if lerr != nil {
		return lerr
	}
	c.layoutShards, c.growTo = int(l.Shards), l.GrowTo
	switch {
	case l.GrowTo > 0:
		c.log.Info("the cluster grows", "shards", l.Shards, "to", uint64(l.GrowTo))
	case l.Behind:
		c.log.Warn("--shards is not the count this state serves by: serving by the state's until shard 0 commits another (a growth)",
			"shard", l.Shard, "flag", uint64(max(c.opts.Shards, 1)), "state", l.Shards)
	}
	return nil
}

// ownerShards asks TopicOwner (shard 0) the count it serves by, if it
// answers ClusterInfo; ok is false when it cannot be asked.
func (c *Coordinator) ownerShards() (n int, ok bool) {
	return handover.AskShards(c.opts.TopicOwner, follow.Timeout, c.log)
}

// scan calls fn for every key of one family, in key order.
func (c *Coordinator) scan(prefix byte, fn func(k, v []byte) error) error {
	lower, upper := layout.FamilyBounds(prefix)
	return c.scanRange(lower, upper, fn)
}

// scanRange calls fn for every key in [lower, upper), in key order. k and v
// are only valid during the call.
func (c *Coordinator) scanRange(lower, upper []byte, fn func(k, v []byte) error) error {
	return keyspan.Scan(c.db, lower, upper, fn)
}
