package coordinator

import (
	"context"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/inline"
	"github.com/floe-io/floe/coordinator/layout"
)

// Inline objects (CommitRequest.Inline) ride in their commits: a commit
// stages the object with the flusher, writes its bytes in the staged
// family ('s') in the commit's own synced batch, and hands it to the
// flusher, which persists it in the background and drops its row. Package
// inline draws the path; Open persists what a crash left (FlushAtOpen)
// before it reads or serves anything.

// InlineStore is the object store inline objects go to: the brokers' own
// (inline.Store; objectstore.Dir implements it).
type InlineStore = inline.Store

// stagedRows is the staged family as the flusher sees it (inline.Rows).
type stagedRows struct{ c *Coordinator }

// Scan calls fn with every staged row: its object key and bytes.
func (r stagedRows) Scan(fn func(key string, data []byte) error) error {
	return familyRows{r.c, layout.PrefixStaged}.Scan(func(k, v []byte) error { return fn(string(k), v) })
}

// Drop deletes the rows of keys in one write through the log, synced if
// sync.
func (r stagedRows) Drop(keys []string, sync bool) error {
	b := r.c.db.NewBatch()
	defer b.Close()
	for _, key := range keys {
		_ = b.Delete(layout.StagedKey(key), nil)
	}
	if sync {
		return r.c.write(b, pebble.Sync)
	}
	return r.c.write(b, pebble.NoSync)
}

// stageInline takes a flush slot and stages req's object
// (inline.Flusher.Stage); a coordinator without Options.Inline refuses
// it.
func (c *Coordinator) stageInline(ctx context.Context, req *coordapi.CommitRequest) error {
	if c.inline == nil {
		return coordapi.Errorf(kerr.InvalidRequest, "this coordinator does not take inline objects")
	}
	return c.inline.Stage(ctx, req.ObjectKey, req.Inline)
}
