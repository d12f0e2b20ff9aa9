package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

var hierConfigs = map[string]string{coordapi.ConfigHierarchicalEnabled: "true"}

// keyBatches answers FindKeyBatches as "base-last@object" words, segments
// marked "seg:", then "through=N".
func (e *testEnv) keyBatches(id coordapi.TopicID, partition int32, key string, offset int64, maxBytes int32) (string, error) {
	e.t.Helper()
	r, err := e.c.FindKeyBatches(context.Background(), coordapi.FindKeyBatchesRequest{
		TopicID: id, Partition: partition, Key: []byte(key), Offset: offset, MaxBytes: maxBytes})
	if err != nil {
		return "", err
	}
	if !r.Ready {
		return "not ready", nil
	}
	var sb strings.Builder
	for _, kb := range r.Batches {
		if kb.Coord.Segment {
			sb.WriteString("seg:")
		} else if kb.Coord.BaseOffset != kb.BaseOffset || kb.Coord.LastOffset != kb.LastOffset {
			e.t.Errorf("batch %+v: offsets differ from its coordinate's", kb)
		}
		fmt.Fprintf(&sb, "%d-%d@%s ", kb.BaseOffset, kb.LastOffset, kb.Coord.ObjectKey)
	}
	fmt.Fprintf(&sb, "through=%d", r.Through)
	return sb.String(), nil
}

func (e *testEnv) wantKeyBatches(id coordapi.TopicID, partition int32, key string, offset int64, maxBytes int32, want string) {
	e.t.Helper()
	got, err := e.keyBatches(id, partition, key, offset, maxBytes)
	if err != nil {
		e.t.Fatalf("FindKeyBatches(%q from %d): %v", key, offset, err)
	}
	if got != want {
		e.t.Errorf("FindKeyBatches(%q from %d, %d bytes):\n got %s\nwant %s", key, offset, maxBytes, got, want)
	}
}

// TestFindKeyBatches: commits of a hierarchical topic write one posting per
// key per batch, and FindKeyBatches answers the batches holding a key from
// an offset, within the byte budget, with the offset they cover through.
func TestFindKeyBatches(t *testing.T) {
	e := newEnv(t)
	h := e.topic("telemetry", 2, hierConfigs)
	plainTopic := e.topic("plain", 1, nil)
	// o1: 0-1 {a,b}, 2-4 {a,a,-}, 5 {c}; o2: 6-7 {b}, 8 {a}.
	e.commit("o1", keyed(h.ID, 0, "a", "b"), keyed(h.ID, 0, "a", "a", ""), keyed(h.ID, 0, "c"))
	e.commit("o2", keyed(h.ID, 0, "b", "b"), keyed(h.ID, 0, "a"), keyed(h.ID, 1, "a"))
	e.commit("o3", keyed(plainTopic.ID, 0, "a"))

	for _, tc := range []struct {
		key      string
		offset   int64
		maxBytes int32
		want     string
	}{
		{"a", 0, 1 << 20, "0-1@o1 2-4@o1 8-8@o2 through=9"},
		{"a", 3, 1 << 20, "2-4@o1 8-8@o2 through=9"},
		{"a", 5, 1 << 20, "8-8@o2 through=9"},
		{"a", 9, 1 << 20, "through=9"},
		{"b", 0, 1 << 20, "0-1@o1 6-7@o2 through=9"},
		{"c", 0, 1 << 20, "5-5@o1 through=9"},
		{"absent", 0, 1 << 20, "through=9"},
		// The budget: the first batch always, then while they fit.
		{"a", 0, 1, "0-1@o1 through=2"},
		{"a", 0, 2 * batchLen, "0-1@o1 2-4@o1 through=5"},
	} {
		e.wantKeyBatches(h.ID, 0, tc.key, tc.offset, tc.maxBytes, tc.want)
	}
	e.wantKeyBatches(h.ID, 1, "a", 0, 1<<20, "0-0@o2 through=1")
	e.wantKeyBatches(plainTopic.ID, 0, "a", 0, 1<<20, "not ready")

	_, err := e.keyBatches(h.ID, 0, "a", 10, 1<<20)
	wantKerr(t, err, kerr.OffsetOutOfRange)
	_, err = e.keyBatches(h.ID, 2, "a", 0, 1<<20)
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
	_, err = e.keyBatches(coordapi.TopicID{1}, 0, "a", 0, 1<<20)
	wantKerr(t, err, kerr.UnknownTopicID)

	// Durable: the postings survive a restart.
	e.reopen()
	e.wantKeyBatches(h.ID, 0, "a", 0, 1<<20, "0-1@o1 2-4@o1 8-8@o2 through=9")

	// DeleteRecords: postings below the log start are skipped (and
	// deleted); one whose batch the log start cuts into stays.
	if _, err := e.c.DeleteRecords(context.Background(), h.ID, 0, 3); err != nil {
		t.Fatal(err)
	}
	_, err = e.keyBatches(h.ID, 0, "a", 0, 1<<20)
	wantKerr(t, err, kerr.OffsetOutOfRange)
	e.wantKeyBatches(h.ID, 0, "a", 3, 1<<20, "2-4@o1 8-8@o2 through=9")
	// The read deleted a's stale postings (0-1), not the batch the log
	// start cuts into.
	e.wantKeyBatches(h.ID, 0, "a", 3, 1<<20, "2-4@o1 8-8@o2 through=9")
	e.wantKeyBatches(h.ID, 0, "b", 3, 1<<20, "6-7@o2 through=9")
	for key, want := range map[string]int{"a": 2, "b": 1} {
		left := 0
		_ = e.c.postings.Find(h.ID, 0, []byte(key), 0, func(kvindex.Posting) bool { left++; return true })
		if left != want {
			t.Errorf("%d postings of %s left after reads below the log start, want %d", left, key, want)
		}
	}

	// Deleting the topic drops its postings.
	if _, err := e.c.DeleteTopic(context.Background(), "telemetry"); err != nil {
		t.Fatal(err)
	}
	var n int
	_ = e.c.postings.Find(h.ID, 0, []byte("a"), 0, func(kvindex.Posting) bool { n++; return true })
	if n != 0 {
		t.Errorf("%d postings left after DeleteTopic", n)
	}
}

