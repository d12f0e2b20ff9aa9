package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

var (
	idA  = coordapi.TopicID{0xa}
	idA2 = coordapi.TopicID{0xa, 2}
	idB  = coordapi.TopicID{0xb}
	idC  = coordapi.TopicID{0xc}
)

// fakeCopy is a shard's own topics. It records its changes, in order;
// errs fails them by method name (and topic name or id, "Method name").
type fakeCopy struct {
	mu     sync.Mutex
	topics map[string]coordapi.Topic
	calls  []string
	errs   map[string]error
}

func newCopy(topics ...coordapi.Topic) *fakeCopy {
	c := &fakeCopy{topics: map[string]coordapi.Topic{}}
	for _, t := range topics {
		c.topics[t.Name] = t
	}
	return c
}

func (c *fakeCopy) err(method, what string) error {
	if err := c.errs[method+" "+what]; err != nil {
		return err
	}
	return c.errs[method]
}

func (c *fakeCopy) Topic(_ context.Context, name string) (coordapi.Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.err("Topic", name); err != nil {
		return coordapi.Topic{}, err
	}
	t, ok := c.topics[name]
	if !ok {
		return t, fmt.Errorf("topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	return t, nil
}

func (c *fakeCopy) Topics(context.Context) ([]coordapi.Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.err("Topics", ""); err != nil {
		return nil, err
	}
	var out []coordapi.Topic
	for _, name := range slices.Sorted(maps.Keys(c.topics)) {
		out = append(out, c.topics[name])
	}
	return out, nil
}

func (c *fakeCopy) DeleteTopicByID(_ context.Context, id coordapi.TopicID) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("delete %x", id[:2]))
	if err := c.err("Delete", fmt.Sprintf("%x", id[:2])); err != nil {
		return "", err
	}
	for name, t := range c.topics {
		if t.ID == id {
			delete(c.topics, name)
			return name, nil
		}
	}
	return "", fmt.Errorf("topic %s: %w", id, kerr.UnknownTopicID)
}

func (c *fakeCopy) CreateTopicAs(_ context.Context, req coordapi.CreateTopicRequest, id coordapi.TopicID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("create %s %x %d rf%d %v", req.Name, id[:2], req.Partitions, req.ReplicationFactor, req.Configs))
	if err := c.err("Create", req.Name); err != nil {
		return err
	}
	if req.ValidateOnly {
		return nil
	}
	c.topics[req.Name] = coordapi.Topic{ID: id, Name: req.Name, Partitions: req.Partitions, Configs: maps.Clone(req.Configs)}
	return nil
}

func (c *fakeCopy) CreatePartitions(_ context.Context, name string, count int32, validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("partitions %s %d validate=%v", name, count, validateOnly))
	if err := c.err("Partitions", name); err != nil {
		return err
	}
	if !validateOnly {
		t := c.topics[name]
		t.Partitions = count
		c.topics[name] = t
	}
	return nil
}

func (c *fakeCopy) SetTopicConfigs(_ context.Context, name string, ops []coordapi.ConfigOp) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s []string
	configs := map[string]string{}
	for _, op := range ops {
		if op.Op != coordapi.OpSet || op.Value == nil {
			s = append(s, fmt.Sprintf("op%d %s", op.Op, op.Name))
			continue
		}
		s = append(s, op.Name+"="+*op.Value)
		configs[op.Name] = *op.Value
	}
	slices.Sort(s)
	c.calls = append(c.calls, fmt.Sprintf("configs %s %s", name, strings.Join(s, ",")))
	if err := c.err("Configs", name); err != nil {
		return err
	}
	t := c.topics[name]
	t.Configs = configs
	c.topics[name] = t
	return nil
}

func (c *fakeCopy) changes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// state returns the copy's topics, by name.
func (c *fakeCopy) state() map[string]coordapi.Topic {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.topics)
}

func topicsEqual(a, b map[string]coordapi.Topic) bool {
	return maps.EqualFunc(a, b, func(x, y coordapi.Topic) bool {
		return x.ID == y.ID && x.Name == y.Name && x.Partitions == y.Partitions && maps.Equal(x.Configs, y.Configs)
	})
}

