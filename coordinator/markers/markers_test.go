package markers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/commitcheck"
	"github.com/floe-io/floe/coordinator/txn"
)

// recorder keeps, in order, what a Writer did: puts, reads of the shard
// count, and commits per shard.
type recorder struct {
	events  []string
	puts    map[string][]byte
	commits map[int][]*coordapi.CommitRequest
	// putErr fails Put; commitErr and codes fail, or answer with an
	// error code, the commits of a shard.
	putErr    error
	commitErr map[int]error
	codes     map[int]int16
}

func newRecorder() *recorder {
	return &recorder{puts: map[string][]byte{}, commits: map[int][]*coordapi.CommitRequest{}}
}

func (r *recorder) Put(_ context.Context, key string, data []byte) error {
	r.events = append(r.events, "put")
	if r.putErr != nil {
		return r.putErr
	}
	r.puts[key] = slices.Clone(data)
	return nil
}

// commit records req as committed on shard s.
func (r *recorder) commit(s int, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	r.events = append(r.events, fmt.Sprintf("commit %d", s))
	if err := r.commitErr[s]; err != nil {
		return nil, err
	}
	r.commits[s] = append(r.commits[s], req)
	resp := &coordapi.CommitResponse{}
	for range req.Batches {
		resp.Results = append(resp.Results, coordapi.BatchResult{ErrorCode: r.codes[s]})
	}
	return resp, nil
}

// peer is shard s, committing through r.
type peer struct {
	r *recorder
	s int
}

func (p peer) CommitObject(_ context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	return p.r.commit(p.s, req)
}

// writer returns shard 0's Writer over shards shards, with peers peers
// (at most shards-1 of them).
func (r *recorder) writer(shards, peers int) Writer {
	w := Writer{Store: r, Prefix: "pfx", Shard: 0,
		Shards: func() int { r.events = append(r.events, "shards"); return shards },
		Local:  func(req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) { return r.commit(0, req) },
	}
	for s := 1; s <= peers; s++ {
		w.Peers = append(w.Peers, peer{r, s})
	}
	return w
}

var (
	topicA = coordapi.TopicID{0xa}
	topicB = coordapi.TopicID{0xb}
)

// partsOn returns n partitions of topicA that coordapi.ShardOf places on
// shard s of shards.
func partsOn(t *testing.T, s, shards, n int) []coordapi.TopicPartition {
	t.Helper()
	var out []coordapi.TopicPartition
	for p := int32(0); len(out) < n; p++ {
		if p > 10000 {
			t.Fatalf("no %d partitions on shard %d of %d", n, s, shards)
		}
		if coordapi.ShardOf(topicA, p, shards) == s {
			out = append(out, coordapi.TopicPartition{TopicID: topicA, Partition: p})
		}
	}
	return out
}

