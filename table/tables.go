package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/table/catalog"
)

// Snapshot summary properties floe writes (doc.go, "Snapshot summary").
const (
	// SummaryVersion is the summary property holding the version of floe's
	// summary properties: SummaryFormatVersion.
	SummaryVersion = "floe.summary-version"
	// SummaryFormatVersion is the version this package writes and reads.
	SummaryFormatVersion = "1"
	// SummaryNextOffsetPrefix starts the summary property of each
	// partition the table has rows or coverage for:
	// "floe.next-offset.<partition>" = the partition's covered end, the
	// offset after the last one the table (as of this snapshot) holds
	// every committed record below.
	SummaryNextOffsetPrefix = "floe.next-offset."
)

// Table properties floe sets.
const (
	// PropValueSchema holds the JSON Schema the typed value columns come
	// from (Spec.ValueSchema).
	PropValueSchema = "floe.value-schema.definition"
	// PropTopicID holds the id of the topic the table is of
	// (Spec.TopicID): a table belongs to a topic id, not a name.
	PropTopicID = "floe.topic-id"
	// PropCompacted is "true" on the table of a compacted topic
	// (Spec.Compacted): each commit keeps one row per (partition, key),
	// the latest, by a copy-on-write overwrite (compacted.go).
	PropCompacted = "floe.compacted"
)

// defaultCommitAttempts is how many times Commit tries when other
// commits to the same table win the race.
const defaultCommitAttempts = 8

// Options configure Tables.
type Options struct {
	// Catalog holds the tables' metadata pointers. Required unless
	// External is set.
	Catalog Catalog
	// External, when set, is an external Iceberg catalog (RESTCatalog)
	// that Tables creates the tables in and commits to instead of Catalog:
	// the catalog writes the metadata files, floe the data files and
	// manifests under Root. Exactly-once still comes from the snapshot
	// summary. Catalog, if set too, is then only read: a table the
	// external catalog lacks but Catalog has is registered from its
	// metadata file rather than created empty. Default: nil, Catalog.
	External ExternalCatalog
	// Store is where every table file goes. Required.
	Store objectstore.Store
	// Root is the URI of Store's empty key: "s3://<bucket>" or
	// "file://<dir>" (FileIO). Required.
	Root string
	// Prefix is the key prefix under which tables live: a table's
	// location is <Root>/<Prefix>/<namespace levels>/<name>. Default:
	// "tables".
	Prefix string
	// CommitAttempts bounds Commit's tries against concurrent commits.
	// Default: 8.
	CommitAttempts int
	// Meter makes the writer's metrics (floe.table.*). Default: nil, no
	// metrics.
	Meter metric.Meter
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Catalog == nil && o.External == nil {
		errs = append(errs, errors.New("table: Catalog or External is required"))
	}
	if o.Store == nil {
		errs = append(errs, errors.New("table: Store is required"))
	}
	if o.Root == "" {
		errs = append(errs, errors.New("table: Root is required"))
	}
	if o.CommitAttempts < 0 {
		errs = append(errs, fmt.Errorf("table: CommitAttempts %d is negative", o.CommitAttempts))
	}
	return errors.Join(errs...)
}

// Tables writes topics' records to Iceberg tables: Parquet data files
// through iceberg-go's writer, snapshots committed by a compare-and-swap
// of the table's metadata pointer in a Catalog. Safe for concurrent use;
// commits to one table serialize through the catalog.
type Tables struct {
	opts    Options
	metrics *tableMetrics
}

// New returns Tables for opts.
func New(opts Options) (*Tables, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Prefix == "" {
		opts.Prefix = "tables"
	}
	if opts.CommitAttempts == 0 {
		opts.CommitAttempts = defaultCommitAttempts
	}
	opts.Root = strings.TrimSuffix(opts.Root, "/")
	return &Tables{opts: opts, metrics: newTableMetrics(opts.Meter)}, nil
}