// TestTopic checks how Topic brings a topic's copy to the owner's: a
// missing copy created under the owner's id (replication -1, the owner's
// configs), one under another id deleted and created again, partitions
// grown, configs replaced by the owner's set (all of them, as SET ops),
// nothing for a copy level with the owner or a view, and the refusals
// and errors.
func TestTopic(t *testing.T) {
	boom := errors.New("boom")
	a := coordapi.Topic{ID: idA, Name: "a", Partitions: 3, Configs: map[string]string{"retention.ms": "10", "cleanup.policy": "compact"}}
	with := func(t coordapi.Topic, f func(*coordapi.Topic)) coordapi.Topic {
		t.Configs = maps.Clone(t.Configs)
		f(&t)
		return t
	}
	for _, tc := range []struct {
		name    string
		have    []coordapi.Topic
		want    coordapi.Topic
		errs    map[string]error
		calls   []string
		changed bool
		after   []coordapi.Topic // the copy's topics after; nil: want alone
		err     string
	}{
		{name: "missing", want: a, changed: true,
			calls: []string{"create a 0a00 3 rf-1 map[cleanup.policy:compact retention.ms:10]"}},
		{name: "level", have: []coordapi.Topic{a}, want: a},
		{name: "level, no configs", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Configs = nil })},
			want: with(a, func(t *coordapi.Topic) { t.Configs = map[string]string{} })},
		{name: "another id", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.ID = idA2; t.Partitions = 9 })},
			want: a, changed: true,
			calls: []string{"delete 0a02", "create a 0a00 3 rf-1 map[cleanup.policy:compact retention.ms:10]"}},
		{name: "more partitions", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Partitions = 1 })},
			want: a, changed: true, calls: []string{"partitions a 3 validate=false"}},
		{name: "fewer partitions", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Partitions = 5 })},
			want: a, err: "partitions are never removed",
			after: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Partitions = 5 })}},
		{name: "one partition fewer", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Partitions = 4 })},
			want: a, err: "partitions are never removed",
			after: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Partitions = 4 })}},
		{name: "a config changed", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Configs["retention.ms"] = "20" })},
			want: a, changed: true, calls: []string{"configs a cleanup.policy=compact,retention.ms=10"}},
		{name: "a config removed", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Configs["segment.ms"] = "5" })},
			want: a, changed: true, calls: []string{"configs a cleanup.policy=compact,retention.ms=10"}},
		{name: "all configs removed", have: []coordapi.Topic{a},
			want: with(a, func(t *coordapi.Topic) { t.Configs = nil }), changed: true, calls: []string{"configs a "}},
		{name: "partitions and configs", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Partitions = 2; t.Configs = nil })},
			want: a, changed: true, calls: []string{"partitions a 3 validate=false", "configs a cleanup.policy=compact,retention.ms=10"}},
		{name: "view", want: with(a, func(t *coordapi.Topic) { t.View = &coordapi.TopicView{BaseID: idB, BaseName: "b"} }),
			after: []coordapi.Topic{}},
		{name: "copy unreadable", want: a, errs: map[string]error{"Topic": boom}, err: "boom", after: []coordapi.Topic{}},
		{name: "create fails", want: a, errs: map[string]error{"Create": boom}, err: "boom", after: []coordapi.Topic{},
			calls: []string{"create a 0a00 3 rf-1 map[cleanup.policy:compact retention.ms:10]"}},
		{name: "delete of the old id fails", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.ID = idA2 })},
			want: a, errs: map[string]error{"Delete": boom}, err: "under the old id",
			after: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.ID = idA2 })}, calls: []string{"delete 0a02"}},
		{name: "create after the delete fails", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.ID = idA2 })},
			want: a, errs: map[string]error{"Create": boom}, err: "boom", changed: true, after: []coordapi.Topic{},
			calls: []string{"delete 0a02", "create a 0a00 3 rf-1 map[cleanup.policy:compact retention.ms:10]"}},
		{name: "partitions fail", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Partitions = 1 })},
			want: a, errs: map[string]error{"Partitions": boom}, err: "boom",
			after: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Partitions = 1 })}, calls: []string{"partitions a 3 validate=false"}},
		{name: "configs fail after partitions", have: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Partitions = 1; t.Configs = nil })},
			want: a, errs: map[string]error{"Configs": boom}, err: "boom", changed: true,
			after: []coordapi.Topic{with(a, func(t *coordapi.Topic) { t.Configs = nil })},
			calls: []string{"partitions a 3 validate=false", "configs a cleanup.policy=compact,retention.ms=10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := newCopy(tc.have...)
			cp.errs = tc.errs
			changed, err := New(cp).Topic(context.Background(), tc.want)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("err %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if changed != tc.changed {
				t.Errorf("changed %v, want %v", changed, tc.changed)
			}
			if got := cp.changes(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
			after := map[string]coordapi.Topic{tc.want.Name: tc.want}
			if tc.after != nil {
				after = newCopy(tc.after...).topics
			}
			if got := cp.state(); !topicsEqual(got, after) {
				t.Errorf("copy %+v, want %+v", got, after)
			}
		})
	}
}

