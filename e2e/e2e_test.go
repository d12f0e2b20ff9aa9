// Package e2e holds floe's end-to-end tests: real broker processes or
// in-process nodes, real object stores (directory, MinIO) and real Kafka
// clients (franz-go) over TCP on 127.0.0.1.
package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// recentBase is a workload's base time: now, to the millisecond. Records
// stamped long ago would be deleted by retention.ms (7 days by default)
// within a tier round, as Kafka deletes them.
func recentBase() time.Time { return time.Now().Truncate(time.Millisecond) }

// workload is a deterministic set of records spread round-robin over a
// topic's partitions, so that every record's offset is known in advance.
type workload struct {
	topic      string
	partitions int32
	records    int
	baseTime   time.Time
}

func (w workload) key(i int) []byte { return fmt.Appendf(nil, "k-%07d", i) }

func (w workload) value(i int) []byte {
	v := fmt.Appendf(nil, "value-%07d-", i)
	for len(v) < 100 {
		v = append(v, byte('a'+i%26))
	}
	return v
}

func (w workload) timestamp(i int) time.Time {
	return w.baseTime.Add(time.Duration(i) * time.Millisecond)
}

func (w workload) partition(i int) int32 { return int32(i) % w.partitions }

// offset is the offset record i gets: records reach a partition in order.
func (w workload) offset(i int) int64 { return int64(i) / int64(w.partitions) }

func (w workload) record(i int) *kgo.Record {
	var h [8]byte
	binary.BigEndian.PutUint64(h[:], uint64(i))
	return &kgo.Record{
		Topic:     w.topic,
		Partition: w.partition(i),
		Key:       w.key(i),
		Value:     w.value(i),
		Timestamp: w.timestamp(i),
		Headers:   []kgo.RecordHeader{{Key: "idx", Value: h[:]}, {Key: "empty"}},
	}
}

// produce sends every record of w through cl and fails on any error.
func (w workload) produce(t *testing.T, cl *kgo.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	errs := make(chan error, 1)
	for i := range w.records {
		cl.Produce(ctx, w.record(i), func(r *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- fmt.Errorf("produce record %s: %w", r.Key, err):
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// consumeAndCheck reads the whole topic from the start and checks every
// record: key, value, headers, timestamp, and its offset.
func (w workload) consumeAndCheck(t *testing.T, seeds string) {
	t.Helper()
	parts := make(map[int32]kgo.Offset, w.partitions)
	for p := range w.partitions {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: parts}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	next := make(map[int32]int64, w.partitions)
	got := 0
	for got < w.records {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before timeout", got, w.records)
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !kerr.IsRetriable(err) {
				t.Fatalf("fetch %s/%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d (contiguous from 0)", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			i := int(r.Offset)*int(w.partitions) + int(r.Partition)
			want := w.record(i)
			if !bytes.Equal(r.Key, want.Key) || !bytes.Equal(r.Value, want.Value) {
				t.Fatalf("partition %d offset %d: key %q value %q, want %q %q", r.Partition, r.Offset, r.Key, r.Value, want.Key, want.Value)
			}
			if !r.Timestamp.Equal(want.Timestamp) {
				t.Fatalf("record %d: timestamp %v, want %v", i, r.Timestamp, want.Timestamp)
			}
			if len(r.Headers) != 2 || r.Headers[0].Key != "idx" || !bytes.Equal(r.Headers[0].Value, want.Headers[0].Value) ||
				r.Headers[1].Key != "empty" || len(r.Headers[1].Value) != 0 {
				t.Fatalf("record %d: headers %v, want %v", i, r.Headers, want.Headers)
			}
			got++
		})
	}
	if got != w.records {
		t.Fatalf("consumed %d records, want %d", got, w.records)
	}
}

// checkListOffsets checks earliest, latest and by-timestamp offsets.
func (w workload) checkListOffsets(t *testing.T, adm *kadm.Client) {
	t.Helper()
	ctx := context.Background()
	perPartition := int64(w.records) / int64(w.partitions)
	start, err := adm.ListStartOffsets(ctx, w.topic)
	if err != nil {
		t.Fatal(err)
	}
	end, err := adm.ListEndOffsets(ctx, w.topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := range w.partitions {
		if o, _ := start.Lookup(w.topic, p); o.Err != nil || o.Offset != 0 {
			t.Errorf("partition %d: earliest %d (%v), want 0", p, o.Offset, o.Err)
		}
		if o, _ := end.Lookup(w.topic, p); o.Err != nil || o.Offset != perPartition {
			t.Errorf("partition %d: latest %d (%v), want %d", p, o.Offset, o.Err, perPartition)
		}
	}
	// Record i has timestamp base+i ms, so the first record at or after it in
	// partition p is the first index >= i that lands in p.
	for _, i := range []int{0, 1, w.records / 3, w.records - 1} {
		after, err := adm.ListOffsetsAfterMilli(ctx, w.timestamp(i).UnixMilli(), w.topic)
		if err != nil {
			t.Fatal(err)
		}
		for p := range w.partitions {
			j := i
			for w.partition(j) != p {
				j++
			}
			want := w.offset(j)
			if j >= w.records {
				want = perPartition // no such record: Kafka answers the log end
			}
			o, _ := after.Lookup(w.topic, p)
			if o.Err != nil || o.Offset != want {
				t.Errorf("partition %d: offset after ts of record %d = %d (%v), want %d", p, i, o.Offset, o.Err, want)
			}
		}
	}
}

// errorsIs is errors.Is for Kafka errors that kadm may return by value.
func errorsIs(err error, target *kerr.Error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && ke.Code == target.Code
}

// alterTopicConfigs sets topic's configs (name, value pairs) with
// IncrementalAlterConfigs, and fails t on any error, the topic's own
// included (AlterTopicConfigs returns it in the response, not as its
// error).
func alterTopicConfigs(t testing.TB, ctx context.Context, adm *kadm.Client, topic string, nameValues ...string) {
	t.Helper()
	if len(nameValues)%2 != 0 {
		t.Fatalf("alterTopicConfigs(%s): %d arguments, want name, value pairs", topic, len(nameValues))
	}
	var alters []kadm.AlterConfig
	for i := 0; i < len(nameValues); i += 2 {
		alters = append(alters, kadm.AlterConfig{Name: nameValues[i], Value: kadm.StringPtr(nameValues[i+1])})
	}
	rs, err := adm.AlterTopicConfigs(ctx, alters, topic)
	if err == nil {
		_, err = rs.On(topic, func(r *kadm.AlterConfigsResponse) error { return r.Err })
	}
	if err != nil {
		t.Fatalf("alter %s's configs %v: %v", topic, nameValues, err)
	}
}