// TestFindKeyBatchesFollowsConsolidation: once consolidation moved a key's
// batches into a segment, FindKeyBatches answers the segment with the
// batches' own offsets, and the WAL batches after it as batches.
func TestFindKeyBatchesFollowsConsolidation(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TierInterval = -1 })
	h := e.topic("telemetry", 1, map[string]string{coordapi.ConfigHierarchicalEnabled: "true", "retention.ms": "-1"})
	e.commit("w1", keyed(h.ID, 0, "a", "b"), keyed(h.ID, 0, "b"), keyed(h.ID, 0, "a"))
	ctx := context.Background()
	job, n := e.claimConsolidation()
	if err := e.c.CompleteTierJob(ctx, coordapi.CompleteTierJobRequest{
		JobID: job.ID, TopicID: job.TopicID, Partition: job.Partition, BaseOffset: job.BaseOffset, LastOffset: job.LastOffset,
		ObjectKey: "seg1", ObjectSize: n + 1000, DataLength: n,
	}); err != nil {
		t.Fatal(err)
	}
	e.commit("w2", keyed(h.ID, 0, "a"))
	e.wantKeyBatches(h.ID, 0, "a", 0, 1<<20, "seg:0-1@seg1 seg:3-3@seg1 4-4@w2 through=5")
	e.wantKeyBatches(h.ID, 0, "b", 0, 1<<20, "seg:0-1@seg1 seg:2-2@seg1 through=5")
	e.wantKeyBatches(h.ID, 0, "a", 2, 1<<20, "seg:3-3@seg1 4-4@w2 through=5")
}

// TestPostingsBuiltFromLog: a topic that turns hierarchical.enabled on with
// data in its log answers not ready until its postings are built from the
// log, then answers the batches committed before and after the change.
func TestPostingsBuiltFromLog(t *testing.T) {
	store := objectstore.NewMemory()
	e := newEnv(t, func(o *Options) { o.Objects = store; o.TierInterval = -1 })
	tp := e.topic("later", 1, nil)
	ctx := context.Background()
	commitReal := func(key string, batchKeys ...[]string) { e.commitReal(store, tp.ID, key, batchKeys...) }
	commitReal("o1", []string{"a", "b"}, []string{"b"}, []string{"a", "a"})
	v := "true"
	if err := e.c.AlterTopicConfigs(ctx, "later", []coordapi.ConfigOp{{Name: coordapi.ConfigHierarchicalEnabled, Value: &v, Op: coordapi.OpSet}}, true, false); err != nil {
		t.Fatal(err)
	}
	commitReal("o2", []string{"a"})
	testkit.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		got, err := e.keyBatches(tp.ID, 0, "a", 0, 1<<20)
		if err == nil && got == "not ready" {
			err = errors.New("postings not ready")
		}
		return err
	})
	e.wantKeyBatches(tp.ID, 0, "a", 0, 1<<20, "0-1@o1 3-4@o1 5-5@o2 through=6")
	e.wantKeyBatches(tp.ID, 0, "b", 0, 1<<20, "0-1@o1 2-2@o1 through=6")

	// Turning it off drops the postings; on again (with data) rebuilds.
	off := "false"
	if err := e.c.AlterTopicConfigs(ctx, "later", []coordapi.ConfigOp{{Name: coordapi.ConfigHierarchicalEnabled, Value: &off, Op: coordapi.OpSet}}, true, false); err != nil {
		t.Fatal(err)
	}
	e.wantKeyBatches(tp.ID, 0, "a", 0, 1<<20, "not ready")
}