// fakeOwner is shard 0's topics. Topics waits on gate (when set) after
// it signals listing; with waitCtx, it waits for its context to end
// first, signals ctxDone and answers the context's error.
type fakeOwner struct {
	waitCtx   bool
	ctxDone   chan struct{}
	mu        sync.Mutex
	topics    []coordapi.Topic
	topicsErr error
	byIDErr   error
	lists     int
	listing   chan struct{}
	gate      chan struct{}
	notify    func([]coordapi.TopicNotice)
	cancelled bool
}

func (o *fakeOwner) Topics(ctx context.Context) ([]coordapi.Topic, error) {
	o.mu.Lock()
	o.lists++
	listing, gate := o.listing, o.gate
	o.mu.Unlock()
	if listing != nil {
		listing <- struct{}{}
	}
	if o.waitCtx {
		<-ctx.Done()
		close(o.ctxDone)
	}
	if gate != nil {
		<-gate
	}
	if o.waitCtx {
		return nil, ctx.Err()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.topics), o.topicsErr
}

func (o *fakeOwner) TopicByID(_ context.Context, id coordapi.TopicID) (coordapi.Topic, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byIDErr != nil {
		return coordapi.Topic{}, o.byIDErr
	}
	for _, t := range o.topics {
		if t.ID == id {
			return t, nil
		}
	}
	return coordapi.Topic{}, fmt.Errorf("topic %s: %w", id, kerr.UnknownTopicID)
}

func (o *fakeOwner) SubscribeTopics(fn func([]coordapi.TopicNotice)) (cancel func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.notify = fn
	return func() { o.mu.Lock(); o.cancelled = true; o.mu.Unlock() }
}

func (o *fakeOwner) setTopics(ts ...coordapi.Topic) {
	o.mu.Lock()
	o.topics = ts
	o.mu.Unlock()
}

func (o *fakeOwner) listed() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lists
}

