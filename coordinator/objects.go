package coordinator

import (
	"context"
	"sort"

	"github.com/cockroachdb/pebble"
	"github.com/floe-io/floe/coordinator/layout"
)

// ObjectState is an object's place in its life cycle.
type ObjectState uint8

// Object states.
const (
	// ObjectLive: some committed batch still references the object.
	ObjectLive ObjectState = 1
	// ObjectGarbage: no batch references it (all its batches were rejected,
	// or their topic or records were deleted); the collector may delete it
	// once GarbageSinceMs is older than its grace period.
	ObjectGarbage ObjectState = 2
)

// String names the state for logs.
func (s ObjectState) String() string {
	switch s {
	case ObjectLive:
		return "live"
	case ObjectGarbage:
		return "garbage"
	}
	return "unknown"
}

// ObjectInfo describes one committed object.
type ObjectInfo struct {
	Key  string
	Size int64
	// LiveBytes is the summed length of the committed batches that still
	// reference the object.
	LiveBytes      int64
	State          ObjectState
	BrokerID       int32
	CreatedMs      int64
	GarbageSinceMs int64 // 0 unless State is ObjectGarbage
}

// objectState is an object in memory; never changed in place once
// installed (a change installs a copy).
type objectState struct {
	num            uint64
	key            string
	size           int64
	live           int64
	state          ObjectState
	createdMs      int64
	garbageSinceMs int64
	brokerID       int32
}

// encode is the object's value in its 'o' row.
func (o *objectState) encode() []byte {
	return layout.EncodeObject(&layout.Object{
		State: uint8(o.state), Size: o.size, Live: o.live, CreatedMs: o.createdMs,
		GarbageSinceMs: o.garbageSinceMs, BrokerID: o.brokerID, Key: o.key,
	})
}

// objectStateOf is the object numbered num that value v describes.
func objectStateOf(num uint64, v layout.Object) *objectState {
	return &objectState{
		num: num, key: v.Key, size: v.Size, live: v.Live, state: ObjectState(v.State),
		createdMs: v.CreatedMs, garbageSinceMs: v.GarbageSinceMs, brokerID: v.BrokerID,
	}
}

func (o *objectState) info() ObjectInfo {
	return ObjectInfo{
		Key: o.key, Size: o.size, LiveBytes: o.live, State: o.state,
		BrokerID: o.brokerID, CreatedMs: o.createdMs, GarbageSinceMs: o.garbageSinceMs,
	}
}

// Objects lists every object the coordinator knows, oldest first.
func (c *Coordinator) Objects(ctx context.Context) ([]ObjectInfo, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	c.mu.RLock()
	objs := make([]*objectState, 0, len(c.mu.objects))
	for _, o := range c.mu.objects {
		objs = append(objs, o)
	}
	c.mu.RUnlock()
	sort.Slice(objs, func(i, j int) bool { return objs[i].num < objs[j].num })
	out := make([]ObjectInfo, len(objs))
	for i, o := range objs {
		out[i] = o.info()
	}
	return out, nil
}

// deadBytesLocked takes dead[num] bytes off each object's live bytes,
// writing the new object records into b, and returns them for
// installObjectsLocked after b commits. Objects left with no live bytes
// become garbage. c.commit must be held.
func (c *Coordinator) deadBytesLocked(b *pebble.Batch, dead map[uint64]int64, nowMs int64) []*objectState {
	out := make([]*objectState, 0, len(dead))
	for num, n := range dead {
		old := c.mu.objects[num]
		if old == nil {
			c.log.Error("batch references an unknown object", "object", num)
			continue
		}
		o := *old
		o.live -= n
		if o.live <= 0 {
			if o.live < 0 {
				c.log.Error("object live bytes went negative", "object", o.key, "live", o.live)
			}
			o.live = 0
			if o.state == ObjectLive {
				o.state, o.garbageSinceMs = ObjectGarbage, nowMs
			}
		}
		_ = b.Set(layout.ObjectKey(num), o.encode(), nil)
		out = append(out, &o)
	}
	return out
}

// writeWithNewObjects writes b, whose rows replace batches below the high
// watermark with rows in the new objects objs, and puts objs in memory
// before the write. A reader's iterator (FindBatches, KvGet, FindKeyBatches)
// sees the rows as soon as they are in Pebble, and with a log that is
// before the write returns (the write waits for the log to acknowledge
// it), so the objects must be known by then; nothing else refers to them,
// so the collector leaves them alone meanwhile. A failed write takes them
// out again. c.commit must be held.
func (c *Coordinator) writeWithNewObjects(b *pebble.Batch, objs []*objectState) error {
	c.mu.Lock()
	c.installObjectsLocked(objs)
	c.mu.Unlock()
	err := c.write(b, pebble.Sync)
	if err != nil {
		c.mu.Lock()
		c.forgetObjectsLocked(objs...)
		c.mu.Unlock()
	}
	return err
}

// installObjectsLocked puts new object records in memory. c.commit and
// c.mu must be held.
func (c *Coordinator) installObjectsLocked(objs []*objectState) {
	for _, o := range objs {
		c.mu.objects[o.num] = o
		c.mu.objectsByKey[o.key] = o.num
	}
}

// forgetObjectsLocked takes object records out of memory: the collector's
// deleted ones, or a failed write's new ones. c.commit and c.mu must be
// held.
func (c *Coordinator) forgetObjectsLocked(objs ...*objectState) {
	for _, o := range objs {
		delete(c.mu.objects, o.num)
		delete(c.mu.objectsByKey, o.key)
	}
}