// Location returns the location (URI) of the files of table id created
// for topic id topicID ("" for none): <Root>/<Prefix>/<namespace
// levels>/<name>[-<topicID>]. With the topic id, a topic deleted and
// created again under its name gets a table whose files never share a
// prefix with the old table's, so neither's orphan collection can take
// the other's files.
func (t *Tables) Location(id Ident, topicID string) string {
	name := id.Name
	if topicID != "" {
		name += "-" + topicID
	}
	return strings.Join(append([]string{t.opts.Root, strings.Trim(t.opts.Prefix, "/")}, append(slices.Clone(id.Namespace), name)...), "/")
}

// Spec describes a table to create.
type Spec struct {
	// Partitioning is the table.partitioning value (ParsePartitioning).
	// Default: "day(timestamp)".
	Partitioning string
	// ValueSchema is a JSON Schema (table.value.schema=json, its
	// table.value.schema.definition): the value's properties become typed
	// columns, and _error says why a value gave none (ValueSchema).
	// Default: "", no typed columns.
	ValueSchema string
	// TopicID is the id of the topic the table is of (hex), kept as the
	// table property PropTopicID and in its location (Location). Default:
	// "", none (tests).
	TopicID string
	// Compacted makes the table one of the latest value per key, for a
	// topic whose cleanup.policy includes compact (PropCompacted,
	// compacted.go). Default: false, every record a row.
	Compacted bool
	// Properties are extra Iceberg table properties.
	Properties map[string]string
}

// Create creates table id with the always-present columns, unless it
// exists. It reports whether it created it.
func (t *Tables) Create(ctx context.Context, id Ident, spec Spec) (bool, error) {
	if err := id.Validate(); err != nil {
		return false, err
	}
	if t.opts.External != nil {
		_, err := t.Load(ctx, id)
		if err == nil {
			return false, nil
		} else if !errors.Is(err, catalog.ErrNoSuchTable) {
			return false, fmt.Errorf("create %s: %w", id, err)
		}
	} else if _, err := t.opts.Catalog.Load(ctx, id); err == nil {
		return false, nil
	} else if !errors.Is(err, catalog.ErrNoSuchTable) {
		return false, fmt.Errorf("create %s: %w", id, err)
	}
	sc := Schema()
	if spec.ValueSchema != "" {
		var err error
		if sc, err = ValueSchema(spec.ValueSchema); err != nil {
			return false, err
		}
	}
	ps, err := ParsePartitioning(spec.Partitioning, sc)
	if err != nil {
		return false, err
	}
	props := iceberg.Properties{
		itable.PropertyFormatVersion: "2",
		"floe.table-version":         "1",
	}
	if spec.ValueSchema != "" {
		props[PropValueSchema] = spec.ValueSchema
	}
	if spec.TopicID != "" {
		props[PropTopicID] = spec.TopicID
	}
	if spec.Compacted {
		props[PropCompacted] = "true"
	}
	maps.Copy(props, spec.Properties)
	loc := t.Location(id, spec.TopicID)
	if t.opts.External != nil {
		created, err := t.createExternal(ctx, id, sc, ps, loc, props)
		if err != nil {
			return false, fmt.Errorf("create %s in the external catalog: %w", id, err)
		}
		return created, nil
	}
	meta, err := itable.NewMetadata(sc, &ps, itable.UnsortedSortOrder, loc, props)
	if err != nil {
		return false, fmt.Errorf("create %s: metadata: %w", id, err)
	}
	fio := NewFileIO(ctx, t.opts.Store, t.opts.Root)
	mloc, err := writeMetadata(fio, meta, 0)
	if err != nil {
		return false, fmt.Errorf("create %s: %w", id, err)
	}
	if err := t.opts.Catalog.Swap(ctx, id, "", mloc); err != nil {
		_ = fio.Remove(mloc)
		if errors.Is(err, catalog.ErrConflict) {
			return false, nil // created meanwhile by someone else
		}
		return false, fmt.Errorf("create %s: %w", id, err)
	}
	return true, nil
}

// Load returns table id as iceberg-go sees it, for scans.
func (t *Tables) Load(ctx context.Context, id Ident) (*itable.Table, error) {
	return t.catalogIO(ctx).LoadTable(ctx, itable.Identifier(append(slices.Clone(id.Namespace), id.Name)))
}

