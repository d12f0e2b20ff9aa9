package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"

	"github.com/floe-io/floe/table/catalog"
)

// A compacted topic's table (PropCompacted) holds one row per
// (partition, key): the latest record of that key, and none for a key
// whose latest record is a tombstone (a null value). Kafka refuses
// keyless records on a compacted topic, so the key is the identity; the
// partition is part of it because Kafka compacts each partition alone.
//
// Each commit is one copy-on-write "overwrite" snapshot (no delete files,
// which not every reader applies). Of the job's records only each key's
// latest is written. The files that may hold a key the job changed,
// tombstoned ones included, come from a scan plan with the row filter
//
//	(partition = p1 AND (key IN (k, ...) OR ...)) OR (partition = p2 AND ...) ...
//
// (manifest partition summaries, each file's partition values, such as
// bucket(key), and its column bounds); each is read, and one that holds a
// changed key is replaced by its other rows, written with the job's in
// new files (Transaction.ReplaceDataFilesWithDataFiles). As the table has
// one row per key, a commit rewrites at most one file per changed key;
// every other file stays. The summary carries the covered offsets as for
// any commit. Exactly-once is unchanged: a retried job's ranges are
// skipped by the summary, and even an overlap written again would only
// write a key's latest value again. A lost race redoes the rewrite on the
// winner's snapshot, so no key's old row survives a concurrent commit.
//
// Tombstones take the key's row away at once, not after
// delete.retention.ms: the table is the topic's latest state, where a
// deleted key has no row; the tombstone record itself is never a row.

// keyChanges are the keys a compacted commit changed, by partition:
// sorted, distinct.
type keyChanges map[int32][][]byte

// has reports whether r's (partition, key) changed.
func (c keyChanges) has(r Record) bool {
	if r.Key == nil {
		return false
	}
	_, ok := slices.BinarySearchFunc(c[r.Partition], r.Key, bytes.Compare)
	return ok
}

// inChunk bounds the literals of one IN: iceberg-go's metrics evaluators
// give up on the column bounds of an IN of more than 200. Past
// boundKeys keys of a partition the filter is one IN, which prunes by
// partition values only: checking every key against every file's
// bounds would cost keys × files comparisons, and with that many keys
// the bounds of few files exclude them all.
const (
	inChunk   = 200
	boundKeys = 10 * inChunk
)

// filter is the row filter matching every changed (partition, key):
// (partition = p AND (key IN (...) OR key IN (...))) OR ..., in chunks of
// at most inChunk keys so that file bounds still prune.
func (c keyChanges) filter() iceberg.BooleanExpression {
	parts := slices.Sorted(maps.Keys(c))
	var terms []iceberg.BooleanExpression
	for _, p := range parts {
		var ins []iceberg.BooleanExpression
		chunk := inChunk
		if len(c[p]) > boundKeys {
			chunk = len(c[p])
		}
		for ks := range slices.Chunk(c[p], chunk) {
			ins = append(ins, iceberg.IsIn(iceberg.Reference("key"), ks...))
		}
		terms = append(terms, iceberg.NewAnd(iceberg.EqualTo(iceberg.Reference("partition"), p), or(ins)))
	}
	return or(terms)
}

func or(terms []iceberg.BooleanExpression) iceberg.BooleanExpression {
	switch len(terms) {
	case 0:
		return iceberg.AlwaysFalse{}
	case 1:
		return terms[0]
	}
	return iceberg.NewOr(terms[0], terms[1], terms[2:]...)
}

// latestPerKey keeps, of recs (in partition then offset order, as a
// commit gathers them), the latest record of each (partition, key) whose
// value is not null, and returns with them every (partition, key) in
// recs: the rows they replace or delete. Keyless records (impossible on a
// compacted topic unless its cleanup.policy changed) are kept as rows
// and are no key's change.
func latestPerKey(recs []Record) ([]Record, keyChanges) {
	type pk struct {
		p int32
		k string
	}
	last := make(map[pk]int, len(recs))
	for i, r := range recs {
		if r.Key != nil {
			last[pk{r.Partition, string(r.Key)}] = i
		}
	}
	out := make([]Record, 0, len(last))
	changes := make(keyChanges)
	for i, r := range recs {
		if r.Key == nil {
			out = append(out, r)
			continue
		}
		if last[pk{r.Partition, string(r.Key)}] != i {
			continue
		}
		changes[r.Partition] = append(changes[r.Partition], r.Key)
		if r.Value != nil {
			out = append(out, r)
		}
	}
	for _, ks := range changes {
		slices.SortFunc(ks, bytes.Compare)
	}
	return out, changes
}

