package tiered

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// fakeTables is a TableJobRunner that reads every segment and records the
// batches' offsets.
type fakeTables struct {
	err  error
	read []int64 // base offsets of the batches read, in order
	runs int
}

func (f *fakeTables) RunTableJob(ctx context.Context, job coordapi.TierJob, read SegmentBatches) (coordapi.TableResult, error) {
	f.runs++
	for _, r := range job.Table.Ranges {
		for _, seg := range r.Segments {
			err := read(ctx, seg, func(b []byte) error {
				h, err := record.ParseHeader(b)
				f.read = append(f.read, h.BaseOffset)
				return err
			})
			if err != nil {
				return coordapi.TableResult{}, err
			}
		}
	}
	if f.err != nil {
		return coordapi.TableResult{}, f.err
	}
	res := coordapi.TableResult{SnapshotID: 42, Rows: 20}
	for _, r := range job.Table.Ranges {
		res.Covered = append(res.Covered, coordapi.TableCovered{Partition: r.Partition, Next: r.To})
	}
	return res, nil
}

// MaintainTable reports a delete snapshot of 7 and the job's retention
// as the rows removed.
func (f *fakeTables) MaintainTable(ctx context.Context, job coordapi.TierJob) (coordapi.TableResult, error) {
	f.runs++
	if f.err != nil {
		return coordapi.TableResult{}, f.err
	}
	return coordapi.TableResult{SnapshotID: 7, Rows: job.Maintain.RetentionMs}, nil
}

// TestTableMaintainJob: a table maintenance job runs through the runner
// and is reported with its result (Partition -2); a runner's failure, a
// job without its table and a broker without a runner abandon it.
func TestTableMaintainJob(t *testing.T) {
	job := func(mj *coordapi.TableMaintainJob) coordapi.TierJob {
		return coordapi.TierJob{ID: 5, TopicID: consTopic, Partition: -2, LeaseMs: 60_000, Kind: coordapi.TierJobTableMaintain, Maintain: mj}
	}
	ok := &coordapi.TableMaintainJob{TopicName: "orders", NowMs: 1_800_000_000_000, RetentionMs: 86_400_000, OrphanGraceMs: 3_600_000}
	for _, tt := range []struct {
		name        string
		job         coordapi.TierJob
		runner      *fakeTables
		wantRuns    int
		wantDone    bool
		wantAbandon bool
	}{
		{name: "maintained", job: job(ok), runner: &fakeTables{}, wantRuns: 1, wantDone: true},
		{name: "runner fails", job: job(ok), runner: &fakeTables{err: errors.New("expire: lost")}, wantRuns: 1, wantAbandon: true},
		{name: "no table", job: job(&coordapi.TableMaintainJob{}), runner: &fakeTables{}, wantAbandon: true},
		{name: "no runner", job: job(ok), wantAbandon: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			jobs := newFakeJobs(tt.job)
			opts := ConsolidatorOptions{Prefix: consPrefix}
			if tt.runner != nil {
				opts.Tables = tt.runner
			}
			fx := newCompactFixture()
			con, err := NewConsolidator(jobs, memReader{fx.store}, fx.store, opts)
			if err != nil {
				t.Fatal(err)
			}
			ran, err := con.RunOnce(t.Context())
			if !ran || (err != nil) == tt.wantDone {
				t.Fatalf("RunOnce = %v, %v", ran, err)
			}
			if tt.runner != nil && tt.runner.runs != tt.wantRuns {
				t.Fatalf("runner ran %d times, want %d", tt.runner.runs, tt.wantRuns)
			}
			_, completed, abandoned := jobs.state()
			if (completed == 1) != tt.wantDone || (abandoned == 1) != tt.wantAbandon {
				t.Fatalf("completed %d, abandoned %d", completed, abandoned)
			}
			if tt.wantDone {
				if req := jobs.completed[0]; req.JobID != 5 || req.Partition != -2 || req.Table == nil ||
					req.Table.SnapshotID != 7 || req.Table.Rows != ok.RetentionMs {
					t.Fatalf("report %+v (table %+v)", req, req.Table)
				}
			}
		})
	}
}

