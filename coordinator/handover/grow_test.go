package handover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

var topicC = coordapi.TopicID{0xc}

// growPeers returns n fake shards recording into c, shard i named "si".
func growPeers(c *calls, n int) ([]*fakePeer, []ShardPeer) {
	var fakes []*fakePeer
	var peers []ShardPeer
	for i := range n {
		p := &fakePeer{name: fmt.Sprintf("s%d", i), c: c, shard: i}
		fakes = append(fakes, p)
		peers = append(peers, p)
	}
	return fakes, peers
}

// moveCalls are the calls of a one-chunk Move of (id, partition) from
// shard src to dst, under version.
func moveCalls(id coordapi.TopicID, p int32, src, dst int, version uint64, chunkBytes int) []string {
	return []string{
		fmt.Sprintf("s%d fence %x/%d v%d", src, id[0], p, version),
		fmt.Sprintf(`s%d export %x/%d after "" max %d`, src, id[0], p, chunkBytes),
		fmt.Sprintf(`s%d import %x/%d cursor ""`, dst, id[0], p),
		fmt.Sprintf("s%d drop %x/%d", src, id[0], p),
	}
}

// growMoves returns the calls moving every partition of topics whose
// shard changes from from to to shards, and how many partitions move.
func growMoves(topics []coordapi.Topic, from, to int, version uint64) (out []string, n int) {
	for _, t := range topics {
		if t.View != nil {
			continue
		}
		for p := range t.Partitions {
			src, dst := coordapi.ShardOf(t.ID, p, from), coordapi.ShardOf(t.ID, p, to)
			if src != dst {
				out = append(out, moveCalls(t.ID, p, src, dst, version, 64)...)
				n++
			}
		}
	}
	return out, n
}

func infoCalls(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("s%d info", i))
	}
	return out
}

// commitCalls are the commits of shards to shards, version, for the given
// shards in order.
func commitCalls(shards int, version uint64, order ...int) []string {
	var out []string
	for _, s := range order {
		out = append(out, fmt.Sprintf("s%d commit %d v%d", s, shards, version))
	}
	return out
}

