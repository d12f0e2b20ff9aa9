package fleet_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/ha"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/coordinator/service"
	"github.com/floe-io/floe/internal/testkit/natstest"
	"github.com/floe-io/floe/loadtest/fleet"
)

// TestFleetAgainstCoordinator plays a small fleet against a coordinator
// leading an R1 log on a real NATS server, over the rpc, and checks the
// report against what the coordinator holds afterwards: the partitions'
// high watermarks moved by exactly the records the report counts, the
// batches and objects it holds are the ones the report committed, the
// log grew by a message at least per commit, and the groups' committed
// offsets are high watermarks the fleet reached. A second run on the same
// topics starts from their high watermarks.
func TestFleetAgainstCoordinator(t *testing.T) {
	srv := natstest.Start(t)
	const cluster = "fleettest"
	node, err := ha.Start(natstest.Connect(t, srv), ha.Options{
		ID: "fleettest", Replicas: 1, SnapshotInterval: -1,
		Service: service.Options{Cluster: cluster, Coordinator: coordinator.Options{
			Dir: filepath.Join(t.TempDir(), "coordinator"), TierInterval: -1, TxnCheckInterval: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := node.WaitLeader(ctx); err != nil {
		t.Fatalf("coordinator never led: %v", err)
	}
	coord := node.Coordinator()

	var coords []fleet.Coordinator
	var client *rpc.Client
	for range 2 {
		client = rpc.NewClient(natstest.Connect(t, srv), cluster, rpc.ClientOptions{})
		coords = append(coords, client)
	}
	logStats, err := fleet.JetStreamLog(natstest.Connect(t, srv), cluster)
	if err != nil {
		t.Fatal(err)
	}

	cfg := fleet.DefaultConfig()
	cfg.Brokers, cfg.Partitions, cfg.Topics = 4, 60, 3
	cfg.ObjectsPerSecond, cfg.BatchesPerObject = 200, 7
	cfg.PartitionChoice = fleet.ChoiceZipf
	cfg.ProducersPerBroker = 2
	cfg.Consumers, cfg.ConsumerPartitions, cfg.FetchInterval = 4, 10, 20*time.Millisecond
	cfg.Groups, cfg.OffsetCommitInterval = 3, 100*time.Millisecond
	cfg.Duration, cfg.Warmup, cfg.Progress = 2*time.Second, 200*time.Millisecond, 0
	cfg.Seed = 7
	cfg.Probe = &fleet.Probe{Log: logStats}

	var before int64
	for run := range 2 {
		rep, err := fleet.Run(ctx, cfg, coords, client.Groups())
		if err != nil {
			t.Fatal(err)
		}
		c := rep.Commits
		t.Logf("run %d: %d objects, %d batches, %d records, %.0f commits/s, commit p99 %.2f ms, %d find calls, %d multi",
			run, c.Objects, c.Batches, c.Records, c.CommitsPerSec, c.Latency.P99Ms, rep.Fetches.FindBatches, rep.Fetches.FindBatchesMulti)
		if rep.ErrorsTotal != 0 {
			t.Fatalf("run %d: errors %v", run, rep.Errors)
		}
		if c.Objects == 0 || c.Batches != c.Objects*int64(cfg.BatchesPerObject) {
			t.Fatalf("run %d: %d objects, %d batches: want every object's %d batches accepted", run, c.Objects, c.Batches, cfg.BatchesPerObject)
		}
		if c.HighWatermarksBefore != before {
			t.Fatalf("run %d: high watermarks before sum to %d, the coordinator's after the last run to %d", run, c.HighWatermarksBefore, before)
		}

		// The coordinator's view: high watermarks, batches, objects.
		var after, batches int64
		objects := map[string]bool{}
		hwms := map[string][]int64{}
		for i := range cfg.Topics {
			name := fmt.Sprintf("%s%d", cfg.TopicPrefix, i)
			topic, err := coord.Topic(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			for p := range topic.Partitions {
				st, err := coord.PartitionState(ctx, topic.ID, p)
				if err != nil {
					t.Fatal(err)
				}
				after += st.HighWatermark
				hwms[name] = append(hwms[name], st.HighWatermark)
				for off := int64(0); off < st.HighWatermark; {
					resp, err := coord.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: topic.ID, Partition: p, Offset: off, MaxBytes: 1})
					if err != nil {
						t.Fatal(err)
					}
					if len(resp.Batches) == 0 {
						t.Fatalf("%s/%d: no batch at offset %d, below the high watermark %d", name, p, off, st.HighWatermark)
					}
					for _, b := range resp.Batches {
						batches++
						objects[b.ObjectKey] = true
						off = b.LastOffset + 1
					}
				}
			}
		}
		if after != c.HighWatermarksBefore+c.Records {
			t.Fatalf("run %d: high watermarks sum to %d, want %d before + %d records committed", run, after, c.HighWatermarksBefore, c.Records)
		}
		before = after
		// Batches and objects accumulate over the runs.
		if run == 0 && (batches != c.Batches || int64(len(objects)) != c.Objects) {
			t.Fatalf("run %d: the coordinator holds %d batches in %d objects, the report committed %d in %d", run, batches, len(objects), c.Batches, c.Objects)
		}

		if l := rep.Log; l == nil || l.Messages < uint64(c.Objects) {
			t.Fatalf("run %d: log %+v: want a message at least per commit (%d)", run, rep.Log, c.Objects)
		}
		f := rep.Fetches
		if f.FindBatches == 0 || f.FindBatchesMulti == 0 || f.FindBatchesCoords+f.MultiCoords == 0 || f.MultiCoords > c.Batches || f.FindBatchesCoords > c.Batches {
			t.Fatalf("run %d: fetches %+v: want both APIs asked and at most the %d batches committed found", run, f, c.Batches)
		}

		// Every group committed offsets the fleet reached: at most the
		// partition's high watermark, and some above 0.
		g := rep.Groups
		if g.Heartbeats < int64(cfg.Groups) || g.OffsetCommits == 0 || g.CommittedPartitions == 0 {
			t.Fatalf("run %d: groups %+v", run, g)
		}
		var positive int
		for i := range cfg.Groups {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version = 7
			req.Group = fmt.Sprintf("%sgroup-%d", cfg.TopicPrefix, i)
			resp, err := client.Groups().OffsetFetch(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					if p.Offset > hwms[tp.Topic][p.Partition] {
						t.Fatalf("run %d: group %s committed %s/%d at %d, above its high watermark %d", run, req.Group, tp.Topic, p.Partition, p.Offset, hwms[tp.Topic][p.Partition])
					}
					if p.Offset > 0 {
						positive++
					}
				}
			}
		}
		if positive == 0 {
			t.Fatalf("run %d: no group committed an offset above 0", run)
		}
	}
}