// TestViewRowsDroppedWithBase: deleting a base topic deletes the rows of
// its views; a row written without its base's index row (an earlier build)
// is deleted by the first lookup that finds the base gone.
func TestViewRowsDroppedWithBase(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	base := e.topic("telemetry", 1, hierConfigs)
	other := e.topic("other", 1, hierConfigs)
	var views []coordapi.Topic
	for _, name := range []string{"telemetry/a", "telemetry/b", "other/a"} {
		vt, err := e.c.Topic(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, vt)
	}
	// A row as an earlier build wrote it: no w row.
	legacy := coordapi.ViewTopicID(base.ID, []byte("legacy"))
	if err := e.c.db.Set(layout.ViewKey(legacy), layout.EncodeView(base.ID, []byte("legacy")), nil); err != nil {
		t.Fatal(err)
	}
	hasRow := func(id coordapi.TopicID) bool {
		_, closer, err := e.c.db.Get(layout.ViewKey(id))
		if err == nil {
			closer.Close()
		}
		return err == nil
	}
	if _, err := e.c.DeleteTopic(ctx, "telemetry"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   coordapi.TopicID
		want bool
	}{{views[0].ID, false}, {views[1].ID, false}, {views[2].ID, true}, {legacy, true}} {
		if got := hasRow(tc.id); got != tc.want {
			t.Errorf("view %s: row present %v, want %v", tc.id, got, tc.want)
		}
	}
	_, err := e.c.TopicByID(ctx, legacy)
	wantKerr(t, err, kerr.UnknownTopicID)
	if hasRow(legacy) {
		t.Error("the legacy row survived a lookup of its deleted base")
	}
	if vt, err := e.c.TopicByID(ctx, views[2].ID); err != nil || vt.View == nil || vt.View.BaseID != other.ID {
		t.Errorf("other/a: %+v %v", vt, err)
	}
}

// TestPostingsRebuildResumesAfterRestart: a rebuild that could not finish
// (here: no object reader to read the log with) leaves the topic marked, and
// the next Open builds its postings.
func TestPostingsRebuildResumesAfterRestart(t *testing.T) {
	store := objectstore.NewMemory()
	e := newEnv(t, func(o *Options) { o.TierInterval = -1 })
	tp := e.topic("later", 1, nil)
	ctx := context.Background()
	recs := []record.Record{{Key: []byte("a"), Value: []byte("v")}, {Key: []byte("b"), Value: []byte("v")}}
	data, err := record.Build(record.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, "o1", data); err != nil {
		t.Fatal(err)
	}
	cb := plain(tp.ID, 0, 1)
	cb.ByteLength = int32(len(data))
	if _, err := e.c.CommitObject(ctx, objectReq("o1", cb)); err != nil {
		t.Fatal(err)
	}
	on := "true"
	if err := e.c.AlterTopicConfigs(ctx, "later", []coordapi.ConfigOp{{Name: coordapi.ConfigHierarchicalEnabled, Value: &on, Op: coordapi.OpSet}}, true, false); err != nil {
		t.Fatal(err)
	}
	e.wantKeyBatches(tp.ID, 0, "a", 0, 1<<20, "not ready")
	e.reopen()
	e.wantKeyBatches(tp.ID, 0, "a", 0, 1<<20, "not ready") // still no reader
	e.opts.Objects = store
	e.reopen()
	testkit.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		got, err := e.keyBatches(tp.ID, 0, "b", 0, 1<<20)
		if err == nil && got != "0-1@o1 through=2" {
			err = fmt.Errorf("postings of b: %s", got)
		}
		return err
	})
}

// TestTierTickSweepsPostings: the tier loop deletes the postings below a
// moved log start of keys no one reads, once per postingSweepInterval.
func TestTierTickSweepsPostings(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TierInterval = -1; o.ConsolidationDisabled = true })
	ctx := context.Background()
	h := e.topic("telemetry", 1, map[string]string{coordapi.ConfigHierarchicalEnabled: "true", "retention.ms": "-1"})
	e.commit("o1", keyed(h.ID, 0, "a", "b"), keyed(h.ID, 0, "c"), keyed(h.ID, 0, "a", "c"))
	count := func(key string) int {
		n := 0
		_ = e.c.postings.Find(h.ID, 0, []byte(key), 0, func(kvindex.Posting) bool { n++; return true })
		return n
	}
	if _, err := e.c.DeleteRecords(ctx, h.ID, 0, 3); err != nil {
		t.Fatal(err)
	}
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int{"a": 1, "b": 0, "c": 1} {
		if got := count(key); got != want {
			t.Errorf("%s: %d postings after the sweep, want %d", key, got, want)
		}
	}
	// Not again within the interval: a posting put back below the log
	// start stays until it has passed.
	commitLate := func() {
		b := e.c.db.NewBatch()
		defer b.Close()
		e.c.postings.Apply(b, h.ID, 0, 0, 1, batchLen, [][]byte{[]byte("b")})
		if err := b.Commit(nil); err != nil {
			t.Fatal(err)
		}
	}
	commitLate()
	if _, err := e.c.DeleteRecords(ctx, h.ID, 0, 4); err != nil {
		t.Fatal(err)
	}
	_ = e.c.TierTick(ctx)
	if count("b") != 1 {
		t.Errorf("swept again within %s", postingSweepInterval)
	}
	e.clock.Advance(postingSweepInterval)
	_ = e.c.TierTick(ctx)
	if count("b") != 0 || count("a") != 1 {
		t.Errorf("after the interval: b %d a %d postings, want 0 and 1", count("b"), count("a"))
	}
}