// TestGrow checks Grow's calls and answers: every shard asked who it is
// before any move, each partition whose shard changes moved (views not),
// once, from its old shard to its new one, then every shard committing
// the count, shard 0 last; a refused commit lists the topics again and
// moves only what was not moved, up to maxGrowPasses; and the refusals
// before any call.
func TestGrow(t *testing.T) {
	boom := errors.New("boom")
	const version = 9
	topicsA := []coordapi.Topic{
		{ID: topicA, Name: "a", Partitions: 24},
		{ID: topicC, Name: "a/view", Partitions: 24, View: &coordapi.TopicView{BaseID: topicA, BaseName: "a", Key: []byte("k")}},
	}
	topicsAB := append(slices.Clone(topicsA), coordapi.Topic{ID: topicB, Name: "b", Partitions: 12})
	movesA13, nA13 := growMoves(topicsA, 1, 3, version)
	movesB13, nB13 := growMoves(topicsAB[2:], 1, 3, version)
	movesAB23, nAB23 := growMoves(topicsAB, 2, 3, version)
	if nA13 == 0 || nB13 == 0 || nAB23 == 0 || nAB23 == nA13+nB13 {
		t.Fatalf("pick other topics: %d, %d, %d partitions move", nA13, nB13, nAB23)
	}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	for _, tc := range []struct {
		name       string
		shard      int
		from, to   int
		peers      int
		topics     [][]coordapi.Topic // by pass; the last for later passes
		topicsErr  error
		setup      func(fakes []*fakePeer)
		want       []string
		moved      int
		err        string
		topicCalls int
	}{
		{name: "one to three", from: 1, to: 3, peers: 3, topics: [][]coordapi.Topic{topicsA},
			want: cat(infoCalls(3), movesA13, commitCalls(3, version, 1, 2, 0)), moved: nA13, topicCalls: 1},
		{name: "two to three", from: 2, to: 3, peers: 3, topics: [][]coordapi.Topic{topicsAB},
			want: cat(infoCalls(3), movesAB23, commitCalls(3, version, 1, 2, 0)), moved: nAB23, topicCalls: 1},
		{name: "no topics", from: 1, to: 2, peers: 2, topics: [][]coordapi.Topic{nil},
			want: cat(infoCalls(2), commitCalls(2, version, 1, 0)), topicCalls: 1},
		{name: "not shard 0", shard: 1, from: 1, to: 3, peers: 3, err: "only shard 0"},
		{name: "same count", from: 3, to: 3, peers: 3},
		{name: "smaller count", from: 3, to: 2, peers: 2},
		{name: "too few peers", from: 1, to: 3, peers: 2, err: "2 peers"},
		{name: "too many peers", from: 1, to: 3, peers: 4, err: "4 peers"},
		{name: "a shard does not answer", from: 1, to: 3, peers: 3, setup: func(f []*fakePeer) {
			f[1].errs = map[string]error{"info": boom}
		}, want: infoCalls(2), err: "shard 1: boom"},
		{name: "a peer answers as another shard", from: 1, to: 3, peers: 3, setup: func(f []*fakePeer) {
			f[2].info = &coordapi.ClusterInfo{Shard: 1}
		}, want: infoCalls(3), err: "peer 2 answers as shard 1"},
		{name: "topics fail", from: 1, to: 3, peers: 3, topicsErr: boom,
			want: infoCalls(3), err: "boom", topicCalls: 1},
		{name: "a move fails", from: 1, to: 3, peers: 3, topics: [][]coordapi.Topic{topicsA}, setup: func(f []*fakePeer) {
			f[0].errs = map[string]error{"drop": boom}
		}, want: cat(infoCalls(3), movesA13[:4]), err: "drop", topicCalls: 1},
		{name: "shard 1 refuses once", from: 1, to: 3, peers: 3, topics: [][]coordapi.Topic{topicsA, topicsAB}, setup: func(f []*fakePeer) {
			f[1].commitErrs = []error{boom}
		}, want: cat(infoCalls(3), movesA13, commitCalls(3, version, 1), movesB13, commitCalls(3, version, 1, 2, 0)),
			moved: nA13 + nB13, topicCalls: 2},
		{name: "shard 2 refuses twice", from: 1, to: 3, peers: 3, topics: [][]coordapi.Topic{topicsA}, setup: func(f []*fakePeer) {
			f[2].commitErrs = []error{boom, boom}
		}, want: cat(infoCalls(3), movesA13, commitCalls(3, version, 1, 2), commitCalls(3, version, 1, 2), commitCalls(3, version, 1, 2, 0)),
			moved: nA13, topicCalls: 3},
		{name: "shard 0 refuses", from: 1, to: 3, peers: 3, topics: [][]coordapi.Topic{topicsA}, setup: func(f []*fakePeer) {
			f[0].commitErrs = []error{boom}
		}, want: cat(infoCalls(3), movesA13, commitCalls(3, version, 1, 2, 0), commitCalls(3, version, 1, 2, 0)),
			moved: nA13, topicCalls: 2},
		{name: "refused every pass", from: 1, to: 3, peers: 3, topics: [][]coordapi.Topic{topicsA}, setup: func(f []*fakePeer) {
			f[1].commitErrs = slices.Repeat([]error{boom}, maxGrowPasses+1)
		}, want: cat(infoCalls(3), movesA13, slices.Repeat(commitCalls(3, version, 1), maxGrowPasses)),
			moved: nA13, err: "commit on shard 1: boom", topicCalls: maxGrowPasses},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &calls{}
			fakes, peers := growPeers(c, tc.peers)
			if tc.setup != nil {
				tc.setup(fakes)
			}
			topicCalls := 0
			g := Growth{Shard: tc.shard, From: tc.from, To: tc.to, Version: version, Peers: peers, ChunkBytes: 64,
				Log: testkit.Logger(),
				Topics: func(context.Context) ([]coordapi.Topic, error) {
					topicCalls++
					if tc.topicsErr != nil {
						return nil, tc.topicsErr
					}
					return tc.topics[min(topicCalls, len(tc.topics))-1], nil
				},
			}
			moved, err := Grow(context.Background(), g)
			if !slices.Equal(c.events, tc.want) {
				t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(c.events, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if moved != tc.moved {
				t.Errorf("moved %d, want %d", moved, tc.moved)
			}
			if topicCalls != tc.topicCalls {
				t.Errorf("topics listed %d times, want %d", topicCalls, tc.topicCalls)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("err %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("err %v, want %q", err, tc.err)
			}
		})
	}
}

// TestGrowAgain checks that a Grow called again after one that failed
// moves only the partitions not moved yet: a partition the first moved
// answers Gone on its old shard and is neither imported nor dropped
// again.
func TestGrowAgain(t *testing.T) {
	c := &calls{}
	fakes, peers := growPeers(c, 2)
	topics := []coordapi.Topic{{ID: topicA, Name: "a", Partitions: 24}}
	var moving []int32
	for p := range int32(24) {
		if coordapi.ShardOf(topicA, p, 2) == 1 {
			moving = append(moving, p)
		}
	}
	if len(moving) < 2 {
		t.Fatalf("only %d partitions move", len(moving))
	}
	g := Growth{From: 1, To: 2, Version: 1, Peers: peers, Log: testkit.Logger(),
		Topics: func(context.Context) ([]coordapi.Topic, error) { return topics, nil }}
	fakes[1].errs = map[string]error{"import": errors.New("boom")}
	fakes[1].failAfter = map[string]int{"import": 1}
	moved, err := Grow(context.Background(), g)
	if err == nil || moved != 1 {
		t.Fatalf("first grow: moved %d, err %v; want 1 and an error", moved, err)
	}
	// Shard 0 now answers Gone for the partition it dropped.
	gone := moving[0]
	exp := &goneExporter{fakePeer: fakes[0], gone: map[int32]bool{gone: true}}
	fakes[1].errs = nil
	c.events = nil
	moved, err = Grow(context.Background(), Growth{From: 1, To: 2, Version: 1, Peers: []ShardPeer{exp, fakes[1]},
		Log: testkit.Logger(), Topics: g.Topics})
	if err != nil {
		t.Fatal(err)
	}
	// The partition answering Gone counts as moved: Move reports it done.
	if moved != len(moving) {
		t.Errorf("moved %d, want %d", moved, len(moving))
	}
	for _, e := range c.events {
		if strings.Contains(e, fmt.Sprintf("a/%d ", gone)) && (strings.Contains(e, "import") || strings.Contains(e, "drop")) {
			t.Errorf("partition %d moved again: %s", gone, e)
		}
	}
}

// goneExporter is a fakePeer that answers Gone for partitions it dropped.
type goneExporter struct {
	*fakePeer
	gone map[int32]bool
}

func (g *goneExporter) ExportPartition(ctx context.Context, id coordapi.TopicID, partition int32, cursor []byte, maxBytes int) (coordapi.PartitionChunk, error) {
	if g.gone[partition] {
		g.c.add("%s export %x/%d gone", g.name, id[0], partition)
		return coordapi.PartitionChunk{TopicID: id, Partition: partition, Gone: true}, nil
	}
	return g.fakePeer.ExportPartition(ctx, id, partition, cursor, maxBytes)
}

// TestKeepGrowing checks that KeepGrowing calls grow until it succeeds,
// waiting between failures, and stops once its context ends.
func TestKeepGrowing(t *testing.T) {
	t.Run("succeeds at once", func(t *testing.T) {
		n := 0
		KeepGrowing(context.Background(), 3, func(context.Context) (int, error) { n++; return 2, nil }, testkit.Logger())
		if n != 1 {
			t.Errorf("grow called %d times, want 1", n)
		}
	})
	t.Run("fails, then succeeds", func(t *testing.T) {
		var at []time.Time
		h := &warnings{}
		KeepGrowing(context.Background(), 3, func(context.Context) (int, error) {
			at = append(at, time.Now())
			if len(at) < 2 {
				return 0, errors.New("boom")
			}
			return 1, nil
		}, slog.New(h))
		if len(at) != 2 {
			t.Fatalf("grow called %d times, want 2", len(at))
		}
		if h.n != 1 {
			t.Errorf("%d warnings, want 1 (the retry)", h.n)
		}
		if d := at[1].Sub(at[0]); d < growRetry/2 {
			t.Errorf("called again after %s, want about %s", d, growRetry)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		h := &warnings{}
		KeepGrowing(ctx, 3, func(context.Context) (int, error) {
			n++
			cancel()
			return 0, errors.New("boom")
		}, slog.New(h))
		if n != 1 {
			t.Errorf("grow called %d times, want 1", n)
		}
		if h.n != 0 {
			t.Errorf("%d warnings of a retry once the context ended", h.n)
		}
	})
}

// warnings counts the records logged at warn or above.
type warnings struct{ n int }

func (h *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (h *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.n++
	}
	return nil
}
func (h *warnings) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *warnings) WithGroup(string) slog.Handler      { return h }

// TestKeepGrowingSlowFailure checks that a growth that failed after more
// than growRetry is still tried again only a growRetry after its failure,
// as KeepGrowing's doc says ("a growRetry after each failure").
func TestKeepGrowingSlowFailure(t *testing.T) {
	var failedAt, againAt time.Time
	n := 0
	KeepGrowing(context.Background(), 3, func(context.Context) (int, error) {
		n++
		if n == 1 {
			// A slow failure (a move timing out): the ticker's first tick
			// comes meanwhile.
			<-time.After(growRetry + growRetry/2)
			failedAt = time.Now()
			return 0, errors.New("boom")
		}
		againAt = time.Now()
		return 1, nil
	}, testkit.Logger())
	if d := againAt.Sub(failedAt); d < growRetry/2 {
		t.Errorf("called again %s after a failure, want about %s", d, growRetry)
	}
}
