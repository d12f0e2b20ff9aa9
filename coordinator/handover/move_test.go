package handover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/floe-io/floe/coordapi"
)

// calls records, in order, the calls shards get, as "shard method args".
type calls struct{ events []string }

func (c *calls) add(format string, args ...any) {
	c.events = append(c.events, fmt.Sprintf(format, args...))
}

// fakePeer is a shard as Move and Grow drive it. Its exports answer
// chunks from chunks, the first with a nil cursor and each next from the
// one before's cursor; errors fail its calls by method name, after
// failAfter[method] calls succeeded.
type fakePeer struct {
	name      string
	c         *calls
	chunks    []coordapi.PartitionChunk
	errs      map[string]error
	failAfter map[string]int
	n         map[string]int
	imported  []coordapi.PartitionChunk
	// shard is the index ClusterInfo answers, unless info is set.
	shard int
	// commitErrs fails CommitShards, one error a call, nil for success.
	commitErrs []error
	info       *coordapi.ClusterInfo
}

func (p *fakePeer) fail(method string) error {
	if p.n == nil {
		p.n = map[string]int{}
	}
	p.n[method]++
	if p.n[method] <= p.failAfter[method] {
		return nil
	}
	return p.errs[method]
}

func (p *fakePeer) FencePartition(_ context.Context, id coordapi.TopicID, partition int32, version uint64) error {
	p.c.add("%s fence %x/%d v%d", p.name, id[0], partition, version)
	return p.fail("fence")
}

func (p *fakePeer) ExportPartition(_ context.Context, id coordapi.TopicID, partition int32, cursor []byte, maxBytes int) (coordapi.PartitionChunk, error) {
	p.c.add("%s export %x/%d after %q max %d", p.name, id[0], partition, cursor, maxBytes)
	if err := p.fail("export"); err != nil {
		return coordapi.PartitionChunk{}, err
	}
	if len(p.chunks) == 0 { // a partition of no rows: one last chunk
		return coordapi.PartitionChunk{TopicID: id, Partition: partition, First: true, Done: true}, nil
	}
	i := 0
	if cursor != nil {
		i = slices.IndexFunc(p.chunks, func(ch coordapi.PartitionChunk) bool { return string(ch.Cursor) == string(cursor) }) + 1
		if i == 0 || i == len(p.chunks) {
			return coordapi.PartitionChunk{}, fmt.Errorf("no chunk after %q", cursor)
		}
	}
	return p.chunks[i], nil
}

func (p *fakePeer) ImportPartition(_ context.Context, ch *coordapi.PartitionChunk) error {
	p.c.add("%s import %x/%d cursor %q", p.name, ch.TopicID[0], ch.Partition, ch.Cursor)
	if err := p.fail("import"); err != nil {
		return err
	}
	p.imported = append(p.imported, *ch)
	return nil
}

func (p *fakePeer) DropPartition(_ context.Context, id coordapi.TopicID, partition int32) error {
	p.c.add("%s drop %x/%d", p.name, id[0], partition)
	return p.fail("drop")
}

func (p *fakePeer) CommitShards(_ context.Context, shards int, version uint64) error {
	p.c.add("%s commit %d v%d", p.name, shards, version)
	var err error
	if len(p.commitErrs) > 0 {
		err, p.commitErrs = p.commitErrs[0], p.commitErrs[1:]
	}
	return err
}

func (p *fakePeer) ClusterInfo(context.Context) (coordapi.ClusterInfo, error) {
	p.c.add("%s info", p.name)
	if err := p.fail("info"); err != nil {
		return coordapi.ClusterInfo{}, err
	}
	if p.info != nil {
		return *p.info, nil
	}
	return coordapi.ClusterInfo{Shard: p.shard}, nil
}

// threeChunks are a partition's chunks: two full ones and the last.
func threeChunks() []coordapi.PartitionChunk {
	return []coordapi.PartitionChunk{
		{TopicID: topicA, Partition: 3, First: true, Rows: []coordapi.ChunkRow{{Key: []byte("k1")}}, Cursor: []byte("k1")},
		{TopicID: topicA, Partition: 3, Rows: []coordapi.ChunkRow{{Key: []byte("k2")}}, Cursor: []byte("k2")},
		{TopicID: topicA, Partition: 3, Rows: []coordapi.ChunkRow{{Key: []byte("k3")}}, Done: true},
	}
}