// TestWrite checks, for markers of partitions spread over shards, the
// object put (one marker batch per partition, one after the other), the
// commit requests each shard gets (its own partitions' batches, with the
// fields of a control batch), the order (put, then the shard count,
// then this shard first) and Write's error.
func TestWrite(t *testing.T) {
	const (
		pid   = int64(4242)
		epoch = int16(7)
		nowMs = int64(1_700_000_000_000)
	)
	on := func(s, shards, n int) []coordapi.TopicPartition { return partsOn(t, s, shards, n) }
	for _, tc := range []struct {
		name       string
		shards     int
		peers      int
		parts      []coordapi.TopicPartition
		commit     bool
		setup      func(r *recorder)
		wantEvents []string
		wantShards map[int]int // batches committed per shard
		wantErr    error       // nil, or what the error wraps (errors.Is)
		wantErrSub string      // a part of the error's text
	}{
		{"one shard, commit", 1, 0,
			[]coordapi.TopicPartition{{TopicID: topicA, Partition: 0}, {TopicID: topicA, Partition: 1}, {TopicID: topicB, Partition: 0}},
			true, nil, []string{"put", "shards", "commit 0"}, map[int]int{0: 3}, nil, ""},
		{"one shard, abort", 1, 0, []coordapi.TopicPartition{{TopicID: topicB, Partition: 3}},
			false, nil, []string{"put", "shards", "commit 0"}, map[int]int{0: 1}, nil, ""},
		{"three shards, this one first", 3, 2, slices.Concat(on(2, 3, 2), on(1, 3, 1), on(0, 3, 2)),
			true, nil, []string{"put", "shards", "commit 0", "commit 1", "commit 2"}, map[int]int{0: 2, 1: 1, 2: 2}, nil, ""},
		{"a shard with no partition gets no commit", 3, 2, slices.Concat(on(2, 3, 1), on(0, 3, 1)),
			false, nil, []string{"put", "shards", "commit 0", "commit 2"}, map[int]int{0: 1, 2: 1}, nil, ""},
		{"none on this shard", 2, 1, on(1, 2, 2),
			true, nil, []string{"put", "shards", "commit 1"}, map[int]int{1: 2}, nil, ""},
		{"a shard without a peer", 3, 1, slices.Concat(on(0, 3, 1), on(2, 3, 1)),
			true, nil, []string{"put", "shards", "commit 0"}, map[int]int{0: 1}, nil, "shard 2 has no peer"},
		{"put fails: nothing committed", 1, 0, on(0, 1, 1),
			true, func(r *recorder) { r.putErr = errors.New("store down") }, []string{"put"}, map[int]int{}, nil, "store down"},
		{"this shard's commit fails: no other shard's", 2, 1, slices.Concat(on(0, 2, 1), on(1, 2, 1)),
			true, func(r *recorder) { r.commitErr = map[int]error{0: kerr.NotCoordinator} },
			[]string{"put", "shards", "commit 0"}, map[int]int{}, kerr.NotCoordinator, "shard 0"},
		{"a peer's commit fails", 2, 1, slices.Concat(on(0, 2, 1), on(1, 2, 1)),
			true, func(r *recorder) { r.commitErr = map[int]error{1: errors.New("peer down")} },
			[]string{"put", "shards", "commit 0", "commit 1"}, map[int]int{0: 1}, nil, "peer down"},
		{"a deleted topic is no error (UNKNOWN_TOPIC_ID)", 1, 0, on(0, 1, 2),
			true, func(r *recorder) { r.codes = map[int]int16{0: kerr.UnknownTopicID.Code} },
			[]string{"put", "shards", "commit 0"}, map[int]int{0: 2}, nil, ""},
		{"a deleted topic is no error (UNKNOWN_TOPIC_OR_PARTITION)", 1, 0, on(0, 1, 2),
			true, func(r *recorder) { r.codes = map[int]int16{0: kerr.UnknownTopicOrPartition.Code} },
			[]string{"put", "shards", "commit 0"}, map[int]int{0: 2}, nil, ""},
		{"another error code fails", 2, 1, slices.Concat(on(0, 2, 1), on(1, 2, 1)),
			false, func(r *recorder) { r.codes = map[int]int16{0: kerr.InvalidProducerEpoch.Code} },
			[]string{"put", "shards", "commit 0"}, map[int]int{0: 1}, kerr.InvalidProducerEpoch, "marker of partition"},
		{"a peer's error code fails", 2, 1, slices.Concat(on(0, 2, 1), on(1, 2, 1)),
			false, func(r *recorder) { r.codes = map[int]int16{1: kerr.NotLeaderForPartition.Code} },
			[]string{"put", "shards", "commit 0", "commit 1"}, map[int]int{0: 1, 1: 1}, kerr.NotLeaderForPartition, "marker of partition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			if tc.setup != nil {
				tc.setup(r)
			}
			err := r.writer(tc.shards, tc.peers).Write(context.Background(), pid, epoch, tc.parts, tc.commit, nowMs)
			switch {
			case tc.wantErr == nil && tc.wantErrSub == "" && err != nil:
				t.Fatalf("Write: %v", err)
			case (tc.wantErr != nil || tc.wantErrSub != "") && err == nil:
				t.Fatalf("Write: no error, want one wrapping %v, saying %q", tc.wantErr, tc.wantErrSub)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("Write: %v, want one wrapping %v", err, tc.wantErr)
			case err != nil && !strings.Contains(err.Error(), tc.wantErrSub):
				t.Fatalf("Write: %v, want one saying %q", err, tc.wantErrSub)
			}
			if !slices.Equal(r.events, tc.wantEvents) {
				t.Fatalf("Write did %q, want %q", r.events, tc.wantEvents)
			}
			if r.putErr != nil {
				return
			}
			if len(r.puts) != 1 {
				t.Fatalf("Write put %d objects, want 1", len(r.puts))
			}
			var key string
			var data []byte
			for key, data = range r.puts {
			}
			n := checkObject(t, key, data, tc.parts, r.commits, tc.shards, pid, epoch, tc.commit, nowMs)
			if err == nil && n != len(tc.parts) {
				t.Fatalf("markers of %d partitions committed, want %d", n, len(tc.parts))
			}
			for s, reqs := range r.commits {
				if n := len(reqs[0].Batches); len(reqs) != 1 || n != tc.wantShards[s] {
					t.Fatalf("shard %d: %d commits of %d batches, want 1 of %d", s, len(reqs), n, tc.wantShards[s])
				}
			}
			if len(r.commits) != len(tc.wantShards) {
				t.Fatalf("commits on %d shards, want %d", len(r.commits), len(tc.wantShards))
			}
		})
	}
}