// writeRecords adds recs to txn's snapshot (of tbl, whose FileIO writes
// them) with props as its summary: an append or, with changes (a
// compacted table, latestPerKey), a copy-on-write of the data files that
// hold a changed key. Those are found by a scan plan with changes' row
// filter (the manifests' partition summaries, each file's partition
// values and column bounds), then read: a file that holds none of the
// keys after all stays; one that does is replaced by the rest of its
// rows, written together with recs in new files, in one "overwrite"
// snapshot (Transaction.ReplaceDataFilesWithDataFiles). A commit
// therefore rewrites the files holding the keys it changed, not the
// table.
func writeRecords(ctx context.Context, tbl *itable.Table, txn *itable.Transaction, recs []Record, changes keyChanges, props iceberg.Properties, required []string) error {
	if changes != nil && tbl.CurrentSnapshot() != nil {
		return copyOnWrite(ctx, tbl, txn, recs, changes, props, required)
	}
	rdr, err := newRecordReader(tbl.Schema(), recs, required)
	if err != nil {
		return err
	}
	defer rdr.Release()
	if err := txn.Append(ctx, rdr, props); err != nil {
		return fmt.Errorf("append: %w", err)
	}
	return nil
}

// recordColumns are the columns a rewrite reads back: the typed value
// columns are made again from the value.
var recordColumns = []string{"partition", "offset", "timestamp", "key", "value", "headers"}

func copyOnWrite(ctx context.Context, tbl *itable.Table, txn *itable.Transaction, recs []Record, changes keyChanges, props iceberg.Properties, required []string) error {
	tasks, err := tbl.Scan(itable.WithRowFilter(changes.filter())).PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan the rewrite: %w", err)
	}
	var del []iceberg.DataFile
	rows := slices.Clone(recs)
	reader := tbl.Scan(itable.WithSelectedFields(recordColumns...))
	for _, task := range tasks {
		if len(task.DeleteFiles) > 0 || len(task.EqualityDeleteFiles) > 0 || len(task.DeletionVectorFiles) > 0 {
			// floe writes none; rewriting the file would apply them.
			return fmt.Errorf("data file %s has delete files", task.File.FilePath())
		}
		task.Residual = nil // every row of the file, not only the changed keys'
		_, batches, err := reader.ReadTasks(ctx, []itable.FileScanTask{task})
		if err != nil {
			return fmt.Errorf("read %s: %w", task.File.FilePath(), err)
		}
		var frows []Record
		for b, err := range batches {
			if err != nil {
				return fmt.Errorf("read %s: %w", task.File.FilePath(), err)
			}
			frows, err = batchRecords(b, frows)
			b.Release()
			if err != nil {
				return fmt.Errorf("read %s: %w", task.File.FilePath(), err)
			}
		}
		kept := slices.DeleteFunc(frows, changes.has)
		if int64(len(kept)) == task.File.Count() {
			continue // its bounds matched, none of its keys did
		}
		del = append(del, task.File)
		rows = append(rows, kept...)
	}
	return replaceFiles(ctx, tbl, txn, del, rows, props, required)
}

// replaceFiles stages in txn the snapshot that replaces the data files
// del by rows (or, with del empty, appends rows), with props as its
// summary.
func replaceFiles(ctx context.Context, tbl *itable.Table, txn *itable.Transaction, del []iceberg.DataFile, rows []Record, props iceberg.Properties, required []string) error {
	slices.SortFunc(rows, func(a, b Record) int {
		if a.Partition != b.Partition {
			return cmpInt64(int64(a.Partition), int64(b.Partition))
		}
		return cmpInt64(a.Offset, b.Offset)
	})
	rdr, err := newRecordReader(tbl.Schema(), rows, required)
	if err != nil {
		return err
	}
	defer rdr.Release()
	if len(del) == 0 {
		// Nothing to replace (or to write: tombstones of keys the table
		// lacks), but the covered offsets move all the same.
		if err := txn.Append(ctx, rdr, props); err != nil {
			return fmt.Errorf("append: %w", err)
		}
		return nil
	}
	// WriteRecords releases each batch it takes; the reader releases its
	// own on Next.
	batches := func(yield func(arrow.RecordBatch, error) bool) {
		for rdr.Next() {
			b := rdr.RecordBatch()
			b.Retain()
			if !yield(b, nil) {
				return
			}
		}
		if err := rdr.Err(); err != nil {
			yield(nil, err)
		}
	}
	var add []iceberg.DataFile
	for df, err := range itable.WriteRecords(ctx, tbl, rdr.Schema(), batches) {
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		add = append(add, df)
	}
	if err := txn.ReplaceDataFilesWithDataFiles(ctx, del, add, props); err != nil {
		return fmt.Errorf("replace %d data files: %w", len(del), err)
	}
	return nil
}

