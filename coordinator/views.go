package coordinator

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/internal/keyspan"
	"github.com/floe-io/floe/internal/valenc"
)

// Hierarchical views (coordapi/views.go). Topic resolves "base/KEY" to the
// view of KEY on a base topic with hierarchical.enabled, and records the
// view's id in a row of the view family, so that TopicByID resolves it on
// any broker afterwards (Fetch v13+ names topics by id):
//
//	v <view id> -> version 1, base topic id (16 bytes), key (uvarint length, bytes)
//	w <base topic id> <view id> -> version 1, nothing else: the views named of a base topic
//
// Both rows are written once per view, when it is first named, in one
// write. Deleting the base topic deletes its views' rows, found through the
// w rows, in the topic's deletion batch. A v row without its w row (written
// before w rows existed) is deleted by the first lookup that finds its base
// topic gone.

// dropViewsLocked adds to b the deletion of every view row of base topic
// base. c.commit must be held. A view first named while the topic is being
// deleted may write its rows after this scan: viewByID deletes such a row
// when it finds the base gone.
func (c *Coordinator) dropViewsLocked(b *pebble.Batch, base coordapi.TopicID) error {
	lower := layout.BaseViewsPrefix(base)
	upper := keyspan.PrefixEnd(lower)
	err := c.scanRange(lower, upper, func(k, _ []byte) error {
		if len(k) == 1+16+16 {
			var id coordapi.TopicID
			copy(id[:], k[17:])
			_ = b.Delete(layout.ViewKey(id), nil)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("views of %s: %w", base, err)
	}
	_ = b.DeleteRange(lower, upper, nil)
	return nil
}

// isHierarchical reports whether a topic's configs turn its views on.
func isHierarchical(configs map[string]string) bool {
	return strings.EqualFold(configs[coordapi.ConfigHierarchicalEnabled], "true")
}

// viewOf returns the view name stands for, when it names one: a base
// topic with hierarchical.enabled and a key. c.mu must be held (read).
func (c *Coordinator) viewOfLocked(name string) (coordapi.Topic, bool) {
	base, key, ok := coordapi.SplitViewName(name)
	if !ok {
		return coordapi.Topic{}, false
	}
	t := c.mu.topicsByName[base]
	if t == nil || !isHierarchical(t.configs) {
		return coordapi.Topic{}, false
	}
	return viewTopic(t, key), true
}

// viewTopic returns the view of key on base topic t.
func viewTopic(t *topicState, key []byte) coordapi.Topic {
	vt := t.toTopic()
	vt.ID = coordapi.ViewTopicID(t.id, key)
	vt.Name = t.name + "/" + string(key)
	vt.View = &coordapi.TopicView{BaseID: t.id, BaseName: t.name, Key: key}
	return vt
}

// rememberView writes the row of view vt unless it is there.
func (c *Coordinator) rememberView(vt coordapi.Topic) error {
	k := layout.ViewKey(vt.ID)
	_, closer, err := c.db.Get(k)
	switch {
	case err == nil:
		return closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("view %q: %w", vt.Name, err)
	}
	b := c.db.NewBatch()
	defer b.Close()
	_ = b.Set(k, layout.EncodeView(vt.View.BaseID, vt.View.Key), nil)
	_ = b.Set(layout.BaseViewKey(vt.View.BaseID, vt.ID), []byte{valenc.Version1}, nil)
	if err := c.write(b, pebble.Sync); err != nil {
		return fmt.Errorf("view %q: %w", vt.Name, err)
	}
	return nil
}

// viewByID returns the view whose id is id, from its row.
func (c *Coordinator) viewByID(id coordapi.TopicID) (coordapi.Topic, error) {
	v, closer, err := c.db.Get(layout.ViewKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return coordapi.Topic{}, fmt.Errorf("topic %s: %w", id, kerr.UnknownTopicID)
	}
	if err != nil {
		return coordapi.Topic{}, fmt.Errorf("view %s: %w", id, err)
	}
	base, key, err := layout.DecodeView(v)
	_ = closer.Close()
	if err != nil {
		return coordapi.Topic{}, fmt.Errorf("view %s: %w", id, err)
	}
	c.mu.RLock()
	t := c.mu.topicsByID[base]
	c.mu.RUnlock()
	if t == nil {
		// The base topic is gone: the row is stale (one its deletion did
		// not know of). Best effort: a failed delete leaves it for the next
		// lookup.
		if err := c.del(layout.ViewKey(id), pebble.NoSync); err != nil {
			c.log.Warn("delete a stale view row", "view", id, "err", err)
		}
	}
	if t == nil || !isHierarchical(t.configs) {
		return coordapi.Topic{}, fmt.Errorf("topic %s (a view of a deleted or no longer hierarchical topic): %w", id, kerr.UnknownTopicID)
	}
	return viewTopic(t, key), nil
}