// checkObject checks the object Write put under key and the commits of
// it, and returns how many partitions' markers were committed: each
// batch of a commit is its partition's marker, in the shard that
// serves the partition, at its place in the object.
func checkObject(t *testing.T, key string, data []byte, parts []coordapi.TopicPartition,
	commits map[int][]*coordapi.CommitRequest, shards int, pid int64, epoch int16, commit bool, nowMs int64) int {
	t.Helper()
	if !strings.HasPrefix(key, coordapi.WALPrefix("pfx")+"txn-") {
		t.Fatalf("object key %q, want one under %q starting txn-", key, coordapi.WALPrefix("pfx"))
	}
	if _, ok := commitcheck.KeyTime(key); !ok {
		t.Fatalf("object key %q holds no UUIDv7", key)
	}
	marker, err := txn.MarkerBatch(pid, epoch, commit, nowMs)
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Repeat(marker, len(parts)); !bytes.Equal(data, want) {
		t.Fatalf("object of %d bytes, want %d markers of %d", len(data), len(parts), len(marker))
	}
	seen := map[coordapi.TopicPartition]bool{}
	for s, reqs := range commits {
		for _, req := range reqs {
			if req.ObjectKey != key || req.ObjectSize != int64(len(data)) || req.BrokerID != -1 || req.Inline != nil {
				t.Fatalf("shard %d: commit of %q (%d bytes, broker %d), want %q (%d bytes, broker -1)",
					s, req.ObjectKey, req.ObjectSize, req.BrokerID, key, len(data))
			}
			if err := commitcheck.Request(req); err != nil {
				t.Fatalf("shard %d: commit request refused: %v", s, err)
			}
			for _, b := range req.Batches {
				tp := coordapi.TopicPartition{TopicID: b.TopicID, Partition: b.Partition}
				i := slices.Index(parts, tp)
				want := coordapi.CommitBatch{
					TopicID: tp.TopicID, Partition: tp.Partition,
					ByteOffset: int64(i * len(marker)), ByteLength: int32(len(marker)), MaxTimestamp: nowMs,
					ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1,
					Transactional: true, Control: true, Commit: commit,
				}
				if i < 0 || seen[tp] || !reflect.DeepEqual(b, want) || coordapi.ShardOf(tp.TopicID, tp.Partition, shards) != s {
					t.Fatalf("shard %d: batch %+v\nwant %+v (partition %d of the request, seen before: %v)", s, b, want, i, seen[tp])
				}
				seen[tp] = true
			}
		}
	}
	return len(seen)
}

// TestWriteRefusals covers what Write refuses or skips rather than
// crashing or leaving an orphan: no partitions (no object is put), a
// shard other than 0 asked for shard 0's partitions (its Peers index
// shards from 1), and a commit answering more results than markers.
func TestWriteRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("no partitions: nothing put", func(t *testing.T) {
		r := newRecorder()
		if err := r.writer(1, 0).Write(ctx, 7, 0, nil, true, 1000); err != nil {
			t.Fatal(err)
		}
		if len(r.events) != 0 {
			t.Fatalf("events %q, want none", r.events)
		}
	})
	t.Run("shard 0's partition on another shard", func(t *testing.T) {
		r := newRecorder()
		w := r.writer(2, 0)
		w.Shard = 1
		w.Local = func(req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) { return r.commit(1, req) }
		err := w.Write(ctx, 7, 0, partsOn(t, 0, 2, 1), true, 1000)
		if err == nil || !strings.Contains(err.Error(), "shard 0 has no peer") {
			t.Fatalf("Write = %v, want shard 0 has no peer", err)
		}
	})
	t.Run("more results than markers", func(t *testing.T) {
		r := newRecorder()
		w := r.writer(1, 0)
		w.Local = func(req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
			resp, err := r.commit(0, req)
			resp.Results = append(resp.Results, coordapi.BatchResult{})
			return resp, err
		}
		err := w.Write(ctx, 7, 0, partsOn(t, 0, 1, 2), true, 1000)
		if err == nil || !strings.Contains(err.Error(), "3 results for 2 markers") {
			t.Fatalf("Write = %v, want 3 results for 2 markers", err)
		}
	})
}