// TestMove checks Move's calls, in order (fence on the old shard, each
// chunk exported there from the last one's cursor and imported on the
// new shard, drop on the old shard), the chunks it reports and what it
// does on each shard's error, on a chunk with no cursor and on a Gone
// answer (nothing more).
func TestMove(t *testing.T) {
	boom := errors.New("boom")
	full := []string{
		"old fence a/3 v7",
		`old export a/3 after "" max 100`,
		`new import a/3 cursor "k1"`,
		`old export a/3 after "k1" max 100`,
		`new import a/3 cursor "k2"`,
		`old export a/3 after "k2" max 100`,
		`new import a/3 cursor ""`,
		"old drop a/3",
	}
	for _, tc := range []struct {
		name      string
		chunks    func() []coordapi.PartitionChunk
		oldErrs   map[string]error
		newErrs   map[string]error
		failAfter map[string]int
		want      []string
		chunksN   int
		err       string
	}{
		{name: "three chunks", chunks: threeChunks, want: full, chunksN: 3},
		{name: "one chunk", chunks: func() []coordapi.PartitionChunk { return nil }, chunksN: 1, want: []string{
			"old fence a/3 v7", `old export a/3 after "" max 100`, `new import a/3 cursor ""`, "old drop a/3"}},
		{name: "fence fails", chunks: threeChunks, oldErrs: map[string]error{"fence": boom},
			want: full[:1], err: "boom"},
		{name: "first export fails", chunks: threeChunks, oldErrs: map[string]error{"export": boom},
			want: full[:2], err: "export after 0 chunks"},
		{name: "second export fails", chunks: threeChunks, oldErrs: map[string]error{"export": boom},
			failAfter: map[string]int{"export": 1}, want: full[:4], chunksN: 1, err: "export after 1 chunks"},
		{name: "first import fails", chunks: threeChunks, newErrs: map[string]error{"import": boom},
			want: full[:3], err: "import chunk 0"},
		{name: "last import fails", chunks: threeChunks, newErrs: map[string]error{"import": boom},
			failAfter: map[string]int{"import": 2}, want: full[:7], chunksN: 2, err: "import chunk 2"},
		{name: "drop fails", chunks: threeChunks, oldErrs: map[string]error{"drop": boom},
			want: full, chunksN: 3, err: "drop"},
		{name: "gone", chunks: func() []coordapi.PartitionChunk {
			return []coordapi.PartitionChunk{{TopicID: topicA, Partition: 3, Gone: true, Done: true}}
		}, want: full[:2]},
		{name: "gone after a chunk", chunks: func() []coordapi.PartitionChunk {
			chs := threeChunks()
			chs[1] = coordapi.PartitionChunk{TopicID: topicA, Partition: 3, Gone: true, Cursor: []byte("k2")}
			return chs
		}, want: full[:4], chunksN: 1},
		{name: "chunk neither done nor with a cursor", chunks: func() []coordapi.PartitionChunk {
			chs := threeChunks()
			chs[0].Cursor = nil
			return chs
		}, want: []string{full[0], full[1], `new import a/3 cursor ""`}, chunksN: 1, err: "neither the last"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &calls{}
			from := &fakePeer{name: "old", c: c, chunks: tc.chunks(), errs: tc.oldErrs, failAfter: tc.failAfter}
			to := &fakePeer{name: "new", c: c, errs: tc.newErrs, failAfter: tc.failAfter}
			n, err := Move(context.Background(), from, to, topicA, 3, 7, 100)
			if !slices.Equal(c.events, tc.want) {
				t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(c.events, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if n != tc.chunksN {
				t.Errorf("%d chunks, want %d", n, tc.chunksN)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("err %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("err %v, want %q", err, tc.err)
			case tc.err != "" && (tc.oldErrs != nil || tc.newErrs != nil) && !errors.Is(err, boom):
				t.Errorf("err %v does not wrap the shard's", err)
			}
			// What is imported is what was exported, as it was.
			for i, ch := range to.imported {
				if want := from.chunks; len(want) > i && (string(ch.Cursor) != string(want[i].Cursor) || ch.First != want[i].First ||
					ch.Done != want[i].Done || len(ch.Rows) != len(want[i].Rows)) {
					t.Errorf("chunk %d imported as %+v, exported as %+v", i, ch, want[i])
				}
			}
		})
	}
}

// TestMoveAgain checks a Move called again after a failed one: it
// fences again and starts over from the first chunk, and moves the
// partition in full.
func TestMoveAgain(t *testing.T) {
	c := &calls{}
	from := &fakePeer{name: "old", c: c, chunks: threeChunks()}
	to := &fakePeer{name: "new", c: c, errs: map[string]error{"import": errors.New("boom")}, failAfter: map[string]int{"import": 1}}
	if _, err := Move(context.Background(), from, to, topicA, 3, 7, 0); err == nil {
		t.Fatal("the first move did not fail")
	}
	to.errs = nil
	c.events = nil
	n, err := Move(context.Background(), from, to, topicA, 3, 7, 0)
	if err != nil || n != 3 {
		t.Fatalf("moved %d chunks, err %v; want 3", n, err)
	}
	want := []string{
		"old fence a/3 v7",
		`old export a/3 after "" max 0`,
		`new import a/3 cursor "k1"`,
		`old export a/3 after "k1" max 0`,
		`new import a/3 cursor "k2"`,
		`old export a/3 after "k2" max 0`,
		`new import a/3 cursor ""`,
		"old drop a/3",
	}
	if !slices.Equal(c.events, want) {
		t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(c.events, "\n  "), strings.Join(want, "\n  "))
	}
	if len(to.imported) != 4 || !to.imported[1].First {
		t.Errorf("imported %d chunks, the second try's first First %v; want 4, true", len(to.imported), len(to.imported) > 1 && to.imported[1].First)
	}
}