// Covered returns each partition's covered end offset as of the table's
// current snapshot (SummaryNextOffsetPrefix); a partition with no
// commit yet is absent.
func (t *Tables) Covered(ctx context.Context, id Ident) (map[int32]int64, error) {
	tbl, err := t.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return coveredOffsets(tbl.CurrentSnapshot())
}

// Range is one partition's records over an offset range, the unit a table
// job commits.
type Range struct {
	// Partition is the topic partition.
	Partition int32
	// From and To bound the offsets the range covers, [From, To): every
	// committed record of the partition in it is in Records, in offset
	// order. Offsets in it without a record (transaction markers, aborted
	// or compacted-away records) are covered too.
	From, To int64
	// Records are the range's committed records.
	Records []Record
}

// Result is what Commit did.
type Result struct {
	// Skipped is true when the table already covered every range: no
	// snapshot was made.
	Skipped bool
	// Rows is how many rows the new snapshot added (records below a
	// partition's covered offset are not added again).
	Rows int
	// Ranges says, per range in the order given, how many rows it added
	// and whether the table already covered it.
	Ranges []RangeResult
	// SnapshotID is the new snapshot's id, or the current one's when
	// Skipped.
	SnapshotID int64
	// Attempts is how many commits were tried (more than one after losing
	// races to other commits).
	Attempts int
	// Write is the time spent writing data files (Parquet, compressed,
	// uploaded; a compacted table's rewrite reads included), Swap the time
	// spent writing the snapshot's metadata and committing it to the
	// catalog, both summed over the attempts.
	Write, Swap time.Duration
}

// RangeResult is what Commit did with one range.
type RangeResult struct {
	// Partition is the range's partition.
	Partition int32
	// Rows is how many of its records the snapshot added.
	Rows int
	// Skipped is true when the table already covered the range.
	Skipped bool
}

// Commit adds the ranges' records to table id as one snapshot whose
// summary moves each range's partition's covered offset to its To,
// exactly once: a range the current snapshot covers is skipped, records
// below a covered offset are dropped, and a range starting after its
// partition's covered offset fails the commit with ErrOffsetGap. The
// ranges must be of distinct partitions; a table job commits all of its
// partitions in one snapshot. A lost race reloads the table and tries
// again; the data files of a lost attempt are deleted (a crash leaves
// them to CollectOrphans).
func (t *Tables) Commit(ctx context.Context, id Ident, ranges ...Range) (Result, error) {
	if len(ranges) == 0 {
		return Result{}, fmt.Errorf("commit %s: no range", id)
	}
	seen := make(map[int32]bool, len(ranges))
	for _, r := range ranges {
		if seen[r.Partition] {
			return Result{}, fmt.Errorf("commit %s: partition %d given twice", id, r.Partition)
		}
		seen[r.Partition] = true
		if r.To < r.From {
			return Result{}, fmt.Errorf("commit %s partition %d: range [%d, %d) is inverted", id, r.Partition, r.From, r.To)
		}
		for i, rec := range r.Records {
			if rec.Partition != r.Partition || rec.Offset < r.From || rec.Offset >= r.To ||
				(i > 0 && rec.Offset <= r.Records[i-1].Offset) {
				return Result{}, fmt.Errorf("commit %s partition %d: record %d (partition %d offset %d) out of range [%d, %d) or order",
					id, r.Partition, i, rec.Partition, rec.Offset, r.From, r.To)
			}
		}
	}
	start := time.Now()
	cio := t.catalogIO(ctx)
	var res Result
	var kept *writtenFiles // data files of a lost attempt, for the next
	for res.Attempts < t.opts.CommitAttempts {
		res.Attempts++
		dataBytes, err := t.commitOnce(ctx, cio, id, ranges, &res, &kept)
		if err == nil {
			result := resultCommitted
			if res.Skipped {
				result = resultSkipped
			}
			t.metrics.done(ctx, id, result, start, res.Rows, dataBytes)
			return res, nil
		}
		if !errors.Is(err, itable.ErrCommitFailed) {
			// kept's files may be referenced (an outcome unknown):
			// left to orphan collection.
			t.metrics.done(ctx, id, resultError, start, 0, 0)
			return res, fmt.Errorf("commit %s: %w", id, err)
		}
		t.metrics.attempt(ctx, id, resultConflict)
		if ctx.Err() != nil {
			kept.remove()
			t.metrics.done(ctx, id, resultError, start, 0, 0)
			return res, fmt.Errorf("commit %s: %w", id, context.Cause(ctx))
		}
	}
	kept.remove() // every attempt lost: nothing points at them
	t.metrics.done(ctx, id, resultError, start, 0, 0)
	return res, fmt.Errorf("commit %s: %d attempts lost to concurrent commits: %w", id, res.Attempts, catalog.ErrConflict)
}

