package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/record"
)

// keyedBatch is one producer batch for produceBatches: its records' keys
// and values.
type keyedBatch struct {
	keys   []string
	values [][]byte
}

// produceBatches produces batches, in order, to partition 0 of topic at
// addr with raw Produce requests (acks=all) of about 1 MiB each, every
// batch as its own record batch, the way producers that flush per key (or
// per device) send them. It returns each batch's length in bytes as
// stored.
func produceBatches(t testing.TB, addr, topic string, codec record.Codec, batches []keyedBatch) []int {
	t.Helper()
	return produceGenerated(t, addr, topic, codec, 1, len(batches), func(i int) keyedBatch { return batches[i] })
}

// produceGenerated is produceBatches of the n batches gen returns, with up
// to inflight Produce requests at once (their batches land in the order the
// requests commit).
func produceGenerated(t testing.TB, addr, topic string, codec record.Codec, inflight, n int, gen func(i int) keyedBatch) []int {
	t.Helper()
	cl := pinnedClient(t, addr, kgo.ProduceRequestTimeout(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	lens := make([]int, 0, n)
	var (
		pending []byte
		wg      sync.WaitGroup
		sem     = make(chan struct{}, max(inflight, 1))
		errs    = make(chan error, 1)
	)
	send := func(records []byte) {
		defer wg.Done()
		defer func() { <-sem }()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 60000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
				err = kerr.ErrorForCode(code)
			}
		}
		if err != nil {
			select {
			case errs <- fmt.Errorf("produce: %w", err):
			default:
			}
		}
	}
	flush := func() {
		if len(pending) == 0 {
			return
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		sem <- struct{}{}
		wg.Add(1)
		go send(pending)
		pending = nil
	}
	for i := range n {
		kb := gen(i)
		recs := make([]record.Record, len(kb.keys))
		for i := range kb.keys {
			recs[i] = record.Record{Key: []byte(kb.keys[i]), Value: kb.values[i]}
		}
		data, err := record.Build(record.BuildOptions{Codec: codec, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
			PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()}, recs)
		if err != nil {
			t.Fatal(err)
		}
		lens = append(lens, len(data))
		pending = append(pending, data...)
		if len(pending) >= 1<<20 {
			flush()
		}
	}
	flush()
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	return lens
}

// objectStoreGetBytes is the bytes a floe process has read from the object
// store (floe.objectstore.bytes, op=get, on its /metrics), 0 before its
// first read.
func objectStoreGetBytes(t testing.TB, httpAddr string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "floe_objectstore_bytes") || !strings.Contains(line, `op="get"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return int64(sum)
}

// deviceBatches returns the batches of devices devices flushing rounds
// times each, a batch of perBatch readings of valueBytes per device per
// round, the devices of a round one after another: keyed device telemetry
// as a producer flushing per device sends it.
func deviceBatches(devices, rounds, perBatch, valueBytes int) []keyedBatch {
	var out []keyedBatch
	for r := range rounds {
		for d := range devices {
			kb := keyedBatch{keys: make([]string, perBatch), values: make([][]byte, perBatch)}
			for i := range perBatch {
				kb.keys[i] = deviceKey(d)
				kb.values[i] = deviceValue(d, r*perBatch+i, valueBytes)
			}
			out = append(out, kb)
		}
	}
	return out
}

// interleavedBatches returns the fully interleaved pattern: every batch
// holds one reading of each of the devices.
func interleavedBatches(devices, rounds, valueBytes int) []keyedBatch {
	out := make([]keyedBatch, rounds)
	for r := range out {
		kb := keyedBatch{keys: make([]string, devices), values: make([][]byte, devices)}
		for d := range devices {
			kb.keys[d] = deviceKey(d)
			kb.values[d] = deviceValue(d, r, valueBytes)
		}
		out[r] = kb
	}
	return out
}

func deviceKey(d int) string { return fmt.Sprintf("dev-%04d", d) }

// deviceValue is a JSON-ish reading of about n bytes.
func deviceValue(d, seq, n int) []byte {
	v := fmt.Appendf(nil, `{"device":%d,"seq":%d,"speed":%d,"pad":"`, d, seq, (d*31+seq*7)%130)
	for len(v) < n-2 {
		v = append(v, byte('a'+(seq+len(v))%26))
	}
	return append(v, '"', '}')
}

// checkViewPostings proves a view's fetch takes the posting path on
// MinIO: devices flushing per device fill a hierarchical topic, and a
// fresh broker (a cold cache; it stops the first broker) answers one
// device's view, to raw Fetch, kcat, a franz-go consumer and a KIP-848
// group, reading from the object store about that
// device's batches, far below the partition's bytes.
func checkViewPostings(t *testing.T, c *floetest.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := c.Brokers[0].KafkaAddr
	adm := newFranzClient(t, addr)
	const topic, devices, rounds, perBatch = "fleet", 40, 5, 20
	createHierarchical(t, ctx, adm, topic)
	batches := deviceBatches(devices, rounds, perBatch, 300)
	lens := produceBatches(t, addr, topic, record.CodecNone, batches)
	end := int64(devices * rounds * perBatch)
	key := deviceKey(7)
	var keyBytes, partBytes int64
	var want []string
	for i, kb := range batches {
		partBytes += int64(lens[i])
		if kb.keys[0] == key {
			keyBytes += int64(lens[i])
			for j := range kb.keys {
				want = append(want, fmt.Sprintf("%d %s", int64(i*perBatch+j), key))
			}
		}
	}

	// A fresh broker, alone (the producing one stopped, so that clients
	// following Metadata fetch from it): its cache is cold.
	fresh := c.AddBroker(len(c.Brokers) + 1)
	c.Brokers[0].Stop()
	testkit.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		ids, _, err := metadataBrokers(ctx, fresh.KafkaAddr, "")
		if err == nil && len(ids) != 1 {
			err = fmt.Errorf("metadata names brokers %v", ids)
		}
		return err
	})
	read := func(what string, fn func()) {
		t.Helper()
		before := objectStoreGetBytes(t, fresh.HTTPAddr)
		fn()
		got := objectStoreGetBytes(t, fresh.HTTPAddr) - before
		t.Logf("%s: read %d bytes from the object store; the key's batches hold %d, the partition %d", what, got, keyBytes, partBytes)
		if got > 2*keyBytes || got*10 > partBytes {
			t.Errorf("%s read %d bytes from the object store, want within 2x of the key's batches (%d) and far below the partition's %d",
				what, got, keyBytes, partBytes)
		}
	}
	read("raw fetch", func() {
		got := readView(t, fresh.KafkaAddr, topic+"/"+key, end)
		if len(got) != len(want) {
			t.Errorf("raw fetch of %s/%s: %d records, want %d", topic, key, len(got), len(want))
		}
	})
	read("kcat", func() {
		out, stderr := runKcat(t, 30*time.Second, "", "-C", "-b", fresh.KafkaAddr, "-t", topic+"/"+key, "-p", "0",
			"-o", "beginning", "-e", "-q", "-f", "%o %k\n")
		checkKcatStderr(t, stderr)
		if strings.TrimSpace(out) != strings.Join(want, "\n") {
			t.Errorf("kcat %s/%s: %d lines, want %d", topic, key, len(strings.Split(strings.TrimSpace(out), "\n")), len(want))
		}
	})
	franz := func(what string, opts ...kgo.Opt) {
		read(what, func() {
			cl := newFranzClient(t, fresh.KafkaAddr, append([]kgo.Opt{kgo.ConsumeTopics(topic + "/" + key),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
			var got []string
			for len(got) < len(want) {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("%s read %d of %d records of %s/%s", what, len(got), len(want), topic, key)
				}
				fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d %s", r.Offset, r.Key)) })
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s %s/%s: %v", what, topic, key, got)
			}
		})
	}
	franz("franz-go")
	// A KIP-848 group: the coordinator assigns the view's partition.
	franz("franz-go KIP-848 group", kgo.ConsumerGroup("fleet-dashboard"), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ServerSideBalancer())
}

// createHierarchical creates topic with one partition,
// hierarchical.enabled and the configs given as name, value pairs.
func createHierarchical(t testing.TB, ctx context.Context, cl *kgo.Client, topic string, configs ...string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, -1
	configs = append([]string{"hierarchical.enabled", "true"}, configs...)
	for i := 0; i+1 < len(configs); i += 2 {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create %s: %v", topic, kerr.ErrorForCode(code))
	}
}

// TestHierarchicalViewsTiered: once consolidation has moved a hierarchical
// topic's batches into segments (and the collector deleted the WAL
// objects), a view's fetch finds its key's batches inside the segments
// through their indexes and reads them alone: a cold broker answers raw
// Fetch and kcat with exactly the key's records, reading from the object
// store the key's batches, the segment's indexes, and per batch the window
// of headers from the offset index entry before it (up to an index
// interval, 4 KiB by default), far below the partition.
func TestHierarchicalViewsTiered(t *testing.T) {
	c := tierCluster(t, 1, 4*time.Second) // a tier job's lease is half the grace
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic, devices, rounds, perBatch = "fleet", 60, 4, 20
	createHierarchical(t, ctx, newFranzClient(t, c.Brokers[0].KafkaAddr), topic,
		"local.retention.ms", "300", "retention.ms", "-1", "segment.bytes", "1048576")
	batches := deviceBatches(devices, rounds, perBatch, 200)
	lens := produceBatches(t, c.Brokers[0].KafkaAddr, topic, record.CodecLZ4, batches)
	waitConsolidated(t, c, topic, 1, time.Minute)
	store := c.MinIO.Store(t)
	testkit.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		if wal := bucketKeys(t, store, "wal/"); len(wal) > 0 {
			return fmt.Errorf("%d WAL objects left", len(wal))
		}
		return nil
	})
	end := int64(devices * rounds * perBatch)
	key := deviceKey(11)
	var keyBytes, partBytes int64
	var want []string
	for i, kb := range batches {
		partBytes += int64(lens[i])
		if kb.keys[0] == key {
			keyBytes += int64(lens[i])
			for j := range kb.keys {
				want = append(want, fmt.Sprintf("%d %s", i*perBatch+j, key))
			}
		}
	}
	fresh := c.AddBroker(2)
	c.Brokers[0].Stop()
	testkit.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		ids, _, err := metadataBrokers(ctx, fresh.KafkaAddr, "")
		if err == nil && len(ids) != 1 {
			err = fmt.Errorf("metadata names brokers %v", ids)
		}
		return err
	})
	before := objectStoreGetBytes(t, fresh.HTTPAddr)
	got := readView(t, fresh.KafkaAddr, topic+"/"+key, end)
	read := objectStoreGetBytes(t, fresh.HTTPAddr) - before
	var lines []string
	for _, r := range got {
		lines = append(lines, fmt.Sprintf("%d %s", r.offset, r.key))
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("raw fetch of %s/%s from segments: %d records, want %d", topic, key, len(got), len(want))
	}
	t.Logf("from segments: read %d bytes; the key's batches hold %d, the partition %d", read, keyBytes, partBytes)
	const window, indexes = 8 << 10, 16 << 10 // per batch; per segment, at most
	if limit := keyBytes + rounds*window + indexes; read > limit || read*5 > partBytes {
		t.Errorf("read %d bytes from segments, want at most %d (the key's batches hold %d) and far below the partition's %d",
			read, limit, keyBytes, partBytes)
	}
	out, stderr := runKcat(t, 30*time.Second, "", "-C", "-b", fresh.KafkaAddr, "-t", topic+"/"+key, "-p", "0",
		"-o", "beginning", "-e", "-q", "-f", "%o %k\n")
	checkKcatStderr(t, stderr)
	if strings.TrimSpace(out) != strings.Join(want, "\n") {
		t.Errorf("kcat %s/%s from segments:\n%s\nwant\n%s", topic, key, out, strings.Join(want, "\n"))
	}
}
