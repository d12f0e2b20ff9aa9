package coordinator

import "github.com/floe-io/floe/coordapi"

// Subscribe registers fn to be called after every successful commit that
// advanced at least one high watermark, with one notice per such
// partition, so that long-polling fetches can wake up. fn runs on the
// committing goroutine, after the commit's locks are released, and should
// return quickly (hand off to a channel); it must not modify the slice,
// which every subscriber shares. Notices of concurrent commits may
// arrive out of order; a high watermark only grows, so keep the largest.
// The returned cancel stops further calls.
func (c *Coordinator) Subscribe(fn func([]coordapi.CommitNotice)) (cancel func()) {
	c.subs.Lock()
	defer c.subs.Unlock()
	if c.subs.fns == nil {
		c.subs.fns = map[int]func([]coordapi.CommitNotice){}
	}
	id := c.subs.next
	c.subs.next++
	c.subs.fns[id] = fn
	return func() {
		c.subs.Lock()
		delete(c.subs.fns, id)
		c.subs.Unlock()
	}
}

// notify calls every subscriber with notices. No lock is held while a
// subscriber runs.
func (c *Coordinator) notify(notices []coordapi.CommitNotice) {
	if len(notices) == 0 {
		return
	}
	c.subs.Lock()
	fns := make([]func([]coordapi.CommitNotice), 0, len(c.subs.fns))
	for _, fn := range c.subs.fns {
		fns = append(fns, fn)
	}
	c.subs.Unlock()
	for _, fn := range fns {
		fn(notices)
	}
}
