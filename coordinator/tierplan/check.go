package tierplan

import (
	"fmt"
	"slices"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// Checking reports: before the coordinator swaps any row for a completed
// job, the broker's report must match the job the planner handed it. The
// checks here read only the job and the report; an error says why the
// completion is refused (the coordinator answers STALE_BROKER_EPOCH with
// it, and the broker deletes what it wrote).

// CheckConsolidation checks a consolidation job's report: its offsets,
// its data length and a segment that can hold them.
func CheckConsolidation(job *Job, req *coordapi.CompleteTierJobRequest) error {
	switch {
	case req.BaseOffset != job.BaseOffset || req.LastOffset != job.LastOffset:
		return fmt.Errorf("job %d covers offsets %d-%d, not %d-%d", job.ID, job.BaseOffset, job.LastOffset, req.BaseOffset, req.LastOffset)
	case req.DataLength != job.Seg.DataLength:
		return fmt.Errorf("job %d's batches are %d bytes, the segment's data %d", job.ID, job.Seg.DataLength, req.DataLength)
	case req.ObjectKey == "" || req.ObjectSize <= req.DataLength:
		return fmt.Errorf("job %d's segment %q of %d bytes cannot hold %d bytes of data and its indexes", job.ID, req.ObjectKey, req.ObjectSize, req.DataLength)
	}
	return nil
}

// CheckCompaction checks a compaction job's report (req.Compacted set):
// it replaces a prefix of the job's input segments, n of them, ending at
// req.LastOffset, with output segments that follow each other over the
// same offsets, each of a key known does not know, and cleaned through an
// offset of its last replaced input.
func CheckCompaction(job *Job, req *coordapi.CompleteTierJobRequest, known func(objectKey string) bool) (n int, err error) {
	res, cj := req.Compacted, job.Compact
	if job.Kind != coordapi.TierJobCompact || cj == nil {
		return 0, fmt.Errorf("job %d is not a compaction job", job.ID)
	}
	n = slices.IndexFunc(cj.Segments, func(bc coordapi.BatchCoord) bool { return bc.LastOffset == req.LastOffset }) + 1
	switch {
	case req.BaseOffset != job.BaseOffset || n == 0:
		return 0, fmt.Errorf("job %d's segments do not end at offset %d from %d", job.ID, req.LastOffset, req.BaseOffset)
	case len(res.Segments) == 0:
		return 0, fmt.Errorf("job %d reports no segment", job.ID)
	case res.CleanedThrough < cj.Segments[n-1].BaseOffset || res.CleanedThrough > max(req.LastOffset, cj.DirtyOffset-1):
		return 0, fmt.Errorf("job %d cleaned through %d, outside its last replaced segment %d-%d", job.ID, res.CleanedThrough, cj.Segments[n-1].BaseOffset, req.LastOffset)
	}
	next := job.BaseOffset
	for i, sg := range res.Segments {
		switch {
		case sg.BaseOffset != next || sg.LastOffset < sg.BaseOffset:
			return 0, fmt.Errorf("job %d's segment %d covers %d-%d, not from %d", job.ID, i, sg.BaseOffset, sg.LastOffset, next)
		case sg.ObjectKey == "" || sg.DataLength <= 0 || sg.DataLength > layout.MaxSegmentData || sg.ObjectSize <= sg.DataLength:
			return 0, fmt.Errorf("job %d's segment %q of %d bytes cannot hold %d bytes of data and its indexes", job.ID, sg.ObjectKey, sg.ObjectSize, sg.DataLength)
		case sg.Batches <= 0 || sg.Batches > sg.LastOffset-sg.BaseOffset+1:
			return 0, fmt.Errorf("job %d's segment %q has %d batches over %d-%d", job.ID, sg.ObjectKey, sg.Batches, sg.BaseOffset, sg.LastOffset)
		case known(sg.ObjectKey):
			return 0, fmt.Errorf("job %d: object %q is already known", job.ID, sg.ObjectKey)
		}
		next = sg.LastOffset + 1
	}
	if next != req.LastOffset+1 {
		return 0, fmt.Errorf("job %d's segments end at %d, not %d", job.ID, next-1, req.LastOffset)
	}
	return n, nil
}

// CheckTable checks a table job's report: each of the job's partitions
// it reports covered is covered at least to its range's end (those of
// other partitions are the snapshot's, not the job's).
func CheckTable(job *Job, req *coordapi.CompleteTierJobRequest) error {
	if job.Kind != coordapi.TierJobTable || job.Table == nil || req.Table == nil {
		return fmt.Errorf("job %d: a table job's report and a table job go together", job.ID)
	}
	for _, cov := range req.Table.Covered {
		i := -1
		for j, r := range job.Table.Ranges {
			if r.Partition == cov.Partition {
				i = j
			}
		}
		if i < 0 {
			continue // a partition the job did not write: the snapshot's, not ours to learn here
		}
		if r := job.Table.Ranges[i]; cov.Next < r.To {
			return fmt.Errorf("job %d covers %s/%d to %d, short of its range's end %d", job.ID, job.Table.TopicName, cov.Partition, cov.Next, r.To)
		}
	}
	return nil
}
