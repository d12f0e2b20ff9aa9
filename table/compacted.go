package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
// Each commit is one copy-on-write overwrite snapshot (iceberg-go's
// Transaction.Overwrite with a row filter): of the job's records only the
// latest per key is kept, and the filter
//
//	(partition = p1 AND key IN (k, ...)) OR (partition = p2 AND key IN (...)) ...
//
// names every key the job changed, tombstoned ones included. Iceberg
// deletes the data files all of whose rows match it, rewrites those where
// some do without those rows, keeps the files it cannot match (by
// partition values and column bounds) untouched, and adds the job's
// latest rows; the summary carries the covered offsets as for any commit.
// Exactly-once is unchanged: a retried job's ranges are skipped by the
// summary, and even an overlap written again would only overwrite a key
// with the same latest value. A lost race redoes the overwrite on the
// winner's snapshot, so no key's old row survives a concurrent commit.
//
// Tombstones take the key's row away at once, not after
// delete.retention.ms: the table is the topic's latest state, where a
// deleted key has no row; the tombstone record itself is never a row.

// latestPerKey keeps, of recs (in partition then offset order, as a
// commit gathers them), the latest record of each (partition, key) whose
// value is not null, and returns with them the filter matching every
// (partition, key) in recs: the rows they replace or delete. Keyless
// records (impossible on a compacted topic unless its cleanup.policy
// changed) are kept as rows and in no filter. The filter is nil when no
// record has a key.
func latestPerKey(recs []Record) ([]Record, iceberg.BooleanExpression) {
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
	keys := make(map[int32][][]byte)
	for i, r := range recs {
		if r.Key == nil {
			out = append(out, r)
			continue
		}
		if last[pk{r.Partition, string(r.Key)}] != i {
			continue
		}
		keys[r.Partition] = append(keys[r.Partition], r.Key)
		if r.Value != nil {
			out = append(out, r)
		}
	}
	if len(keys) == 0 {
		return out, nil
	}
	parts := slices.Sorted(func(yield func(int32) bool) {
		for p := range keys {
			if !yield(p) {
				return
			}
		}
	})
	var terms []iceberg.BooleanExpression
	for _, p := range parts {
		ks := keys[p]
		slices.SortFunc(ks, bytes.Compare)
		terms = append(terms, iceberg.NewAnd(
			iceberg.EqualTo(iceberg.Reference("partition"), p),
			iceberg.IsIn(iceberg.Reference("key"), ks...)))
	}
	if len(terms) == 1 {
		return out, terms[0]
	}
	return out, iceberg.NewOr(terms[0], terms[1], terms[2:]...)
}

// writeRecords adds rdr's rows to txn's snapshot with props as its
// summary: an append, or with a filter (a compacted table, latestPerKey)
// a copy-on-write overwrite of the rows the filter matches.
func writeRecords(ctx context.Context, txn *itable.Transaction, rdr array.RecordReader, props iceberg.Properties, filter iceberg.BooleanExpression) error {
	if filter == nil {
		if err := txn.Append(ctx, rdr, props); err != nil {
			return fmt.Errorf("append: %w", err)
		}
		return nil
	}
	if err := txn.Overwrite(ctx, rdr, props, itable.WithOverwriteFilter(filter)); err != nil {
		return fmt.Errorf("overwrite: %w", err)
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

// compactRows stages in txn the overwrite of tbl's rows by their latest
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
	at, err := tbl.Scan(itable.WithSelectedFields("partition", "offset", "timestamp", "key", "value", "headers")).ToArrowTable(ctx)
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
	rdr, err := newRecordReader(tbl.Schema(), recs, requiredProps(tbl.Properties()[PropValueSchema]))
	if err != nil {
		return err
	}
	defer rdr.Release()
	if err := txn.Overwrite(ctx, rdr, summaryProps(covered)); err != nil {
		return fmt.Errorf("overwrite: %w", err)
	}
	return nil
}

// arrowRecords turns a scan of the fixed columns back into Records.
func arrowRecords(at arrow.Table) ([]Record, error) {
	rdr := array.NewTableReader(at, 4096)
	defer rdr.Release()
	var out []Record
	for rdr.Next() {
		rec := rdr.RecordBatch()
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
	}
	return out, rdr.Err()
}
