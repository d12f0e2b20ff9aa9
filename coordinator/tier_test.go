package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// TestTierDataDriven runs the scripts under testdata/tier: consolidation
// planning, the swap, retention and DeleteRecords across both tiers, and
// their state across reopens. Commands:
//
//	topic name=T partitions=N [config=k=v;k=v]
//	alter name=T config=k=v;k=v
//	commit key=K             input: one batch a line, "T/P delta=D [ts=MS] [len=N]"
//
// Timestamps in and out are milliseconds after the test clock's start
// (epoch0); a batch's default is 0.
//
//	advance d=DURATION
//	tick                     TierTick: retention, then planning
//	claim                    ClaimTierJob; prints the job or "none"
//	complete [id=+N] [key=K] [len=N]  completes the last claimed job (key
//	                         segN by default, id the job's plus N)
//	abandon                  abandons the last claimed job
//	complete-compact through=N [horizon=MS]  completes the last claimed
//	                         compaction job; input: an output segment a
//	                         line, "BASE-LAST len=N batches=B [ts=MS]"
//	segs=-1                  the next segment key repeats the last one's
//	compaction part=T/P      the planner's view and the cleaner state
//	state part=T/P           the partition's offsets and tier fields
//	find part=T/P offset=N [max=N]
//	list-offset part=T/P ts=N
//	delete-records part=T/P offset=N
//	objects                  every object: key, state, live bytes
//	reopen
func TestTierDataDriven(t *testing.T) {
	epoch0 := newTestClock().Now().UnixMilli()
	datadriven.Walk(t, "testdata/tier", func(t *testing.T, path string) {
		e := newEnv(t, func(o *Options) { o.TierInterval = -1 })
		topics := map[string]coordapi.Topic{}
		var job coordapi.TierJob
		segs := 0 // segments completed: seg1, seg2...
		ctx := context.Background()
		part := func(d *datadriven.TestData) (coordapi.TopicID, int32) {
			var s string
			d.ScanArgs(t, "part", &s)
			name, p, ok := strings.Cut(s, "/")
			n, err := strconv.Atoi(p)
			if !ok || err != nil {
				d.Fatalf(t, "bad part %q", s)
			}
			return topics[name].ID, int32(n)
		}
		configs := func(d *datadriven.TestData) map[string]string {
			if !d.HasArg("config") {
				return nil
			}
			var s string
			d.ScanArgs(t, "config", &s)
			m := map[string]string{}
			for _, kv := range strings.Split(s, ";") {
				k, v, _ := strings.Cut(kv, "=")
				m[k] = v
			}
			return m
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "topic":
				var name string
				partitions := 1
				d.ScanArgs(t, "name", &name)
				d.MaybeScanArgs(t, "partitions", &partitions)
				topics[name] = e.topic(name, int32(partitions), configs(d))
				return ""
			case "alter":
				var name string
				d.ScanArgs(t, "name", &name)
				var ops []coordapi.ConfigOp
				for k, v := range configs(d) {
					v := v
					ops = append(ops, coordapi.ConfigOp{Name: k, Value: &v, Op: coordapi.OpSet})
				}
				if err := e.c.AlterTopicConfigs(ctx, name, ops, true, false); err != nil {
					return "error: " + err.Error()
				}
				return ""
			case "commit":
				var key string
				d.ScanArgs(t, "key", &key)
				var batches []coordapi.CommitBatch
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					f := strings.Fields(line)
					name, p, _ := strings.Cut(f[0], "/")
					n, _ := strconv.Atoi(p)
					b := plain(topics[name].ID, int32(n), 0)
					b.MaxTimestamp = epoch0
					for _, a := range f[1:] {
						k, v, _ := strings.Cut(a, "=")
						x, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							d.Fatalf(t, "bad %s", a)
						}
						switch k {
						case "delta":
							b.LastOffsetDelta = int32(x)
						case "ts":
							b.MaxTimestamp = epoch0 + x
						case "len":
							b.ByteLength = int32(x)
						default:
							d.Fatalf(t, "unknown batch arg %s", k)
						}
					}
					batches = append(batches, b)
				}
				return baseOffsets(e.commit(key, batches...))
			case "advance":
				var s string
				d.ScanArgs(t, "d", &s)
				dur, err := time.ParseDuration(s)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				e.clock.Advance(dur)
				return ""
			case "tick":
				if err := e.c.TierTick(ctx); err != nil {
					return "error: " + err.Error()
				}
				return ""
			case "claim":
				j, ok, err := e.c.ClaimTierJob(ctx, coordapi.ClaimTierJobRequest{BrokerID: 7})
				if err != nil {
					return "error: " + err.Error()
				}
				if !ok {
					return "none"
				}
				job = j
				var sb strings.Builder
				if cj := j.Compact; j.Kind == coordapi.TierJobCompact {
					fmt.Fprintf(&sb, "compact %d-%d dirty=%d index=%t now=%d delete_retention=%d segment_bytes=%d producers=%v lease=%dms\n",
						j.BaseOffset, j.LastOffset, cj.DirtyOffset, cj.KeyIndex, cj.NowMs-epoch0, cj.DeleteRetentionMs, cj.SegmentBytes, cj.ProducerLastOffsets, j.LeaseMs)
					for _, b := range cj.Segments {
						ts := b.MaxTimestamp
						if ts >= 0 {
							ts -= epoch0
						}
						fmt.Fprintf(&sb, "  %s %d-%d len=%d ts=%d segment=%t\n", b.ObjectKey, b.BaseOffset, b.LastOffset, b.ByteLength, ts, b.Segment)
					}
					return sb.String()
				}
				var n int64
				for _, b := range j.Batches {
					n += int64(b.ByteLength)
				}
				fmt.Fprintf(&sb, "job %d-%d batches=%d bytes=%d lat=%t lease=%dms\n", j.BaseOffset, j.LastOffset, len(j.Batches), n, j.LogAppendTime, j.LeaseMs)
				for _, b := range j.Batches {
					fmt.Fprintf(&sb, "  %s@%d+%d %d-%d ts=%d\n", b.ObjectKey, b.ByteOffset, b.ByteLength, b.BaseOffset, b.LastOffset, b.MaxTimestamp-epoch0)
				}
				return sb.String()
			case "complete":
				var n int64
				for _, b := range job.Batches {
					n += int64(b.ByteLength)
				}
				id := job.ID
				if d.HasArg("id") {
					var x int
					d.ScanArgs(t, "id", &x)
					id = job.ID + uint64(x)
				}
				segs++
				key := fmt.Sprintf("seg%d", segs)
				d.MaybeScanArgs(t, "key", &key)
				d.MaybeScanArgs(t, "len", &n)
				err := e.c.CompleteTierJob(ctx, coordapi.CompleteTierJobRequest{
					JobID: id, TopicID: job.TopicID, Partition: job.Partition, BaseOffset: job.BaseOffset, LastOffset: job.LastOffset,
					ObjectKey: key, ObjectSize: n + 1000, DataLength: n,
				})
				if err != nil {
					if errors.Is(err, kerr.StaleBrokerEpoch) {
						return "refused: " + anonymize(err.Error(), job, topics)
					}
					return "error: " + err.Error()
				}
				return "ok"
			case "complete-compact":
				// Input: one output segment a line, "BASE-LAST len=N
				// batches=B [ts=MS]"; through= is CleanedThrough, horizon=
				// the tombstone horizon (ms after epoch0; none by default).
				res := &coordapi.CompactResult{TombstoneHorizonMs: -1}
				d.ScanArgs(t, "through", &res.CleanedThrough)
				if d.HasArg("horizon") {
					d.ScanArgs(t, "horizon", &res.TombstoneHorizonMs)
					res.TombstoneHorizonMs += epoch0
				}
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					f := strings.Fields(line)
					segs++
					sg := coordapi.CompactedSegment{ObjectKey: fmt.Sprintf("seg%d", segs), MaxTimestamp: -1, MaxTimestampOffset: -1, MaxTimestampLast: -1}
					if _, err := fmt.Sscanf(f[0], "%d-%d", &sg.BaseOffset, &sg.LastOffset); err != nil {
						d.Fatalf(t, "bad range %q", f[0])
					}
					for _, a := range f[1:] {
						k, v, _ := strings.Cut(a, "=")
						x, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							d.Fatalf(t, "bad %s", a)
						}
						switch k {
						case "len":
							sg.DataLength = x
						case "batches":
							sg.Batches = x
						case "ts":
							sg.MaxTimestamp, sg.MaxTimestampOffset, sg.MaxTimestampLast = epoch0+x, sg.LastOffset, sg.LastOffset
						default:
							d.Fatalf(t, "unknown segment arg %s", k)
						}
					}
					sg.ObjectSize = sg.DataLength + 1000
					res.Segments = append(res.Segments, sg)
					res.BytesOut += sg.DataLength
				}
				last := res.Segments[len(res.Segments)-1].LastOffset
				err := e.c.CompleteTierJob(ctx, coordapi.CompleteTierJobRequest{
					JobID: job.ID, TopicID: job.TopicID, Partition: job.Partition, BaseOffset: job.BaseOffset, LastOffset: last,
					Compacted: res,
				})
				if err != nil {
					if errors.Is(err, kerr.StaleBrokerEpoch) {
						return "refused: " + anonymize(err.Error(), job, topics)
					}
					return "error: " + err.Error()
				}
				return "ok"
			case "compaction":
				id, p := part(d)
				var name string
				for n, tp := range topics {
					if tp.ID == id {
						name = n
					}
				}
				cs := e.c.CompactionStates()[name]
				if int(p) >= len(cs) {
					return "none"
				}
				s := cs[p]
				e.c.mu.RLock()
				st := e.c.mu.topicsByID[id].parts[p]
				e.c.mu.RUnlock()
				rel := func(ms int64) int64 {
					if ms < 0 {
						return ms
					}
					return ms - epoch0
				}
				return fmt.Sprintf("clean=%d dirty=%d ratio=%.2f lag=%dms last_cleaned=%d clean_offset=%d horizon=%d",
					s.CleanBytes, s.DirtyBytes, s.DirtyRatio, s.LagMs, rel(s.LastCleanedMs), st.cleanOffset, rel(st.horizonMs))
			case "abandon":
				if err := e.c.AbandonTierJob(ctx, job.ID, "test"); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "state":
				id, p := part(d)
				e.c.mu.RLock()
				st := e.c.mu.topicsByID[id].parts[p]
				e.c.mu.RUnlock()
				// The rows' encoded bytes must match a scan of them.
				lower, upper := layout.BatchPartitionBounds(id, p)
				rs, err := e.c.rowStats(lower, upper)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				if rs.RowBytes != st.metaBytes {
					d.Fatalf(t, "metadata bytes %d, the rows hold %d", st.metaBytes, rs.RowBytes)
				}
				return fmt.Sprintf("log_start=%d wal_start=%d hwm=%d bytes=%d wal_bytes=%d segments=%d seg_bytes=%d",
					st.logStart, st.walStart, st.hwm, st.bytes, st.walBytes(), st.segments, st.segBytes)
			case "find":
				id, p := part(d)
				var offset int64
				max := 1 << 30
				d.ScanArgs(t, "offset", &offset)
				d.MaybeScanArgs(t, "max", &max)
				resp, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: id, Partition: p, Offset: offset, MaxBytes: int32(max)})
				if err != nil {
					return "error: " + anonymize(err.Error(), job, topics)
				}
				var sb strings.Builder
				for _, b := range resp.Batches {
					kind := "batch"
					if b.Segment {
						kind = "segment"
					}
					fmt.Fprintf(&sb, "%s %s@%d+%d %d-%d ts=%d\n", kind, b.ObjectKey, b.ByteOffset, b.ByteLength, b.BaseOffset, b.LastOffset, b.MaxTimestamp-epoch0)
				}
				if sb.Len() == 0 {
					return "none"
				}
				return sb.String()
			case "list-offset":
				id, p := part(d)
				var ts int64
				d.ScanArgs(t, "ts", &ts)
				if ts >= 0 {
					ts += epoch0
				}
				o, rts, err := e.c.ListOffset(ctx, id, p, ts)
				if err != nil {
					return "error: " + err.Error()
				}
				if rts >= 0 {
					rts -= epoch0
				}
				return fmt.Sprintf("offset=%d ts=%d", o, rts)
			case "delete-records":
				id, p := part(d)
				var offset int64
				d.ScanArgs(t, "offset", &offset)
				lw, err := e.c.DeleteRecords(ctx, id, p, offset)
				if err != nil {
					return "error: " + err.Error()
				}
				return fmt.Sprintf("low_watermark=%d", lw)
			case "objects":
				objs, err := e.c.Objects(ctx)
				if err != nil {
					return "error: " + err.Error()
				}
				var sb strings.Builder
				for _, o := range objs {
					fmt.Fprintf(&sb, "%s %s live=%d size=%d\n", o.Key, o.State, o.LiveBytes, o.Size)
				}
				return sb.String()
			case "segs=-1":
				segs-- // the next segment key repeats the last one's
				return ""
			case "reopen":
				e.reopen()
				return ""
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

// anonymize replaces the random ids in a message (the job's, topics')
// with JOB and ID, and drops the Kafka error's name prefix where it is
// also the message's.
func anonymize(msg string, job coordapi.TierJob, topics map[string]coordapi.Topic) string {
	msg = strings.ReplaceAll(msg, fmt.Sprint(job.ID+1), "JOB+1")
	msg = strings.ReplaceAll(msg, fmt.Sprint(job.ID), "JOB")
	for _, tp := range topics {
		msg = strings.ReplaceAll(msg, tp.ID.String(), "ID")
	}
	return strings.TrimPrefix(msg, "STALE_BROKER_EPOCH: ")
}
