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

// SubscribeTopics registers fn to be called after every topic change that
// committed (created, deleted, partitions added, configs altered), with the
// topic's id and name, so that brokers drop what they cached of it. fn runs
// on the changing goroutine after its locks are released and should return
// quickly. The returned cancel stops further calls.
func (c *Coordinator) SubscribeTopics(fn func([]coordapi.TopicNotice)) (cancel func()) {
	c.subs.Lock()
	defer c.subs.Unlock()
	if c.subs.topics == nil {
		c.subs.topics = map[int]func([]coordapi.TopicNotice){}
	}
	id := c.subs.next
	c.subs.next++
	c.subs.topics[id] = fn
	return func() {
		c.subs.Lock()
		delete(c.subs.topics, id)
		c.subs.Unlock()
	}
}

// notifyTopics calls every topic subscriber with *changed, if set. Topic
// changes defer it before taking their locks, so it runs after they are
// released.
func (c *Coordinator) notifyTopics(changed *coordapi.TopicNotice) {
	if changed.Name == "" {
		return
	}
	c.subs.Lock()
	fns := make([]func([]coordapi.TopicNotice), 0, len(c.subs.topics))
	for _, fn := range c.subs.topics {
		fns = append(fns, fn)
	}
	c.subs.Unlock()
	ns := []coordapi.TopicNotice{*changed}
	for _, fn := range fns {
		fn(ns)
	}
}
