package sharegroups

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
)

// fakeHost is a Host in memory: group entries, a fixed topic list, and
// the batches applied to a map. Package groups' tests run the share
// groups inside the real host; this one pins what the Coordinator needs
// of it.
type fakeHost struct {
	mu     sync.Mutex
	groups map[string]*fakeEntry
	topics fakeTopics
	kv     map[string][]byte
	wakes  int
}

type fakeEntry struct {
	mu        sync.Mutex
	name      string
	share     *Group
	dead      bool
	persisted bool
	wakeAt    time.Time
}

func (e *fakeEntry) Name() string       { return e.name }
func (e *fakeEntry) Lock()              { e.mu.Lock() }
func (e *fakeEntry) Unlock()            { e.mu.Unlock() }
func (e *fakeEntry) Dead() bool         { return e.dead }
func (e *fakeEntry) Share() *Group      { return e.share }
func (e *fakeEntry) SetShare(s *Group)  { e.share = s }
func (e *fakeEntry) Unused() bool       { return e.share == nil && !e.persisted }
func (e *fakeEntry) Persisted() bool    { return e.persisted }
func (e *fakeEntry) SetPersisted()      { e.persisted = true }
func (e *fakeEntry) Remove()            { e.dead = true }
func (e *fakeEntry) WakeAt(t time.Time) { e.wakeAt = t }

type fakeTopics map[string]coordapi.Topic

func (t fakeTopics) Topic(name string) (coordapi.Topic, bool) {
	tp, ok := t[name]
	return tp, ok
}

func (t fakeTopics) TopicName(id coordapi.TopicID) (string, bool) {
	for name, tp := range t {
		if tp.ID == id {
			return name, true
		}
	}
	return "", false
}

type fakeBatch struct {
	h   *fakeHost
	ops []func(map[string][]byte)
}

func (b *fakeBatch) Set(k, v []byte) {
	b.ops = append(b.ops, func(m map[string][]byte) { m[string(k)] = v })
}

func (b *fakeBatch) Delete(k []byte) {
	b.ops = append(b.ops, func(m map[string][]byte) { delete(m, string(k)) })
}

func (b *fakeBatch) DeleteRange(lo, hi []byte) {
	b.ops = append(b.ops, func(m map[string][]byte) {
		for k := range m {
			if k >= string(lo) && k < string(hi) {
				delete(m, k)
			}
		}
	})
}

func (b *fakeBatch) Start() (func() error, error) {
	b.h.mu.Lock()
	defer b.h.mu.Unlock()
	for _, op := range b.ops {
		op(b.h.kv)
	}
	return noWait, nil
}

func (h *fakeHost) Enter() bool { return true }
func (h *fakeHost) Leave()      {}

func (h *fakeHost) LockGroup(name string, create bool) (Entry, bool) {
	h.mu.Lock()
	e, created := h.groups[name], false
	if e == nil || e.dead {
		if !create {
			h.mu.Unlock()
			return nil, false
		}
		e, created = &fakeEntry{name: name}, true
		h.groups[name] = e
	}
	h.mu.Unlock()
	e.Lock()
	return e, created
}

func (h *fakeHost) Groups() []Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Entry
	for _, e := range h.groups {
		out = append(out, e)
	}
	return out
}

func (h *fakeHost) Topics(context.Context) (Topics, error) { return h.topics, nil }
func (h *fakeHost) NoteSubscribed([]string)                {}
func (h *fakeHost) Config(string) Config {
	return Config{Partition: share.Config{MaxRecordLocks: share.DefaultMaxRecordLocks,
		DeliveryCountLimit: share.DefaultDeliveryCountLimit, LockDuration: share.DefaultLockDuration}}
}
func (h *fakeHost) NewBatch() Batch { return &fakeBatch{h: h} }
func (h *fakeHost) Wake()           { h.wakes++ }

func (h *fakeHost) GroupRecord(group string, epoch int32, emptySinceMs int64) ([]byte, []byte) {
	return []byte("g" + group), []byte(fmt.Sprintf("share %d %d", epoch, emptySinceMs))
}

// TestCoordinatorOnHost: membership through the Host's interfaces alone:
// joins take the group's entry and write the group record and members
// through its batches, a session deadline reaches the entry, and Expire
// removes the member.
func TestCoordinatorOnHost(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &fakeHost{groups: map[string]*fakeEntry{}, kv: map[string][]byte{},
		topics: fakeTopics{"t": {ID: coordapi.TopicID{1}, Name: "t", Partitions: 4}}}
	done := make(chan struct{})
	c := New(h, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now }, Done: done,
		SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, MaxGroupSize: 10})
	ctx := context.Background()
	join := func(member string) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.SubscribedTopicNames = "g", member, []string{"t"}
		return c.ShareGroupHeartbeat(ctx, coordapi.ClientInfo{ID: "c"}, req)
	}
	if r := join("m1"); r.ErrorCode != 0 || r.MemberEpoch != 1 || len(r.Assignment.TopicPartitions[0].Partitions) != 4 {
		t.Fatalf("m1 joins: %+v", r)
	}
	if r := join("m2"); r.ErrorCode != 0 || r.MemberEpoch != 2 || len(r.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("m2 joins: %+v", r)
	}
	e := h.groups["g"]
	if e.share == nil || !e.persisted || e.wakeAt != now.Add(45*time.Second) {
		t.Fatalf("entry after the joins: %+v", e)
	}
	if got := string(h.kv["gg"]); got != "share 2 0" {
		t.Fatalf("group record %q", got)
	}
	var members []string
	for k := range h.kv {
		if g, m, err := parseShareKey([]byte(k)); err == nil && g == "g" && m != "" {
			members = append(members, m)
		}
	}
	slices.Sort(members)
	if !slices.Equal(members, []string{"m1", "m2"}) {
		t.Fatalf("members written: %v", members)
	}
	now = now.Add(46 * time.Second)
	e.Lock()
	c.Expire(e, now)
	e.Unlock()
	d := c.ShareGroupDescribe(ctx, &kmsg.ShareGroupDescribeRequest{GroupIDs: []string{"g"}})
	if g := d.Groups[0]; g.ErrorCode != 0 || g.GroupState != "Empty" || len(g.Members) != 0 || g.GroupEpoch != 4 {
		t.Fatalf("after the sessions expired: %+v", g)
	}
	if got := string(h.kv["gg"]); got != fmt.Sprintf("share 4 %d", now.UnixMilli()) {
		t.Fatalf("group record after expiry %q", got)
	}
}
