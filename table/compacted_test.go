package table_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
)

// kv returns partition p's record at offset o with key k and value v
// ("" is a tombstone, a null value).
func kv(p int32, o int64, k, v string) table.Record {
	r := table.Record{Partition: p, Offset: o, Timestamp: 1_765_000_000_000 + o*3_600_000, Key: []byte(k)}
	if v != "" {
		r.Value = []byte(v)
	}
	return r
}

// latest folds records in order into the table a compacted topic should
// have: each (partition, key)'s latest record, none for a tombstone, in
// (partition, offset) order.
func latest(recs ...[]table.Record) []table.Record {
	type pk struct {
		p int32
		k string
	}
	m := map[pk]table.Record{}
	for _, rs := range recs {
		for _, r := range rs {
			if r.Value == nil {
				delete(m, pk{r.Partition, string(r.Key)})
			} else {
				m[pk{r.Partition, string(r.Key)}] = r
			}
		}
	}
	out := make([]table.Record, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b table.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out
}

// compactedRounds are a compacted topic's records in three rounds over
// partitions 0 and 1 (the same keys in both: the partition is part of
// the identity): keys written, overwritten, deleted, written again.
func compactedRounds() [][]table.Range {
	var r1p0, r1p1 []table.Record
	for o := int64(0); o < 40; o++ {
		r1p0 = append(r1p0, kv(0, o, fmt.Sprintf("k%02d", o%20), fmt.Sprintf("v%d", o)))
	}
	for o := int64(0); o < 10; o++ {
		r1p1 = append(r1p1, kv(1, o, fmt.Sprintf("k%02d", o), fmt.Sprintf("p1v%d", o)))
	}
	// Round 2: k00-k04 overwritten, k05 and k06 deleted, k06 written
	// again, k07 deleted, k20 new; partition 1's k03 deleted.
	r2p0 := []table.Record{
		kv(0, 40, "k00", "w40"), kv(0, 41, "k01", "w41"), kv(0, 42, "k02", "w42"), kv(0, 43, "k03", "w43"),
		kv(0, 44, "k04", "w44"), kv(0, 45, "k05", ""), kv(0, 46, "k06", ""), kv(0, 47, "k06", "w47"),
		kv(0, 48, "k07", ""), kv(0, 50, "k20", "w50"), kv(0, 51, "k00", "w51"),
	}
	r2p1 := []table.Record{kv(1, 10, "k03", "")}
	// Round 3: one key of partition 0 only, and a deleted key back.
	r3p0 := []table.Record{kv(0, 53, "k10", "x53"), kv(0, 54, "k05", "x54")}
	return [][]table.Range{
		{{Partition: 0, From: 0, To: 40, Records: r1p0}, {Partition: 1, From: 0, To: 10, Records: r1p1}},
		{{Partition: 0, From: 40, To: 53, Records: r2p0}, {Partition: 1, From: 10, To: 12, Records: r2p1}},
		{{Partition: 0, From: 53, To: 55, Records: r3p0}},
	}
}

// TestCommitCompacted: a compacted topic's table holds, after each
// commit, exactly the latest row of every live (partition, key): an
// overwritten key's old row is gone, an untouched key's row stays, a
// tombstoned key has none; a retried or overlapping commit changes
// nothing; a commit of one key rewrites the one file holding its row.
func TestCommitCompacted(t *testing.T) {
	for _, be := range backends {
		for _, part := range []string{"", "none", "bucket[8](key)"} {
			t.Run(be.name+"/"+strings.NewReplacer("(", "_", ")", "", "[", "", "]", "").Replace(cmp(part, "default")), func(t *testing.T) {
				if be.slow && part != "bucket[8](key)" {
					t.Skip("one partitioning is enough on MinIO")
				}
				ctx := context.Background()
				store, root := be.open(t)
				tb := newTables(t, store, root, &catalog.MemCatalog{})
				if _, err := tb.Create(ctx, topic, table.Spec{Partitioning: part, Compacted: true}); err != nil {
					t.Fatal(err)
				}
				var all [][]table.Record
				for i, round := range compactedRounds() {
					res, err := tb.Commit(ctx, topic, round...)
					if err != nil {
						t.Fatalf("round %d: %v", i+1, err)
					}
					for _, r := range round {
						all = append(all, r.Records)
					}
					want := latest(all...)
					equalRecords(t, readAll(t, tb), want)
					// Exactly once: the same ranges again are skipped.
					again, err := tb.Commit(ctx, topic, round...)
					if err != nil || !again.Skipped || again.SnapshotID != res.SnapshotID {
						t.Fatalf("round %d again: %+v %v", i+1, again, err)
					}
					equalRecords(t, readAll(t, tb), want)
				}
				// A range overlapping the covered end writes only what is
				// new (offset 55), once.
				over := table.Range{Partition: 0, From: 50, To: 56, Records: []table.Record{
					kv(0, 50, "k20", "w50"), kv(0, 51, "k00", "w51"), kv(0, 53, "k10", "x53"), kv(0, 55, "k11", ""),
				}}
				if _, err := tb.Commit(ctx, topic, over); err != nil {
					t.Fatal(err)
				}
				all = append(all, over.Records[3:])
				equalRecords(t, readAll(t, tb), latest(all...))
				cov, err := tb.Covered(ctx, topic)
				if err != nil || cov[0] != 56 || cov[1] != 12 {
					t.Fatalf("covered %v %v", cov, err)
				}
				// One key changed: the one file holding its row is
				// rewritten, not the table.
				tbl, err := tb.Load(ctx, topic)
				if err != nil {
					t.Fatal(err)
				}
				sum := tbl.CurrentSnapshot().Summary.Properties
				if tbl.CurrentSnapshot().Summary.Operation != "overwrite" || sum["deleted-data-files"] != "1" ||
					sum["total-records"] != strconv.Itoa(len(latest(all...))) {
					t.Fatalf("a one-key commit's snapshot summary: %v", sum)
				}
			})
		}
	}
}

// TestCommitCompactedLosesRace: a compacted commit whose pointer moved
// underneath it redoes its overwrite on the winner's snapshot, so the
// winner's rows of other keys stay and no overwritten row survives.
func TestCommitCompactedLosesRace(t *testing.T) {
	ctx := context.Background()
	mem := &catalog.MemCatalog{}
	rc := &racingCatalog{Catalog: mem}
	store, root := backends[0].open(t)
	tb := newTables(t, store, root, rc)
	other := newTables(t, store, root, mem)
	if _, err := tb.Create(ctx, topic, table.Spec{Partitioning: "none", Compacted: true}); err != nil {
		t.Fatal(err)
	}
	rounds := compactedRounds()
	if _, err := tb.Commit(ctx, topic, rounds[0]...); err != nil {
		t.Fatal(err)
	}
	// Partition 1's round 2 wins the race against partition 0's.
	rc.n = 1
	rc.commit = func() error { _, err := other.Commit(ctx, topic, rounds[1][1]); return err }
	res, err := tb.Commit(ctx, topic, rounds[1][0])
	if err != nil || res.Attempts != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	equalRecords(t, readAll(t, tb), latest(rounds[0][0].Records, rounds[0][1].Records, rounds[1][0].Records, rounds[1][1].Records))
}

// TestReadersCompacted: PyIceberg and DuckDB read a compacted topic's
// table after the rounds as one row per live key, the latest.
func TestReadersCompacted(t *testing.T) {
	for _, rd := range readers {
		t.Run(rd.name, func(t *testing.T) {
			py := rd.python(t)
			ctx := context.Background()
			store, root, props := readerStores[0].open(t)
			tb := newTables(t, store, root, &catalog.MemCatalog{})
			if _, err := tb.Create(ctx, topic, table.Spec{Partitioning: "bucket[4](key)", Compacted: true}); err != nil {
				t.Fatal(err)
			}
			var all [][]table.Record
			for _, round := range compactedRounds() {
				if _, err := tb.Commit(ctx, topic, round...); err != nil {
					t.Fatal(err)
				}
				for _, r := range round {
					all = append(all, r.Records)
				}
			}
			tbl, err := tb.Load(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			out := runReader(t, py, []string{rd.script, tbl.MetadataLocation()}, props)
			equalRecords(t, out.rows, latest(all...))
		})
	}
}

// TestSetCompacted: a table created for every record (a topic whose
// cleanup.policy became compact) is rewritten once to the latest row per
// key, keeping its covered offsets, and later commits keep it so; turned
// off, later commits append every record again.
func TestSetCompacted(t *testing.T) {
	ctx := context.Background()
	store, root := backends[1].open(t)
	tb := newTables(t, store, root, &catalog.MemCatalog{})
	if _, err := tb.Create(ctx, topic, table.Spec{}); err != nil {
		t.Fatal(err)
	}
	rounds := compactedRounds()
	var all [][]table.Record
	for _, round := range rounds[:2] {
		if _, err := tb.Commit(ctx, topic, round...); err != nil {
			t.Fatal(err)
		}
		for _, r := range round {
			all = append(all, r.Records)
		}
	}
	if got := len(readAll(t, tb)); got != 40+10+11+1 {
		t.Fatalf("%d rows before", got)
	}
	if changed, err := tb.SetCompacted(ctx, topic, true); err != nil || !changed {
		t.Fatalf("set compacted: %v %v", changed, err)
	}
	equalRecords(t, readAll(t, tb), latest(all...))
	if changed, err := tb.SetCompacted(ctx, topic, true); err != nil || changed {
		t.Fatalf("set compacted again: %v %v", changed, err)
	}
	cov, err := tb.Covered(ctx, topic)
	if err != nil || cov[0] != 53 || cov[1] != 12 {
		t.Fatalf("covered %v %v", cov, err)
	}
	if _, err := tb.Commit(ctx, topic, rounds[2]...); err != nil {
		t.Fatal(err)
	}
	all = append(all, rounds[2][0].Records)
	want := latest(all...)
	equalRecords(t, readAll(t, tb), want)
	if changed, err := tb.SetCompacted(ctx, topic, false); err != nil || !changed {
		t.Fatalf("set compacted off: %v %v", changed, err)
	}
	more := []table.Record{kv(0, 55, "k10", "y55"), kv(0, 56, "k10", "y56")}
	if _, err := tb.Commit(ctx, topic, table.Range{Partition: 0, From: 55, To: 57, Records: more}); err != nil {
		t.Fatal(err)
	}
	want = append(want, more...)
	slices.SortFunc(want, func(a, b table.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	equalRecords(t, readAll(t, tb), want)
}

// TestCommitCompactedManyKeys: commits of more keys than one IN of the
// rewrite's filter holds (200), and of more than the filter checks
// against file bounds at all (2,000), keep exactly the latest row per
// key.
func TestCommitCompactedManyKeys(t *testing.T) {
	ctx := context.Background()
	store, root := backends[0].open(t)
	tb := newTables(t, store, root, &catalog.MemCatalog{})
	if _, err := tb.Create(ctx, topic, table.Spec{Partitioning: "bucket[4](key)", Compacted: true}); err != nil {
		t.Fatal(err)
	}
	var all [][]table.Record
	var off int64
	for round := range 4 {
		var recs []table.Record
		for i := range 1500 {
			if round == 3 && i == 0 {
				// Past boundKeys: one IN, no bounds.
				for j := range 2500 {
					recs = append(recs, kv(0, off, fmt.Sprintf("many-%05d", j), "m"))
					off++
				}
			}
			k := (i*7 + round*131) % 900
			v := fmt.Sprintf("r%d-%d", round, i)
			if round > 0 && i%11 == 0 {
				v = "" // a tombstone
			}
			recs = append(recs, kv(0, off, fmt.Sprintf("key-%04d", k), v))
			off++
		}
		if _, err := tb.Commit(ctx, topic, table.Range{Partition: 0, From: off - int64(len(recs)), To: off, Records: recs}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		all = append(all, recs)
		equalRecords(t, readAll(t, tb), latest(all...))
	}
}