// writtenFiles are the data files an attempt of an append wrote, kept
// after it lost the race for the pointer: the next attempt adds the same
// files when it would write the same rows (key) with the same schema and
// partition spec, so that a lost race re-does only the metadata (the
// manifests, the manifest list, the metadata file), not the Parquet.
type writtenFiles struct {
	key   string
	files []iceberg.DataFile
	tio   *trackingIO
	bytes int64
}

// remove deletes the files (nil: nothing to do).
func (w *writtenFiles) remove() {
	if w != nil {
		w.tio.removeCreated()
	}
}

// appendKey names what an append attempt writes: the table's schema and
// partition spec, the value schema's required properties, and each moved
// range's partition and first record. Two attempts of one Commit with the
// same key write the same data files.
func appendKey(tbl *itable.Table, moved [][2]int, required []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "schema %d spec %d required %q", tbl.Schema().ID, tbl.Metadata().DefaultPartitionSpec(), required)
	for _, m := range moved {
		fmt.Fprintf(&b, " %d@%d", m[0], m[1])
	}
	return b.String()
}

// commitOnce makes one attempt; it returns the bytes of the data files it
// committed. An append whose swap is lost leaves its data files in *kept
// for the next attempt (appendKey).
func (t *Tables) commitOnce(ctx context.Context, cio *catalogIO, id Ident, ranges []Range, res *Result, kept **writtenFiles) (int64, error) {
	tbl, err := cio.LoadTable(ctx, itable.Identifier(append(slices.Clone(id.Namespace), id.Name)))
	if err != nil {
		return 0, err
	}
	cur := tbl.CurrentSnapshot()
	covered, err := coveredOffsets(cur)
	if err != nil {
		return 0, err
	}
	res.Ranges = res.Ranges[:0]
	res.Rows = 0
	var recs []Record
	moved := false
	var movedAt [][2]int // each moved range's partition and first record
	for _, r := range ranges {
		rr := RangeResult{Partition: r.Partition}
		prs := r.Records
		if next, ok := covered[r.Partition]; ok {
			if r.To <= next {
				rr.Skipped = true
				res.Ranges = append(res.Ranges, rr)
				continue
			}
			if r.From > next {
				return 0, fmt.Errorf("partition %d range [%d, %d), covered to %d: %w", r.Partition, r.From, r.To, next, ErrOffsetGap)
			}
			i, _ := slices.BinarySearchFunc(prs, next, func(rec Record, o int64) int { return cmpInt64(rec.Offset, o) })
			prs = prs[i:]
		}
		movedAt = append(movedAt, [2]int{int(r.Partition), len(r.Records) - len(prs)})
		covered[r.Partition] = r.To
		moved = true
		rr.Rows = len(prs)
		res.Rows += len(prs)
		res.Ranges = append(res.Ranges, rr)
		recs = append(recs, prs...)
	}
	if !moved {
		(*kept).remove() // a concurrent commit took these ranges
		*kept = nil
		res.Skipped = true
		if cur != nil {
			res.SnapshotID = cur.SnapshotID
		}
		return 0, nil
	}
	props := summaryProps(covered)
	var changes keyChanges // a compacted table's (compacted.go)
	if tbl.Properties()[PropCompacted] == "true" {
		recs, changes = latestPerKey(recs)
		res.Rows = len(recs)
	}

	required := requiredProps(tbl.Properties()[PropValueSchema])
	if changes == nil {
		return t.appendOnce(ctx, cio, tbl, recs, props, required, appendKey(tbl, movedAt, required), res, kept)
	}
	(*kept).remove()
	*kept = nil

	// The attempt's files are written through a tracking IO, so that a
	// lost race deletes them instead of leaving orphans.
	tio := &trackingIO{FileIO: NewFileIO(ctx, t.opts.Store, t.opts.Root)}
	wtbl := itable.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return tio, nil }, cio)
	txn := wtbl.NewTransaction()
	start := time.Now()
	if err := writeRecords(ctx, wtbl, txn, recs, changes, props, required); err != nil {
		tio.removeCreated()
		return 0, err
	}
	res.Write += time.Since(start)
	defer func(start time.Time) { res.Swap += time.Since(start) }(time.Now())
	ntbl, err := txn.Commit(ctx)
	if err != nil {
		if errors.Is(err, itable.ErrCommitFailed) {
			tio.removeCreated() // nothing points at them
		}
		return 0, fmt.Errorf("commit: %w", err)
	}
	res.Skipped = false
	res.SnapshotID = ntbl.CurrentSnapshot().SnapshotID
	return tio.dataBytes(), nil
}