// TestTopics checks that Topics makes the copy's topics the owner's:
// each followed, the copies the owner lacks deleted (one already gone
// counted as deleted), the changes counted, and errors joined while the
// others go on.
func TestTopics(t *testing.T) {
	boom, boom2 := errors.New("boom"), errors.New("boom2")
	a := coordapi.Topic{ID: idA, Name: "a", Partitions: 2}
	b := coordapi.Topic{ID: idB, Name: "b", Partitions: 1}
	c := coordapi.Topic{ID: idC, Name: "c", Partitions: 4}
	view := coordapi.Topic{ID: coordapi.TopicID{0xd}, Name: "a/v", Partitions: 2, View: &coordapi.TopicView{BaseID: idA, BaseName: "a"}}
	for _, tc := range []struct {
		name      string
		owner     []coordapi.Topic
		have      []coordapi.Topic
		topicsErr error
		errs      map[string]error
		after     []coordapi.Topic
		changed   int
		err       []error
		calls     []string
	}{
		{name: "level", owner: []coordapi.Topic{a, b}, have: []coordapi.Topic{a, b}, after: []coordapi.Topic{a, b}},
		{name: "create, grow, delete", owner: []coordapi.Topic{a, b, view}, have: []coordapi.Topic{{ID: idA, Name: "a", Partitions: 1}, c},
			after: []coordapi.Topic{a, b}, changed: 3,
			calls: []string{"partitions a 2 validate=false", "create b 0b00 1 rf-1 map[]", "delete 0c00"}},
		{name: "owner has none", have: []coordapi.Topic{a, c}, after: []coordapi.Topic{}, changed: 2,
			calls: []string{"delete 0a00", "delete 0c00"}},
		{name: "owner unreadable", owner: []coordapi.Topic{a}, have: []coordapi.Topic{c}, topicsErr: boom,
			after: []coordapi.Topic{c}, err: []error{boom}},
		{name: "a follow fails, the others go on", owner: []coordapi.Topic{a, b}, have: []coordapi.Topic{c},
			errs: map[string]error{"Create a": boom}, after: []coordapi.Topic{b}, changed: 2, err: []error{boom},
			calls: []string{"create a 0a00 2 rf-1 map[]", "create b 0b00 1 rf-1 map[]", "delete 0c00"}},
		{name: "two fail", owner: []coordapi.Topic{a, b}, have: []coordapi.Topic{c},
			errs: map[string]error{"Create a": boom, "Delete 0c00": boom2}, after: []coordapi.Topic{b, c}, changed: 1,
			err:   []error{boom, boom2},
			calls: []string{"create a 0a00 2 rf-1 map[]", "create b 0b00 1 rf-1 map[]", "delete 0c00"}},
		{name: "copy unlisted", owner: []coordapi.Topic{a}, have: []coordapi.Topic{c}, errs: map[string]error{"Topics": boom},
			after: []coordapi.Topic{a, c}, changed: 1, err: []error{boom}, calls: []string{"create a 0a00 2 rf-1 map[]"}},
		{name: "copy gone meanwhile", owner: []coordapi.Topic{a}, have: []coordapi.Topic{a, c},
			errs: map[string]error{"Delete 0c00": fmt.Errorf("gone: %w", kerr.UnknownTopicID)}, after: []coordapi.Topic{a, c}, changed: 1,
			calls: []string{"delete 0c00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := newCopy(tc.have...)
			cp.errs = tc.errs
			owner := &fakeOwner{topics: tc.owner, topicsErr: tc.topicsErr}
			changed, err := New(cp).Topics(context.Background(), owner)
			if len(tc.err) == 0 && err != nil {
				t.Fatalf("err %v", err)
			}
			for _, e := range tc.err {
				if !errors.Is(err, e) {
					t.Errorf("err %v, want it to hold %v", err, e)
				}
			}
			if changed != tc.changed {
				t.Errorf("changed %d, want %d", changed, tc.changed)
			}
			if got := cp.changes(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
			if got, want := cp.state(), newCopy(tc.after...).topics; !topicsEqual(got, want) {
				t.Errorf("copy %+v, want %+v", got, want)
			}
		})
	}
}

// TestTopicID checks TopicID: a topic the owner has followed and known,
// one it does not have deleted here (or already absent) and not known,
// and the owner's other errors.
func TestTopicID(t *testing.T) {
	boom := errors.New("boom")
	a := coordapi.Topic{ID: idA, Name: "a", Partitions: 2}
	for _, tc := range []struct {
		name    string
		owner   []coordapi.Topic
		have    []coordapi.Topic
		byIDErr error
		errs    map[string]error
		id      coordapi.TopicID
		known   bool
		after   []coordapi.Topic
		calls   []string
		err     string
	}{
		{name: "new", owner: []coordapi.Topic{a}, id: idA, known: true, after: []coordapi.Topic{a},
			calls: []string{"create a 0a00 2 rf-1 map[]"}},
		{name: "level", owner: []coordapi.Topic{a}, have: []coordapi.Topic{a}, id: idA, known: true, after: []coordapi.Topic{a}},
		{name: "deleted at the owner", have: []coordapi.Topic{a}, id: idA, after: []coordapi.Topic{},
			calls: []string{"delete 0a00"}},
		{name: "unknown everywhere", id: idA, after: []coordapi.Topic{}, calls: []string{"delete 0a00"}},
		{name: "delete fails", have: []coordapi.Topic{a}, id: idA, errs: map[string]error{"Delete": boom},
			after: []coordapi.Topic{a}, calls: []string{"delete 0a00"}, err: "delete: boom"},
		{name: "owner fails", owner: []coordapi.Topic{a}, byIDErr: boom, id: idA, after: []coordapi.Topic{}, err: "ask the owner: boom"},
		{name: "follow fails", owner: []coordapi.Topic{a}, id: idA, errs: map[string]error{"Create": boom},
			after: []coordapi.Topic{}, calls: []string{"create a 0a00 2 rf-1 map[]"}, err: "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := newCopy(tc.have...)
			cp.errs = tc.errs
			owner := &fakeOwner{topics: tc.owner, byIDErr: tc.byIDErr}
			known, err := New(cp).TopicID(context.Background(), owner, tc.id)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("err %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if known != tc.known {
				t.Errorf("known %v, want %v", known, tc.known)
			}
			if got := cp.changes(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
			if got, want := cp.state(), newCopy(tc.after...).topics; !topicsEqual(got, want) {
				t.Errorf("copy %+v, want %+v", got, want)
			}
		})
	}
}

// TestLock checks that follows are serialized: a TopicID behind a Topics
// still reading the owner waits, gives up with its context, and runs once
// the Topics ends; so a listing taken before a topic was created does not
// delete the copy a later follow made.
func TestLock(t *testing.T) {
	a := coordapi.Topic{ID: idA, Name: "a", Partitions: 2}
	cp := newCopy()
	owner := &fakeOwner{listing: make(chan struct{}), gate: make(chan struct{})}
	f := New(cp)
	listed := make(chan error, 1)
	go func() { _, err := f.Topics(context.Background(), owner); listed <- err }()
	<-owner.listing // Topics holds the lock, its listing (no topics) taken

	// The topic is created at the owner: its commit asks for it.
	owner.setTopics(a)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if known, err := f.TopicID(ctx, owner, idA); !errors.Is(err, context.DeadlineExceeded) || known {
		t.Fatalf("TopicID behind a follow: known %v, err %v; want a deadline", known, err)
	}
	if got := cp.changes(); len(got) != 0 {
		t.Fatalf("changes while the follow held the lock: %q", got)
	}
	asked := make(chan bool, 1)
	go func() {
		known, err := f.TopicID(context.Background(), owner, idA)
		asked <- known && err == nil
	}()
	close(owner.gate)
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
	if !<-asked {
		t.Fatal("TopicID after the follow did not know the topic")
	}
	if got, want := cp.state(), newCopy(a).topics; !topicsEqual(got, want) {
		t.Errorf("copy %+v, want %+v", got, want)
	}
}

// TestStart checks the background follow: it follows at once, again at
// an owner's topic notice, and stop waits for it and unsubscribes.
func TestStart(t *testing.T) {
	a := coordapi.Topic{ID: idA, Name: "a", Partitions: 2}
	b := coordapi.Topic{ID: idB, Name: "b", Partitions: 3}
	cp := newCopy()
	owner := &fakeOwner{topics: []coordapi.Topic{a}}
	stop := New(cp).Start(owner, time.Hour, 1, testkit.Logger())
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	testkit.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if got, want := cp.state(), newCopy(a).topics; !topicsEqual(got, want) {
			return fmt.Errorf("copy %+v, want %+v", got, want)
		}
		return nil
	})
	owner.setTopics(a, b)
	owner.mu.Lock()
	notify := owner.notify
	owner.mu.Unlock()
	if notify == nil {
		t.Fatal("no subscription to the owner's topic notices")
	}
	notify([]coordapi.TopicNotice{{ID: idB, Name: "b"}})
	notify([]coordapi.TopicNotice{{ID: idB, Name: "b"}}) // never blocks
	testkit.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if got, want := cp.state(), newCopy(a, b).topics; !topicsEqual(got, want) {
			return fmt.Errorf("copy %+v, want %+v", got, want)
		}
		return nil
	})
	stop()
	stopped = true
	n := owner.listed()
	owner.mu.Lock()
	cancelled := owner.cancelled
	owner.mu.Unlock()
	if !cancelled {
		t.Error("stop left the subscription")
	}
	notify(nil)
	if owner.listed() != n {
		t.Error("a follow after stop")
	}
}

