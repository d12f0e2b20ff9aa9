package table

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
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