// appendOnce is commitOnce's append: it writes recs' data files (or
// takes those of the attempt before, when key says they hold the same
// rows), then commits them in one append snapshot with props as its
// summary. On a lost race the data files stay in *kept and only the
// attempt's metadata files are deleted.
func (t *Tables) appendOnce(ctx context.Context, cio *catalogIO, tbl *itable.Table, recs []Record, props iceberg.Properties, required []string, key string, res *Result, kept **writtenFiles) (int64, error) {
	w := *kept
	if w != nil && w.key != key {
		w.remove() // other rows, or another schema or spec: written again
		w = nil
	}
	*kept = nil
	if w == nil {
		start := time.Now()
		var err error
		w, err = t.writeFiles(ctx, cio, tbl, recs, required, key)
		res.Write += time.Since(start)
		if err != nil {
			return 0, err
		}
	}
	defer func(start time.Time) { res.Swap += time.Since(start) }(time.Now())
	// The snapshot's manifests, manifest list and metadata file go
	// through a tracking IO of their own: a lost race deletes them.
	mio := &trackingIO{FileIO: NewFileIO(ctx, t.opts.Store, t.opts.Root)}
	wtbl := itable.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return mio, nil }, cio)
	txn := wtbl.NewTransaction()
	if len(w.files) == 0 {
		// No row (a range of markers or aborted records): a snapshot
		// that moves the covered offsets all the same.
		rdr, err := newRecordReader(tbl.Schema(), nil, required)
		if err != nil {
			return 0, err
		}
		err = txn.Append(ctx, rdr, props)
		rdr.Release()
		if err != nil {
			mio.removeCreated()
			return 0, fmt.Errorf("append: %w", err)
		}
	} else if err := txn.AddDataFiles(ctx, w.files, props, itable.WithoutAutoNameMapping(), itable.WithoutDuplicateCheck()); err != nil {
		mio.removeCreated()
		w.remove()
		return 0, fmt.Errorf("append: %w", err)
	}
	ntbl, err := txn.Commit(ctx)
	if err != nil {
		if errors.Is(err, itable.ErrCommitFailed) {
			mio.removeCreated() // nothing points at them
			*kept = w
		}
		return 0, fmt.Errorf("commit: %w", err)
	}
	res.Skipped = false
	res.SnapshotID = ntbl.CurrentSnapshot().SnapshotID
	return w.bytes, nil
}

