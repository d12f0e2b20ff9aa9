package coordapi

import (
	"crypto/sha256"
	"strings"
)

// Hierarchical topics: a topic with hierarchical.enabled=true has a view
// per key, named "base/KEY" (the base topic's name, a '/', and the key's
// UTF-8 bytes), which a consumer fetches to get only the base topic's
// records whose key is KEY, with their base-topic offsets. A view is not a
// topic of its own: it has the base's partitions, offsets, retention and
// compaction, and no data of its own. A real topic named "base/KEY" wins
// over the view of the same name, and a '/' in a topic name means nothing
// unless the part before it names a hierarchical topic.

// ConfigHierarchicalEnabled is the topic config that opts a topic into
// views ("base/KEY").
const ConfigHierarchicalEnabled = "hierarchical.enabled"

// TopicView says which base topic and key a view ("base/KEY") stands for.
type TopicView struct {
	BaseID   TopicID
	BaseName string
	Key      []byte
}

// SplitViewName splits a view's name at its first '/': the base topic's
// name and the key. ok is false when name has no '/', or nothing before
// it or after it (a view of the empty key is not addressable).
func SplitViewName(name string) (base string, key []byte, ok bool) {
	base, k, found := strings.Cut(name, "/")
	if !found || base == "" || k == "" {
		return "", nil, false
	}
	return base, []byte(k), true
}

// ViewTopicID returns the topic id of the view of key on the topic with id
// base: stable (every broker and coordinator derives the same one), and
// marked as a version 8 (custom) UUID (RFC 9562) so that it cannot be a
// real topic's random (version 4) id.
func ViewTopicID(base TopicID, key []byte) TopicID {
	h := sha256.New()
	h.Write([]byte("floe view\x00"))
	h.Write(base[:])
	h.Write(key)
	var id TopicID
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x80 // version 8
	id[8] = id[8]&0x3f | 0x80 // RFC 9562 variant
	return id
}

// IsViewTopicID reports whether id is marked as a view's (ViewTopicID).
func IsViewTopicID(id TopicID) bool { return id[6]&0xf0 == 0x80 && id[8]&0xc0 == 0x80 }