// SetCompacted makes table id one of the latest value per key (on) or of
// every record (off), for a topic whose cleanup.policy changed after its
// table was created. Turning it on rewrites the table once, in one
// overwrite snapshot that keeps the covered offsets: each (partition,
// key)'s latest row stays, older ones and keys whose latest record the
// table holds as a tombstone go, keyless rows stay. That reads the whole
// table into memory, once. Turning it off only drops the property: later
// commits append every record, the rows already there stay as they are.
// It reports whether it changed the table; a table already so is left
// alone (one load).
func (t *Tables) SetCompacted(ctx context.Context, id Ident, on bool) (bool, error) {
	cio := t.catalogIO(ctx)
	for attempt := 0; attempt < t.opts.CommitAttempts; attempt++ {
		tbl, err := cio.LoadTable(ctx, itable.Identifier(append(slices.Clone(id.Namespace), id.Name)))
		if err != nil {
			return false, err
		}
		if (tbl.Properties()[PropCompacted] == "true") == on {
			return false, nil
		}
		tio := &trackingIO{FileIO: NewFileIO(ctx, t.opts.Store, t.opts.Root)}
		wtbl := itable.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
			func(context.Context) (icebergio.IO, error) { return tio, nil }, cio)
		txn := wtbl.NewTransaction()
		if !on {
			if err := txn.RemoveProperties([]string{PropCompacted}); err != nil {
				return false, fmt.Errorf("set compacted %s: %w", id, err)
			}
		} else {
			if err := t.compactRows(ctx, wtbl, txn); err != nil {
				tio.removeCreated()
				return false, fmt.Errorf("set compacted %s: %w", id, err)
			}
			if err := txn.SetProperties(iceberg.Properties{PropCompacted: "true"}); err != nil {
				tio.removeCreated()
				return false, fmt.Errorf("set compacted %s: %w", id, err)
			}
		}
		if _, err := txn.Commit(ctx); err != nil {
			if errors.Is(err, itable.ErrCommitFailed) {
				tio.removeCreated()
				continue
			}
			return false, fmt.Errorf("set compacted %s: %w", id, err)
		}
		return true, nil
	}
	return false, fmt.Errorf("set compacted %s: attempts lost to concurrent commits: %w", id, catalog.ErrConflict)
}

// compactRows stages in txn the rewrite of tbl's rows to their latest
// per (partition, key), with the current snapshot's covered offsets.
func (t *Tables) compactRows(ctx context.Context, tbl *itable.Table, txn *itable.Transaction) error {
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		return nil
	}
	covered, err := coveredOffsets(cur)
	if err != nil {
		return err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	del := make([]iceberg.DataFile, 0, len(tasks))
	for _, task := range tasks {
		del = append(del, task.File)
	}
	at, err := tbl.Scan(itable.WithSelectedFields(recordColumns...)).ToArrowTable(ctx)
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	defer at.Release()
	recs, err := arrowRecords(at)
	if err != nil {
		return err
	}
	slices.SortFunc(recs, func(a, b Record) int {
		if a.Partition != b.Partition {
			return cmpInt64(int64(a.Partition), int64(b.Partition))
		}
		return cmpInt64(a.Offset, b.Offset)
	})
	recs, _ = latestPerKey(recs)
	return replaceFiles(ctx, tbl, txn, del, recs, summaryProps(covered), requiredProps(tbl.Properties()[PropValueSchema]))
}

// arrowRecords turns a scan of the fixed columns back into Records.
func arrowRecords(at arrow.Table) ([]Record, error) {
	rdr := array.NewTableReader(at, 4096)
	defer rdr.Release()
	var out []Record
	for rdr.Next() {
		var err error
		if out, err = batchRecords(rdr.RecordBatch(), out); err != nil {
			return nil, err
		}
	}
	return out, rdr.Err()
}

// batchRecords appends the rows of a batch of the fixed columns to out
// as Records.
func batchRecords(rec arrow.RecordBatch, out []Record) ([]Record, error) {
	col := func(name string) arrow.Array {
		if idx := rec.Schema().FieldIndices(name); len(idx) == 1 {
			return rec.Column(idx[0])
		}
		return nil
	}
	part, ok1 := col("partition").(*array.Int32)
	off, ok2 := col("offset").(*array.Int64)
	ts, ok3 := col("timestamp").(*array.Timestamp)
	key, ok4 := col("key").(*array.Binary)
	val, ok5 := col("value").(*array.Binary)
	hdrs, ok6 := col("headers").(*array.List)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		return nil, fmt.Errorf("scan: unexpected columns %v", rec.Schema())
	}
	hs, ok := hdrs.ListValues().(*array.Struct)
	if !ok || hs.NumField() != 2 {
		return nil, fmt.Errorf("scan: unexpected headers %v", hdrs.DataType())
	}
	hk, ok1 := hs.Field(0).(*array.String)
	hv, ok2 := hs.Field(1).(*array.Binary)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("scan: unexpected headers %v", hdrs.DataType())
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		r := Record{Partition: part.Value(i), Offset: off.Value(i), Timestamp: int64(ts.Value(i)) / 1000}
		if !key.IsNull(i) {
			r.Key = append([]byte{}, key.Value(i)...) // never nil: nil is a null
		}
		if !val.IsNull(i) {
			r.Value = append([]byte{}, val.Value(i)...)
		}
		start, end := hdrs.ValueOffsets(i)
		for j := start; j < end; j++ {
			h := Header{Key: hk.Value(int(j))}
			if !hv.IsNull(int(j)) {
				h.Value = bytes.Clone(hv.Value(int(j)))
			}
			r.Headers = append(r.Headers, h)
		}
		out = append(out, r)
	}
	return out, nil
}