// writeFiles writes recs as data files of tbl, unreferenced.
func (t *Tables) writeFiles(ctx context.Context, cio *catalogIO, tbl *itable.Table, recs []Record, required []string, key string) (*writtenFiles, error) {
	w := &writtenFiles{key: key, tio: &trackingIO{FileIO: NewFileIO(ctx, t.opts.Store, t.opts.Root)}}
	wtbl := itable.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return w.tio, nil }, cio)
	rdr, err := newRecordReader(tbl.Schema(), recs, required)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	batches := func(yield func(arrow.RecordBatch, error) bool) {
		for rdr.Next() {
			b := rdr.RecordBatch()
			b.Retain() // WriteRecords releases what it consumes
			if !yield(b, nil) {
				return
			}
		}
		if err := rdr.Err(); err != nil {
			yield(nil, err)
		}
	}
	for df, err := range itable.WriteRecords(ctx, wtbl, rdr.Schema(), batches) {
		if err != nil {
			w.remove()
			return nil, fmt.Errorf("append: %w", err)
		}
		w.files = append(w.files, df)
	}
	w.bytes = w.tio.dataBytes()
	return w, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// coveredOffsets reads the per-partition covered offsets of snap's
// summary (none for a nil snapshot: an empty table).
func coveredOffsets(snap *itable.Snapshot) (map[int32]int64, error) {
	out := make(map[int32]int64)
	if snap == nil || snap.Summary == nil {
		return out, nil
	}
	props := snap.Summary.Properties
	if v, ok := props[SummaryVersion]; ok && v != SummaryFormatVersion {
		return nil, fmt.Errorf("table: snapshot %d has floe summary version %q; this build reads %q",
			snap.SnapshotID, v, SummaryFormatVersion)
	}
	for k, v := range props {
		ps, ok := strings.CutPrefix(k, SummaryNextOffsetPrefix)
		if !ok {
			continue
		}
		p, err := strconv.ParseInt(ps, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("table: snapshot %d summary %q: bad partition: %w", snap.SnapshotID, k, err)
		}
		o, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("table: snapshot %d summary %q: bad offset: %w", snap.SnapshotID, k, err)
		}
		out[int32(p)] = o
	}
	return out, nil
}

// trackingIO remembers the files it created, to delete them after a lost
// commit.
type trackingIO struct {
	*FileIO
	mu      sync.Mutex
	created []string
	writers []*storeWriter // of data files, for their sizes
}

// dataBytes is the size of the Parquet data files written.
func (t *trackingIO) dataBytes() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var n int64
	for _, w := range t.writers {
		n += w.n
	}
	return n
}

// Create implements iceberg-go's io.WriteFileIO.
func (t *trackingIO) Create(name string) (icebergio.FileWriter, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.created = append(t.created, name)
	w, err := t.FileIO.Create(name)
	if sw, ok := w.(*storeWriter); ok && err == nil && strings.HasSuffix(name, ".parquet") {
		t.writers = append(t.writers, sw)
	}
	return w, err
}

// WriteFile implements iceberg-go's io.WriteFileIO.
func (t *trackingIO) WriteFile(name string, p []byte) error {
	t.mu.Lock()
	t.created = append(t.created, name)
	t.mu.Unlock()
	return t.FileIO.WriteFile(name, p)
}

func (t *trackingIO) removeCreated() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range t.created {
		_ = t.FileIO.Remove(n) // best effort: orphan collection gets the rest
	}
	t.created = nil
}

// catalogIO is iceberg-go's table.CatalogIO over a Catalog: LoadTable
// reads the pointed-at metadata file, CommitTable checks the
// requirements, writes the next metadata file and swaps the pointer. Over
// an ExternalCatalog (ext) it passes both through (external.go); its
// tables read and write files with fio all the same.
type catalogIO struct {
	cat Catalog
	ext ExternalCatalog
	fio *FileIO
}

func (t *Tables) catalogIO(ctx context.Context) *catalogIO {
	return &catalogIO{cat: t.opts.Catalog, ext: t.opts.External, fio: NewFileIO(ctx, t.opts.Store, t.opts.Root)}
}

func identOf(ident itable.Identifier) Ident {
	if len(ident) == 0 {
		return Ident{}
	}
	return Ident{Namespace: slices.Clone(ident[:len(ident)-1]), Name: ident[len(ident)-1]}
}

