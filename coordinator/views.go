package coordinator

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
)

// Hierarchical views (coordapi/views.go). Topic resolves "base/KEY" to the
// view of KEY on a base topic with hierarchical.enabled, and records the
// view's id in a row of the view family, so that TopicByID resolves it on
// any broker afterwards (Fetch v13+ names topics by id):
//
//	v <view id> -> version 1, base topic id (16 bytes), key (uvarint length, bytes)
//
// The row outlives the base topic (a lookup then finds no base: unknown)
// and is written once per view, when it is first named.
const prefixView byte = 'v'

func viewKey(id coordapi.TopicID) []byte {
	return append([]byte{prefixView}, id[:]...)
}

func encodeView(base coordapi.TopicID, key []byte) []byte {
	b := append([]byte{valenc.Version1}, base[:]...)
	return valenc.AppendString(b, string(key))
}

func decodeView(v []byte) (base coordapi.TopicID, key []byte, err error) {
	d := valenc.New("view", v)
	copy(base[:], d.Bytes(16))
	key = []byte(d.String())
	return base, key, d.Done("view")
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
	k := viewKey(vt.ID)
	_, closer, err := c.db.Get(k)
	switch {
	case err == nil:
		return closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("view %q: %w", vt.Name, err)
	}
	if err := c.db.Set(k, encodeView(vt.View.BaseID, vt.View.Key), pebble.Sync); err != nil {
		return fmt.Errorf("view %q: %w", vt.Name, err)
	}
	return nil
}

// viewByID returns the view whose id is id, from its row.
func (c *Coordinator) viewByID(id coordapi.TopicID) (coordapi.Topic, error) {
	v, closer, err := c.db.Get(viewKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return coordapi.Topic{}, fmt.Errorf("topic %s: %w", id, kerr.UnknownTopicID)
	}
	if err != nil {
		return coordapi.Topic{}, fmt.Errorf("view %s: %w", id, err)
	}
	base, key, err := decodeView(v)
	_ = closer.Close()
	if err != nil {
		return coordapi.Topic{}, fmt.Errorf("view %s: %w", id, err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	t := c.mu.topicsByID[base]
	if t == nil || !isHierarchical(t.configs) {
		return coordapi.Topic{}, fmt.Errorf("topic %s (a view of a deleted or no longer hierarchical topic): %w", id, kerr.UnknownTopicID)
	}
	return viewTopic(t, key), nil
}
