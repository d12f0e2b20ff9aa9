package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/record"
)

// viewRecord is one record of the hierarchical views test, by key.
type viewRecord struct {
	key, value string
	offset     int64
}

// readView reads partition 0 of topic from offset 0 up to end (its base
// topic's end offset) with raw Fetch requests (the client's version, by
// topic id from v13: a view's id as its Metadata names it), checking each
// batch's CRC, and returns the records: a view's keep the base topic's
// offsets, and every answer moves the next offset on, an emptied last
// batch included.
func readView(t *testing.T, addr, topic string, end int64) []viewRecord {
	t.Helper()
	var out []viewRecord
	for next := int64(0); next < end; {
		p := rawFetch(t, addr, topic, next)
		if p.ErrorCode != 0 {
			t.Fatalf("%s at %d: %s", topic, next, kerr.ErrorForCode(p.ErrorCode))
		}
		data := p.RecordBatches
		if len(data) == 0 {
			t.Fatalf("%s at %d (end %d): an empty answer, the consumer cannot move on", topic, next, end)
		}
		for len(data) > 0 {
			h, err := record.ParseHeader(data)
			if err == nil && h.Size() > len(data) {
				err = fmt.Errorf("a batch of %d bytes, %d left", h.Size(), len(data))
			}
			if err == nil {
				_, err = record.ValidateStored(data[:h.Size()])
			}
			if err != nil {
				t.Fatalf("%s at %d: %v", topic, next, err)
			}
			b := data[:h.Size()]
			data = data[h.Size():]
			if h.BaseOffset < next && h.BaseOffset+int64(h.LastOffsetDelta) < next {
				continue
			}
			if !h.Control() {
				err = record.Records(b, func(r *record.Record) error {
					if off := h.BaseOffset + int64(r.OffsetDelta); off >= next {
						out = append(out, viewRecord{string(r.Key), string(r.Value), off})
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%s: batch at %d: %v", topic, h.BaseOffset, err)
				}
			}
			next = h.BaseOffset + int64(h.LastOffsetDelta) + 1
		}
	}
	return out
}

// TestHierarchicalViews follows the hierarchical-topics text's example on
// MinIO with real clients: records under "CC54 RYD", "NN03 RYB" and other
// plates, produced in batches of every codec that mix the keys, on a topic
// with hierarchical.enabled. The base topic returns all of them; each
// "telemetry/<plate>" returns exactly its records with their base offsets
// (franz-go and kcat); a plate that never appeared returns an empty
// partition; a topic with a '/' in its name but no config streams all its
// records; producing to a view is refused; a consumer group on a view
// commits, restarts and resumes without reading again; and a view's fetch
// reads only the batches holding its key (checkViewPostings).
func TestHierarchicalViews(t *testing.T) {
	c := floetest.RunCluster(t, 1)
	addr := c.Brokers[0].KafkaAddr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newFranzClient(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"hierarchical.enabled": kadm.StringPtr("true")}, "telemetry"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "fleet/all"); err != nil { // a literal '/'
		t.Fatal(err)
	}
	plates := []string{"CC54 RYD", "NN03 RYB", "AB12 XYZ"}
	var want []viewRecord
	offset := int64(0)
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		cl := newFranzClient(t, addr, kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(50*time.Millisecond),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		var recs []*kgo.Record
		for i := range 6 {
			plate := plates[i%len(plates)]
			if i == 5 {
				plate = plates[0] // CC54 RYD thrice a batch
			}
			v := fmt.Sprintf(`{"plate":%q,"n":%d,"pad":%q}`, plate, offset, strings.Repeat("x", 200))
			recs = append(recs, &kgo.Record{Topic: "telemetry", Key: []byte(plate), Value: []byte(v)})
			want = append(want, viewRecord{plate, v, offset})
			offset++
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fleet/all", Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	end := offset

	if got := readView(t, addr, "telemetry", end); len(got) != len(want) {
		t.Fatalf("base topic: %d records, want %d", len(got), len(want))
	}
	for _, plate := range plates {
		var exp []viewRecord
		for _, r := range want {
			if r.key == plate {
				exp = append(exp, r)
			}
		}
		got := readView(t, addr, "telemetry/"+plate, end)
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Errorf("telemetry/%s: got %d records %v, want %d with the base offsets", plate, len(got), offsetsOf(got), len(exp))
		}
		// librdkafka: kcat reads the view by name to its end.
		out, stderr := runKcat(t, 30*time.Second, "", "-C", "-b", addr, "-t", "telemetry/"+plate, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %k\n")
		checkKcatStderr(t, stderr)
		var lines []string
		for _, r := range exp {
			lines = append(lines, fmt.Sprintf("%d %s", r.offset, r.key))
		}
		if strings.TrimSpace(out) != strings.Join(lines, "\n") {
			t.Errorf("kcat telemetry/%s:\n%s\nwant\n%s", plate, out, strings.Join(lines, "\n"))
		}
	}
	// A plate never seen: an empty partition with the base's offsets.
	if got := readView(t, addr, "telemetry/ZZ99 ZZZ", end); len(got) != 0 {
		t.Errorf("a key never written: %d records", len(got))
	}
	ends, err := adm.ListEndOffsets(ctx, "telemetry/ZZ99 ZZZ")
	if err != nil || ends["telemetry/ZZ99 ZZZ"][0].Offset != end {
		t.Errorf("ListOffsets of a view: %v %v, want the base's end %d", ends, err, end)
	}
	// Without the config a '/' is part of the name.
	if got := readView(t, addr, "fleet/all", 5); len(got) != 5 {
		t.Errorf("fleet/all: %d records, want its 5", len(got))
	}
	// A view is read-only.
	prod := newFranzClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(0))
	err = prod.ProduceSync(ctx, &kgo.Record{Topic: "telemetry/CC54 RYD", Value: []byte("no")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("produce to a view: %v, want INVALID_TOPIC_EXCEPTION", err)
	}

	// A group on a view commits, restarts and resumes where it was.
	view := "telemetry/NN03 RYB"
	group := func() *kgo.Client {
		return newFranzClient(t, addr, kgo.ConsumeTopics(view), kgo.ConsumerGroup("dashboard"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond))
	}
	g := group()
	var first []int64
	for len(first) < 4 {
		fs := g.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group read %v", first)
		}
		fs.EachRecord(func(r *kgo.Record) { first = append(first, r.Offset) })
	}
	// Commit after the first four records, then start again.
	if err := g.CommitRecords(ctx, &kgo.Record{Topic: view, Partition: 0, Offset: first[3]}); err != nil {
		t.Fatal(err)
	}
	g.Close()
	g = group()
	var resumed []int64
	for len(resumed) == 0 { // a poll may bring only a (retried) error
		fs := g.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after a restart the group read nothing")
		}
		fs.EachRecord(func(r *kgo.Record) { resumed = append(resumed, r.Offset) })
	}
	if resumed[0] <= first[3] {
		t.Errorf("after a restart the group read %v, want to resume after %d", resumed, first[3])
	}
	g.Close()

	checkViewPostings(t, c)
}

func offsetsOf(rs []viewRecord) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.offset
	}
	return out
}
