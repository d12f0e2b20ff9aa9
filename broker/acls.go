package broker

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floe-io/floe/acl"
	"github.com/floe-io/floe/coordapi"
)

// defaultACLRefresh is Options.ACLRefreshInterval's default: a lost ACL
// notice delays a change by at most this.
const defaultACLRefresh = time.Second

// aclWatcher keeps the broker's authorizer current with the coordinator's
// ACL bindings: it reloads them whenever a notice (SubscribeACLs) or a
// poll of ACLVersion shows a version other than the one it loaded. Until
// the first load only super users are allowed.
type aclWatcher struct {
	store      coordapi.ACLStore
	superUsers []string
	interval   time.Duration
	log        *slog.Logger

	cur atomic.Pointer[acl.Authorizer]
	// version is the ACL version cur was built from; loaded is set once
	// the first load succeeded.
	version atomic.Uint64
	loaded  atomic.Bool
	// wake asks the loop to check the version now (capacity 1).
	wake chan struct{}
	// refreshing serializes refreshes (the loop's and sync's), so that an
	// older load never replaces a newer one.
	refreshing sync.Mutex

	cancel      context.CancelFunc
	done        chan struct{}
	unsubscribe func()
	// warnedAt is when a failure to load was last logged at Warn (Unix
	// ns), so that an unreachable coordinator logs once a minute.
	warnedAt atomic.Int64
}

func newACLWatcher(store coordapi.ACLStore, superUsers []string, interval time.Duration, log *slog.Logger) *aclWatcher {
	w := &aclWatcher{store: store, superUsers: superUsers, interval: interval, log: log,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.cur.Store(acl.New(nil, superUsers))
	var ctx context.Context
	ctx, w.cancel = context.WithCancel(context.Background())
	w.unsubscribe = store.SubscribeACLs(func(v uint64) {
		if !w.loaded.Load() || v != w.version.Load() {
			w.poke()
		}
	})
	go w.run(ctx)
	return w
}

// current returns the authorizer to check a request with.
func (w *aclWatcher) current() *acl.Authorizer { return w.cur.Load() }

// poke makes the loop check the version now.
func (w *aclWatcher) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *aclWatcher) run(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		w.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-t.C:
		}
	}
}

// sync loads the coordinator's current bindings now, if they changed: the
// ACL APIs call it before they answer, so that the broker that served a
// change applies it before its client learns it is done. Other brokers
// apply it on the notice or their next poll.
func (w *aclWatcher) sync(ctx context.Context) { w.refresh(ctx) }

// refresh reloads the bindings when the coordinator's ACL version is not
// the loaded one. The version is read before the bindings, so that a
// change in between is loaded again at the next check.
func (w *aclWatcher) refresh(ctx context.Context) {
	w.refreshing.Lock()
	defer w.refreshing.Unlock()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := w.store.ACLVersion(ctx)
	if err != nil {
		w.failed(parent, "read acl version", err)
		return
	}
	if w.loaded.Load() && v == w.version.Load() {
		return
	}
	bindings, err := w.store.DescribeACLs(ctx, coordapi.ACLFilterAll)
	if err != nil {
		w.failed(parent, "load acls", err)
		return
	}
	a := acl.New(bindings, w.superUsers)
	w.cur.Store(a)
	w.version.Store(v)
	first := !w.loaded.Swap(true)
	w.log.Info("acls loaded", "version", v, "bindings", a.Len(), "first", first)
}

// failed logs a refresh that failed: at Warn once a minute, else at Debug;
// not at all when ctx (the broker's, or the request's) ended.
func (w *aclWatcher) failed(ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		return // closing
	}
	now := time.Now().UnixNano()
	if last := w.warnedAt.Load(); now-last >= int64(time.Minute) && w.warnedAt.CompareAndSwap(last, now) {
		w.log.Warn("cannot refresh acls, keeping the loaded ones", "op", what, "loaded", w.loaded.Load(), "version", w.version.Load(), "err", err)
		return
	}
	w.log.Debug("cannot refresh acls", "op", what, "err", err)
}

// close stops the watcher.
func (w *aclWatcher) close() {
	w.unsubscribe()
	w.cancel()
	<-w.done
}

// aclState reports the version of the bindings the broker authorizes with
// and whether it loaded them yet (tests wait on it).
func (b *Broker) aclState() (version uint64, loaded bool) {
	if b.acls == nil {
		return 0, false
	}
	return b.acls.version.Load(), b.acls.loaded.Load()
}