func (c *catalogIO) fsF(context.Context) (icebergio.IO, error) { return c.fio, nil }

// LoadTable implements iceberg-go's table.CatalogIO.
func (c *catalogIO) LoadTable(ctx context.Context, ident itable.Identifier) (*itable.Table, error) {
	if c.ext != nil {
		tbl, err := c.ext.LoadTable(ctx, ident)
		if err != nil {
			return nil, noSuchTable(identOf(ident), err)
		}
		return itable.New(ident, tbl.Metadata(), tbl.MetadataLocation(), c.fsF, c), nil
	}
	loc, err := c.cat.Load(ctx, identOf(ident))
	if err != nil {
		return nil, err
	}
	tbl, err := itable.NewFromLocation(ctx, ident, loc, c.fsF, c)
	if err != nil {
		return nil, fmt.Errorf("load %s from %s: %w", identOf(ident), loc, err)
	}
	return tbl, nil
}

// CommitTable implements iceberg-go's table.CatalogIO. A requirement that
// no longer holds, or a pointer that moved, is itable.ErrCommitFailed.
func (c *catalogIO) CommitTable(ctx context.Context, ident itable.Identifier, reqs []itable.Requirement, updates []itable.Update) (itable.Metadata, string, error) {
	if c.ext != nil {
		// The catalog checks the requirements and writes the metadata
		// file; a 409 is already itable.ErrCommitFailed.
		return c.ext.CommitTable(ctx, ident, reqs, updates)
	}
	cur, err := c.LoadTable(ctx, ident)
	if err != nil {
		return nil, "", err
	}
	for _, r := range reqs {
		if err := r.Validate(cur.Metadata()); err != nil {
			return nil, "", fmt.Errorf("%w: %w", itable.ErrCommitFailed, err)
		}
	}
	next, err := itable.UpdateTableMetadata(cur.Metadata(), updates, cur.MetadataLocation())
	if err != nil {
		return nil, "", fmt.Errorf("update metadata: %w", err)
	}
	loc, err := writeMetadata(c.fio, next, metadataVersion(cur.MetadataLocation())+1)
	if err != nil {
		return nil, "", err
	}
	if err := c.cat.Swap(ctx, identOf(ident), cur.MetadataLocation(), loc); err != nil {
		_ = c.fio.Remove(loc)
		if errors.Is(err, catalog.ErrConflict) {
			return nil, "", fmt.Errorf("%w: %w", itable.ErrCommitFailed, err)
		}
		// The swap's outcome is unknown (a coordinator that died
		// mid-request): the file may be the table's current metadata.
		return nil, "", fmt.Errorf("swap %s: %w", identOf(ident), err)
	}
	return next, loc, nil
}

// metadataVersion is the version number a metadata file's name starts
// with ("00003-<uuid>.metadata.json"), or -1.
func metadataVersion(loc string) int {
	base := path.Base(loc)
	i := strings.IndexByte(base, '-')
	if i <= 0 {
		return -1
	}
	v, err := strconv.Atoi(base[:i])
	if err != nil {
		return -1
	}
	return v
}

// writeMetadata writes meta as the table's metadata file of version v and
// returns its location.
func writeMetadata(fio *FileIO, meta itable.Metadata, v int) (string, error) {
	lp, err := itable.LoadLocationProvider(meta.Location(), meta.Properties())
	if err != nil {
		return "", fmt.Errorf("location provider: %w", err)
	}
	loc, err := lp.NewTableMetadataFileLocation(v)
	if err != nil {
		return "", fmt.Errorf("metadata location: %w", err)
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return "", fmt.Errorf("encode metadata: %w", err)
	}
	if err := fio.WriteFile(loc, b); err != nil {
		return "", fmt.Errorf("write metadata: %w", err)
	}
	return loc, nil
}

