package table

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"

	"github.com/floe-io/floe/table/catalog"
)

// RetentionResult is what ApplyRetention did.
type RetentionResult struct {
	// SnapshotID is the delete snapshot it committed, 0 when no data file
	// was old enough.
	SnapshotID int64
	// Files and Rows count the data files it removed from the table and
	// the rows they held.
	Files, Rows int64
	// Cutoff is the timestamp the delete was by: every removed file's
	// rows are older than it, every kept file's rows at or after it.
	Cutoff time.Time
}

// ApplyRetention applies table.retention.ms to table id: it removes the
// data files whose newest row is older than cutoff (now less the
// retention), as Kafka deletes a segment whose newest record is past
// retention.ms, in one delete snapshot that writes no data file
// (iceberg-go's Transaction.Delete, by a filter timestamp < bound that
// no kept file straddles, so nothing is rewritten). With day(timestamp)
// partitioning, whole days go. The snapshot keeps the covered offsets:
// the rows are gone, not uncovered, and no job writes them again. The
// removed files' bytes stay until the snapshots that reference them
// expire (ExpireSnapshots). A lost race reloads and tries again.
func (t *Tables) ApplyRetention(ctx context.Context, id Ident, cutoff time.Time) (RetentionResult, error) {
	cio := t.catalogIO(ctx)
	for attempt := 0; attempt < t.opts.CommitAttempts; attempt++ {
		tbl, err := cio.LoadTable(ctx, itable.Identifier(append(slices.Clone(id.Namespace), id.Name)))
		if err != nil {
			return RetentionResult{}, err
		}
		cur := tbl.CurrentSnapshot()
		if cur == nil {
			return RetentionResult{}, nil
		}
		files, err := dataFileTimes(cur, cio.fio)
		if err != nil {
			return RetentionResult{}, fmt.Errorf("retention of %s: %w", id, err)
		}
		bound, res := retentionBound(files, cutoff.UnixMicro())
		if res.Files == 0 {
			return RetentionResult{}, nil
		}
		res.Cutoff = time.UnixMicro(bound)
		covered, err := coveredOffsets(cur)
		if err != nil {
			return RetentionResult{}, err
		}
		txn := tbl.NewTransaction()
		if err := txn.Delete(ctx, iceberg.LessThan(iceberg.Reference("timestamp"), iceberg.Timestamp(bound)), summaryProps(covered)); err != nil {
			return RetentionResult{}, fmt.Errorf("retention of %s: %w", id, err)
		}
		ntbl, err := txn.Commit(ctx)
		if errors.Is(err, itable.ErrCommitFailed) {
			continue
		}
		if err != nil {
			return RetentionResult{}, fmt.Errorf("retention of %s: %w", id, err)
		}
		res.SnapshotID = ntbl.CurrentSnapshot().SnapshotID
		return res, nil
	}
	return RetentionResult{}, fmt.Errorf("retention of %s: attempts lost to concurrent commits: %w", id, catalog.ErrConflict)
}

// fileTimes is a data file's row count and timestamp bounds (µs).
type fileTimes struct {
	rows, lo, hi int64
}

// dataFileTimes reads the timestamp bounds of snap's live data files
// from their manifests' column metrics. A file without both bounds is
// given the widest ones, so that it is never removed.
func dataFileTimes(snap *itable.Snapshot, fio *FileIO) ([]fileTimes, error) {
	mans, err := snap.Manifests(fio)
	if err != nil {
		return nil, fmt.Errorf("manifests of snapshot %d: %w", snap.SnapshotID, err)
	}
	var out []fileTimes
	for _, m := range mans {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := m.FetchEntries(fio, true)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		for _, e := range entries {
			df := e.DataFile()
			if df.ContentType() != iceberg.EntryContentData {
				continue
			}
			ft := fileTimes{rows: df.Count(), lo: math.MinInt64, hi: math.MaxInt64}
			lo, hi := df.LowerBoundValues()[fieldTimestamp], df.UpperBoundValues()[fieldTimestamp]
			if len(lo) == 8 && len(hi) == 8 {
				ft.lo, ft.hi = int64(binary.LittleEndian.Uint64(lo)), int64(binary.LittleEndian.Uint64(hi))
			}
			out = append(out, ft)
		}
	}
	return out, nil
}

// retentionBound returns the bound b ≤ cutoff of a delete by timestamp <
// b that removes whole files only, and what it removes: the files whose
// newest row is before b. It lowers b to the oldest row of any file
// whose newest row is at or after b until no file has rows on both
// sides, so a file with rows older than the cutoff but a newer one too
// (timestamps out of order within it) stays whole, as a Kafka segment
// stays until its newest record is past retention.
func retentionBound(files []fileTimes, cutoff int64) (int64, RetentionResult) {
	b := cutoff
	for changed := true; changed; {
		changed = false
		for _, f := range files {
			if f.hi >= b && f.lo < b {
				b, changed = f.lo, true
			}
		}
	}
	var res RetentionResult
	for _, f := range files {
		if f.hi < b {
			res.Files++
			res.Rows += f.rows
		}
	}
	return b, res
}

// summaryProps are floe's snapshot summary properties for the covered
// offsets covered.
func summaryProps(covered map[int32]int64) iceberg.Properties {
	props := iceberg.Properties{SummaryVersion: SummaryFormatVersion}
	for p, o := range covered {
		props[SummaryNextOffsetPrefix+strconv.Itoa(int(p))] = strconv.FormatInt(o, 10)
	}
	return props
}