// TestTableJob: a table job reads its segments' batches in order through
// the runner and is reported with the runner's covered offsets (Partition
// -1); a job whose segments do not hold its range, a runner's failure and
// a broker without a runner abandon it; a refused report is not
// abandoned.
func TestTableJob(t *testing.T) {
	fx := newCompactFixture()
	for seg := range int64(2) {
		var batches [][]byte
		for b := range int64(5) {
			base := seg*10 + b*2
			bb, err := record.Build(record.BuildOptions{BaseOffset: base, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
				[]record.Record{{Value: fmt.Appendf(nil, "v%d", base)}, {Value: fmt.Appendf(nil, "v%d", base+1)}})
			if err != nil {
				t.Fatal(err)
			}
			batches = append(batches, bb)
		}
		fx.addSegment(t, batches)
	}
	// A WAL object after them holds offsets 20-23 in two batches as
	// producers send them (base offset 0), after 7 bytes of another
	// partition's.
	wal := []byte("another")
	var walBatches []coordapi.BatchCoord
	for b := range int64(2) {
		bb, err := record.Build(record.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]record.Record{{Value: []byte("w")}, {Value: []byte("x")}})
		if err != nil {
			t.Fatal(err)
		}
		walBatches = append(walBatches, coordapi.BatchCoord{ObjectKey: "wal/1", ByteOffset: int64(len(wal)), ByteLength: int32(len(bb)),
			BaseOffset: 20 + 2*b, LastOffset: 21 + 2*b})
		wal = append(wal, bb...)
	}
	if err := fx.store.Put(t.Context(), "wal/1", wal); err != nil {
		t.Fatal(err)
	}
	for i := range walBatches {
		walBatches[i].ObjectSize = int64(len(wal))
	}
	job := func(from, to int64, segs ...int) coordapi.TierJob {
		fx.jobID++
		r := coordapi.TableRange{Partition: compactPartition, From: from, To: to}
		for _, i := range segs {
			if i >= 10 { // WAL batch i-10
				r.Segments = append(r.Segments, walBatches[i-10])
				continue
			}
			r.Segments = append(r.Segments, fx.segs[i])
		}
		return coordapi.TierJob{ID: fx.jobID, TopicID: consTopic, Partition: -1, LeaseMs: 60_000, Kind: coordapi.TierJobTable,
			Table: &coordapi.TableJob{TopicName: "orders", Ranges: []coordapi.TableRange{r}}}
	}
	badWAL := job(20, 24, 10, 11)
	badWAL.Table.Ranges[0].Segments[1].LastOffset = 24 // the row says 3 offsets, the batch holds 2
	badWAL.Table.Ranges[0].To = 25
	tests := []struct {
		name        string
		job         coordapi.TierJob
		runner      *fakeTables // nil: a broker without table jobs
		completeErr error
		wantRead    []int64
		wantDone    bool // reported
		wantAbandon bool
		wantErr     bool
	}{
		{name: "both segments", job: job(0, 20, 0, 1), runner: &fakeTables{}, wantRead: []int64{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}, wantDone: true},
		{name: "from inside a segment", job: job(13, 20, 1), runner: &fakeTables{}, wantRead: []int64{10, 12, 14, 16, 18}, wantDone: true},
		{name: "segments short of the range", job: job(0, 20, 0), runner: &fakeTables{}, wantAbandon: true, wantErr: true},
		{name: "segments not in order", job: job(0, 20, 1, 0), runner: &fakeTables{}, wantAbandon: true, wantErr: true},
		{name: "runner fails", job: job(0, 10, 0), runner: &fakeTables{err: errors.New("commit lost")}, wantRead: []int64{0, 2, 4, 6, 8},
			wantAbandon: true, wantErr: true},
		{name: "report refused", job: job(0, 10, 0), runner: &fakeTables{}, completeErr: kerr.StaleBrokerEpoch,
			wantRead: []int64{0, 2, 4, 6, 8}, wantErr: true},
		{name: "no runner", job: job(0, 10, 0), wantAbandon: true, wantErr: true},
		{name: "WAL batches", job: job(20, 24, 10, 11), runner: &fakeTables{}, wantRead: []int64{20, 22}, wantDone: true},
		{name: "a segment then WAL batches", job: job(15, 24, 1, 10, 11), runner: &fakeTables{}, wantRead: []int64{10, 12, 14, 16, 18, 20, 22}, wantDone: true},
		{name: "WAL batch unlike its row", job: badWAL, runner: &fakeTables{}, wantRead: []int64{20}, wantAbandon: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := newFakeJobs(tt.job)
			jobs.completeErr = tt.completeErr
			opts := ConsolidatorOptions{Prefix: consPrefix}
			if tt.runner != nil {
				opts.Tables = tt.runner
			}
			con, err := NewConsolidator(jobs, memReader{fx.store}, fx.store, opts)
			if err != nil {
				t.Fatal(err)
			}
			ran, err := con.RunOnce(t.Context())
			if !ran || (err != nil) != tt.wantErr {
				t.Fatalf("RunOnce = %v, %v", ran, err)
			}
			if tt.runner != nil && !slices.Equal(tt.runner.read, tt.wantRead) {
				t.Errorf("read batches at %v, want %v", tt.runner.read, tt.wantRead)
			}
			_, completed, abandoned := jobs.state()
			if (completed == 1) != tt.wantDone || (abandoned == 1) != tt.wantAbandon {
				t.Fatalf("completed %d, abandoned %d", completed, abandoned)
			}
			if tt.wantDone {
				req := jobs.completed[0]
				if req.JobID != tt.job.ID || req.Partition != -1 || req.Table == nil || req.Table.SnapshotID != 42 ||
					req.Table.Covered[0] != (coordapi.TableCovered{Partition: compactPartition, Next: tt.job.Table.Ranges[0].To}) {
					t.Fatalf("report %+v (table %+v)", req, req.Table)
				}
			}
		})
	}
}
