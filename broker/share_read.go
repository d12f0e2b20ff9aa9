package broker

import (
	"cmp"
	"context"
	"slices"

	"github.com/floe-io/floe/broker/fetchread"
	"github.com/floe-io/floe/coordapi"
)

// readShared reads the acquired records of a ShareFetch's partitions
// (fetchread's ReadShared), once their views are resolved, and counts the
// bytes read as Fetch's.
func (b *Broker) readShared(ctx context.Context, parts []*fetchread.ShareRead) {
	b.shareViews(ctx, parts)
	if n := b.reads.ReadShared(ctx, parts); n > 0 {
		b.metrics.bytesOut.Add(ctx, int64(n))
	}
}

// shareViews resolves the parts on hierarchical views (their ids are
// derived, coordapi.IsViewTopicID): a view that cannot be resolved fails
// its part with the lookup's error (its records go back unread).
func (b *Broker) shareViews(ctx context.Context, parts []*fetchread.ShareRead) {
	for _, p := range parts {
		if !coordapi.IsViewTopicID(p.Topic) || len(p.Acq.Acquired) == 0 {
			continue
		}
		t, err := b.topics.ByID(ctx, p.Topic)
		switch {
		case err != nil:
			p.Code = coordapi.ErrorCode(err)
		case t.View != nil:
			p.View = t.View
		}
	}
}

// sendShareInternalAcks sends the internal acknowledgements of parts to
// the coordinator, off the answer path, in one ShareAcquire of the
// session's member without fetch. Nothing is lost if it fails: the
// records stay acquired until their lock expires, then come back, and are
// filtered out again. A member's next acquisition here waits for a return
// of unread records (as for a release), so that it never gives back what
// that acquisition takes.
func (b *Broker) sendShareInternalAcks(group, member string, parts []*fetchread.ShareRead) {
	req := coordapi.ShareAcquireRequest{Group: group, Member: member, Via: b.opts.NodeID}
	returns := false
	for _, p := range parts {
		if len(p.Internal) == 0 {
			continue
		}
		// Acknowledgement batches go in offset order (the coordinator
		// refuses overlapping or descending ones): unread records past
		// the bytes read were noted before aborted ones below them.
		acks := slices.SortedFunc(slices.Values(p.Internal), func(x, y coordapi.ShareAckBatch) int { return cmp.Compare(x.First, y.First) })
		req.Partitions = append(req.Partitions, coordapi.ShareAcquirePartition{Topic: p.Topic, Partition: p.Partition, Acks: acks})
		for _, a := range acks {
			returns = returns || a.Types[0] == coordapi.ShareAckReturnUnread
		}
	}
	if len(req.Partitions) == 0 || b.groups == nil {
		return
	}
	done := func() {}
	if returns {
		done = b.shares.startRelease(shareSessionKey{group, member})
	}
	b.shareReleases.Add(1)
	go func() {
		defer b.shareReleases.Done()
		defer done()
		ctx, cancel := context.WithTimeout(context.Background(), shareReleaseTimeout)
		defer cancel()
		if _, err := b.groups.ShareAcquire(ctx, req); err != nil {
			b.log.Warn("archive aborted or return unread share records; they come back when their lock expires",
				"group", group, "member_id", member, "err", err)
		}
	}()
}
