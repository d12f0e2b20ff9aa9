package coordinator

import (
	"context"
	"encoding/binary"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/internal/pebblelog"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/valenc"
)

// appendBatchValueV1 encodes a format 1 batch value.
func appendBatchValueV1(b []byte, v *layout.BatchV1) []byte {
	b = append(b, layout.ValueV1)
	var flags byte
	if v.LogAppendTime {
		flags |= layout.BatchFlagLogAppendTime
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, v.Object)
	b = binary.AppendUvarint(b, uint64(v.ByteOffset))
	b = binary.AppendUvarint(b, uint64(v.ByteLength))
	b = binary.AppendUvarint(b, uint64(v.LastOffsetDelta))
	return binary.AppendVarint(b, v.MaxTimestamp)
}

// downgradeToFormat1 rewrites a closed coordinator's state as format 1
// wrote it: a key per batch, every partition and producer state in its
// record. parts and producers are the state in memory before closing.
func downgradeToFormat1(t *testing.T, dir string, parts map[partKey]partState, producers map[producerStateKey]producerState) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebblelog.New(testkit.Logger(), "coordinator")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := db.NewBatch()
	lower, upper := layout.FamilyBounds(layout.PrefixBatch)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		t.Fatal(err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		last, err := layout.DecodeBatchKey(k)
		if err != nil {
			t.Fatal(err)
		}
		h, run, _, err := layout.DecodeBatchRun(last, it.Value(), nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = b.Delete(k, nil)
		var id coordapi.TopicID
		copy(id[:], k[1:17])
		partition := int32(binary.BigEndian.Uint32(k[17:21]))
		for _, bc := range run {
			_ = b.Set(layout.BatchKey(id, partition, bc.LastOffset), appendBatchValueV1(nil, &layout.BatchV1{
				Object: h.Object, ByteOffset: bc.ByteOffset, ByteLength: bc.ByteLength,
				LastOffsetDelta: int32(bc.LastOffset - bc.BaseOffset), MaxTimestamp: bc.MaxTimestamp, LogAppendTime: h.LogAppendTime,
			}), nil)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for pk, st := range parts {
		_ = b.Set(layout.PartitionKey(pk.topic, pk.partition), encodePartitionV1(&st), nil)
	}
	for prk, ps := range producers {
		_ = b.Set(layout.ProducerKey(prk.producerID, prk.topic, prk.partition), layout.EncodeProducer(&ps.Producer), nil)
	}
	_ = b.Set(layout.KeyFormatVersion, layout.EncodeUint64(layout.FormatVersion1), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

// encodePartitionV1 encodes a partition checkpoint as formats 1 and 2
// wrote it: no tier fields, no bytes.
func encodePartitionV1(p *partState) []byte {
	b := []byte{layout.ValueV1}
	b = binary.AppendVarint(b, p.logStart)
	b = binary.AppendVarint(b, p.hwm)
	b = binary.AppendVarint(b, p.maxTimestamp)
	b = binary.AppendVarint(b, p.maxTimestampOffset)
	return binary.AppendVarint(b, p.maxTimestampLast)
}

// TestMigrateFormat2 opens a format 2 state, whose partition checkpoints
// have no tier fields and whose runs since them are replayed: each
// partition's bytes are counted, its WAL start is its log start, and the
// state is format 3, the same after another restart.
func TestMigrateFormat2(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.topic("a", 2, nil)
	for i := range 40 { // past checkpointRuns: some runs replay, some are below a checkpoint
		e.commit("o"+strconv.Itoa(i), plain(a.ID, 0, 2), idem(a.ID, 1, 0, 1, 0, int32(i)))
	}
	if _, err := e.c.DeleteRecords(ctx, a.ID, 0, 7); err != nil {
		t.Fatal(err)
	}
	before := snapshotState(t, e.c)
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open(e.opts.Dir, &pebble.Options{Logger: pebblelog.New(testkit.Logger(), "coordinator")})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Set(layout.KeyFormatVersion, layout.EncodeUint64(layout.FormatVersion2), pebble.Sync)
	// Every checkpoint back in the old layout, as format 2 wrote it.
	lower, upper := layout.FamilyBounds(layout.PrefixPartition)
	it, _ := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	for valid := it.First(); valid && err == nil; valid = it.Next() {
		var st partState
		st, _, err = decodePartition(it.Value())
		if err == nil {
			err = db.Set(slices.Clone(it.Key()), encodePartitionV1(&st), pebble.Sync)
		}
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	e.open()
	after := snapshotState(t, e.c)
	if !reflect.DeepEqual(before.Tiers, after.Tiers) || !reflect.DeepEqual(before.Finds, after.Finds) || !reflect.DeepEqual(before.Parts, after.Parts) {
		t.Errorf("migration changed the partitions:\nbefore %+v %+v\nafter  %+v %+v", before.Tiers, before.Parts, after.Tiers, after.Parts)
	}
	if got := after.Tiers["a/0"]; [4]int64(got[:4]) != [4]int64{7, 38 * batchLen, 0, 0} {
		// 40 batches of 3 records; DeleteRecords(7) dropped the two wholly below 7.
		t.Errorf("a/0 tiers %v, want WAL start 7, %d bytes, no segments", got, 38*batchLen)
	}
	v, closer, err := e.c.db.Get(layout.KeyFormatVersion)
	if err != nil {
		t.Fatal(err)
	}
	if ver, _ := layout.DecodeUint64("format", v); ver != layout.FormatVersion {
		t.Errorf("format %d after migration", ver)
	}
	_ = closer.Close()
	before = snapshotState(t, e.c)
	e.reopen()
	if again := snapshotState(t, e.c); !reflect.DeepEqual(before, again) {
		t.Errorf("state changed across restart after migration:\nbefore %+v\nafter  %+v", before, again)
	}
}

// TestMigrateFormat1 opens a format 1 state: it is migrated to runs, and
// everything reads as before.
func TestMigrateFormat1(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.topic("a", 2, nil)
	l := e.topic("l", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	for i := range 5 {
		batches := []coordapi.CommitBatch{plain(a.ID, 0, 2), idem(a.ID, 1, 0, 1, 0, int32(2*i)), idem(a.ID, 1, 0, 1, 0, int32(2*i+1)), plain(l.ID, 0, 4)}
		batches[0].MaxTimestamp = int64(100 - i)
		e.commit("o"+string(rune('0'+i)), batches...)
	}
	if _, err := e.c.DeleteRecords(ctx, a.ID, 1, 3); err != nil {
		t.Fatal(err)
	}
	before := snapshotState(t, e.c)
	parts := map[partKey]partState{}
	for _, tp := range e.c.mu.topicsByID {
		for p, st := range tp.parts {
			parts[partKey{tp.id, int32(p)}] = st
		}
	}
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeToFormat1(t, e.opts.Dir, parts, before.Producers)

	e.open()
	after := snapshotState(t, e.c)
	// Format 1 checkpointed everything.
	for k, ps := range before.Producers {
		ps.dirty = false
		before.Producers[k] = ps
	}
	before.Logs = map[partKey]partLog{}
	// Runs are re-encoded (a batch each): their encoded bytes differ.
	for _, st := range []coordState{before, after} {
		for k, v := range st.Tiers {
			v[4] = 0
			st.Tiers[k] = v
		}
	}
	v1, v2 := reflect.ValueOf(before), reflect.ValueOf(after)
	for f := 0; f < v1.NumField(); f++ {
		if !reflect.DeepEqual(v1.Field(f).Interface(), v2.Field(f).Interface()) {
			t.Errorf("%s changed by migration:\nbefore %+v\nafter  %+v", v1.Type().Field(f).Name, v1.Field(f).Interface(), v2.Field(f).Interface())
		}
	}
	// Migrated: the format is 2 and a reopen reads it again.
	v, closer, err := e.c.db.Get(layout.KeyFormatVersion)
	if err != nil {
		t.Fatal(err)
	}
	if ver, _ := layout.DecodeUint64("format", v); ver != layout.FormatVersion {
		t.Errorf("format %d after migration", ver)
	}
	_ = closer.Close()
	e.commit("o9", idem(a.ID, 1, 0, 1, 0, 10))
	before = snapshotState(t, e.c)
	e.reopen()
	if after := snapshotState(t, e.c); !reflect.DeepEqual(before, after) {
		t.Errorf("state changed across restart after migration:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestUnknownFormatRefused(t *testing.T) {
	e := newEnv(t)
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open(e.opts.Dir, &pebble.Options{Logger: pebblelog.New(testkit.Logger(), "coordinator")})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(layout.KeyFormatVersion, layout.EncodeUint64(layout.FormatVersion+1), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	c, err := Open(e.opts)
	if err == nil {
		_ = c.Close()
		t.Fatal("opened a state of an unknown format")
	}
	if !strings.Contains(err.Error(), "state format 4") {
		t.Errorf("error %v does not name the format", err)
	}
	e.c = nil
}

// TestDecodePartitionFormats decodes a partition checkpoint of each format:
// formats 1 and 2 have no cleaner state (never cleaned), format 3 keeps it.
func TestDecodePartitionFormats(t *testing.T) {
	st := partState{logStart: 3, hwm: 40, maxTimestamp: 7, maxTimestampOffset: 39, maxTimestampLast: 39,
		walStart: 20, bytes: 900, segBytes: 500, segments: 2, metaBytes: 77, cleanOffset: 15, horizonMs: 12345, cleanedMs: 999}
	v2 := []byte{valenc.Version2}
	for _, x := range []int64{st.logStart, st.hwm, st.maxTimestamp, st.maxTimestampOffset, st.maxTimestampLast, st.walStart, st.bytes, st.segBytes, st.segments, st.metaBytes} {
		v2 = binary.AppendVarint(v2, x)
	}
	never := st
	never.cleanOffset, never.horizonMs, never.cleanedMs = 0, -1, -1
	v1 := never
	v1.walStart, v1.bytes, v1.segBytes, v1.segments, v1.metaBytes = v1.logStart, 0, 0, 0, 0
	for _, tc := range []struct {
		name   string
		v      []byte
		want   partState
		wantV1 bool
	}{
		{"format1", encodePartitionV1(&st), v1, true},
		{"format2", v2, never, false},
		{"format3", st.encode(), st, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isV1, err := decodePartition(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || isV1 != tc.wantV1 {
				t.Fatalf("got %+v (v1 %t), want %+v (v1 %t)", got, isV1, tc.want, tc.wantV1)
			}
		})
	}
	if _, _, err := decodePartition(append(st.encode(), 0)); err == nil {
		t.Fatal("a format 3 checkpoint with a trailing byte decoded")
	}
}

// decodePartition decodes a checkpoint into the partition state it holds.
func decodePartition(v []byte) (partState, bool, error) {
	p, v1, err := layout.DecodePartition(v)
	return partStateOf(p), v1, err
}