// CollectOrphans deletes the files under table id's location that no
// metadata file of the table references (iceberg-go's DeleteOrphanFiles:
// the current metadata, its metadata log, manifest lists, manifests and
// data files) and that are older than olderThan: what a job that died
// between writing and committing left. olderThan must exceed the longest
// time a commit can take from its first write to its swap (the tier job
// lease), or an in-flight commit's files could go. It returns the deleted
// files' locations.
func (t *Tables) CollectOrphans(ctx context.Context, id Ident, olderThan time.Duration) ([]string, error) {
	tbl, err := t.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	res, err := tbl.DeleteOrphanFiles(ctx, itable.WithFilesOlderThan(olderThan))
	if err != nil {
		return res.DeletedFiles, fmt.Errorf("collect orphans of %s: %w", id, err)
	}
	return res.DeletedFiles, nil
}

// EvolveValueSchema moves table id's typed value columns to a new JSON
// Schema (a changed table.value.schema.definition): each top-level
// property the table has no column for is added as an optional column
// (Iceberg assigns its ids), so rows written before read null in it; the
// table property PropValueSchema takes the new definition. Columns are
// never removed or retyped (a property that disappears keeps its column,
// null from then on). It reports whether it added a column.
func (t *Tables) EvolveValueSchema(ctx context.Context, id Ident, definition string) (bool, error) {
	cols, err := ValueColumns(definition)
	if err != nil {
		return false, err
	}
	cio := t.catalogIO(ctx)
	for attempt := 0; attempt < t.opts.CommitAttempts; attempt++ {
		tbl, err := cio.LoadTable(ctx, itable.Identifier(append(slices.Clone(id.Namespace), id.Name)))
		if err != nil {
			return false, err
		}
		if _, ok := tbl.Schema().FindFieldByName(errorColumn); !ok {
			return false, fmt.Errorf("evolve %s: the table has no value schema", id)
		}
		txn := tbl.NewTransaction()
		us := txn.UpdateSchema(true, false)
		added := false
		for _, c := range cols {
			if _, ok := tbl.Schema().FindFieldByName(c.Name); ok {
				continue
			}
			us = us.AddColumn([]string{c.Name}, c.Type, c.Doc, false, nil)
			added = true
		}
		if added {
			if err := us.Commit(); err != nil {
				return false, fmt.Errorf("evolve %s: %w", id, err)
			}
		}
		if err := txn.SetProperties(iceberg.Properties{PropValueSchema: definition}); err != nil {
			return false, fmt.Errorf("evolve %s: %w", id, err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			if errors.Is(err, itable.ErrCommitFailed) {
				continue
			}
			return false, fmt.Errorf("evolve %s: %w", id, err)
		}
		return added, nil
	}
	return false, fmt.Errorf("evolve %s: attempts lost to concurrent commits: %w", id, catalog.ErrConflict)
}

// ExpireSnapshots drops table id's snapshots older than olderThan, but
// always keeps the retainLast newest (at least 1), and deletes the files
// only they referenced (iceberg-go's ExpireSnapshots). Exactly-once does
// not need old snapshots: the current one's summary carries every
// partition's covered offset. It returns how many snapshots went.
func (t *Tables) ExpireSnapshots(ctx context.Context, id Ident, olderThan time.Duration, retainLast int) (int, error) {
	cio := t.catalogIO(ctx)
	for attempt := 0; attempt < t.opts.CommitAttempts; attempt++ {
		tbl, err := cio.LoadTable(ctx, itable.Identifier(append(slices.Clone(id.Namespace), id.Name)))
		if err != nil {
			return 0, err
		}
		before := len(tbl.Metadata().Snapshots())
		txn := tbl.NewTransaction()
		if err := txn.ExpireSnapshots(itable.WithOlderThan(olderThan), itable.WithRetainLast(max(retainLast, 1))); err != nil {
			return 0, fmt.Errorf("expire snapshots of %s: %w", id, err)
		}
		ntbl, err := txn.Commit(ctx)
		if errors.Is(err, itable.ErrCommitFailed) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("expire snapshots of %s: %w", id, err)
		}
		return before - len(ntbl.Metadata().Snapshots()), nil
	}
	return 0, fmt.Errorf("expire snapshots of %s: attempts lost to concurrent commits: %w", id, catalog.ErrConflict)
}