// TestStartInterval checks that the background follow reads the owner
// again every interval, with no notice.
func TestStartInterval(t *testing.T) {
	owner := &fakeOwner{}
	stop := New(newCopy()).Start(owner, 10*time.Millisecond, 1, testkit.Logger())
	defer stop()
	testkit.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if n := owner.listed(); n < 3 {
			return fmt.Errorf("%d follows", n)
		}
		return nil
	})
}

// warnings counts the records logged at warn or above.
type warnings struct {
	mu sync.Mutex
	n  int
}

func (h *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (h *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
	return nil
}
func (h *warnings) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *warnings) WithGroup(string) slog.Handler      { return h }

// TestStartStop checks that stop ends the follow under way (its context
// is cancelled), waits for it to return, and takes the error of a follow
// cut short by stop for no failure (no warning).
func TestStartStop(t *testing.T) {
	owner := &fakeOwner{waitCtx: true, ctxDone: make(chan struct{}), listing: make(chan struct{}, 1), gate: make(chan struct{})}
	h := &warnings{}
	stop := New(newCopy()).Start(owner, time.Hour, 1, slog.New(h))
	<-owner.listing // a follow is under way
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	<-owner.ctxDone // stop cancelled the follow, which has not returned yet
	select {
	case <-stopped:
		t.Error("stop returned before the follow under way did")
	default:
	}
	close(owner.gate)
	<-stopped
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n != 0 {
		t.Errorf("%d warnings for a follow stopped", h.n)
	}
}
