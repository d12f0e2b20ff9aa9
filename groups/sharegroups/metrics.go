package sharegroups

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
)

// Share group metrics (docs/design/share-groups.md, "Admin and metrics"):
// each share group counts, by topic, the records its operations moved
// (share.Stats, summed where the group applies a share.Result), and
// ShareMetrics reports them with every share-partition's SPSO, completed
// and acquired records, read from memory under the group's lock. The
// counts live as long as the group does in this process: a restarted
// coordinator, or a new HA leader, starts them at zero (a counter reset,
// as Prometheus reads one).

// Counts are a share group's cumulative record counts on one topic,
// the outcomes of floe_share_group_records_total and the lock timeouts.
type Counts struct {
	// Acquired counts first deliveries, Redelivered later ones (after a
	// release or a lock timeout).
	Acquired, Redelivered int64
	// Acknowledged (accepted), Released (by an acknowledgement, or given
	// back when a share session or a member ended), Rejected and Gap
	// count acknowledgements.
	Acknowledged, Released, Rejected, Gap int64
	// ArchivedLimit counts records archived at the delivery count limit
	// (among Released and LockTimeouts), ArchivedLogStart those the log
	// start passed before they completed, ArchivedAborted those of
	// aborted transactions archived under read_committed.
	ArchivedLimit, ArchivedLogStart, ArchivedAborted int64
	// LockTimeouts counts records whose acquisition lock expired.
	LockTimeouts int64
}

// add sums st into c.
func (c *Counts) add(st share.Stats) {
	c.Acquired += st.Acquired
	c.Redelivered += st.Redelivered
	c.Acknowledged += st.Acknowledged
	c.Released += st.Released
	c.Rejected += st.Rejected
	c.Gap += st.Gap
	c.ArchivedLimit += st.ArchivedLimit
	c.ArchivedLogStart += st.ArchivedLogStart
	c.ArchivedAborted += st.ArchivedAborted
	c.LockTimeouts += st.Expired
}

// countLocked adds an operation's stats on topic t to the group's counts
// (the Entry's mutex held).
func (s *Group) countLocked(t tp, st share.Stats) {
	if st == (share.Stats{}) {
		return
	}
	if s.counts == nil {
		s.counts = make(map[topicID]*Counts)
	}
	c := s.counts[t.id]
	if c == nil {
		c = &Counts{}
		s.counts[t.id] = c
	}
	c.add(st)
}

// TopicMetrics is a share group's counts and share-partitions on one
// topic, as ShareMetrics reports them.
type TopicMetrics struct {
	Topic   string
	TopicID [16]byte
	// DataTopic and DataTopicID name the topic holding the records, whose
	// offsets the lag is worked out from: a view's base topic, else Topic.
	DataTopic   string
	DataTopicID [16]byte
	Counts      Counts
	// Partitions are the topic's share-partitions, by partition.
	Partitions []PartitionMetrics
}

// PartitionMetrics is one share-partition's state: its lag is
// bound - Start - Completed (KIP-1226, as DescribeShareGroupOffsets).
type PartitionMetrics struct {
	Partition int32
	// Start is the SPSO; Completed the acknowledged or archived offsets
	// past it.
	Start, Completed int64
	// InFlight is the records acquired and not yet acknowledged, released
	// or timed out.
	InFlight int64
}

// GroupMetrics is one share group's metrics, as ShareMetrics reports
// them.
type GroupMetrics struct {
	Group string
	// ReadCommitted reports share.isolation.level=read_committed: the lag's
	// bound is then the last stable offset.
	ReadCommitted bool
	// Topics are the topics the group has counts or share-partitions on,
	// by name.
	Topics []TopicMetrics
}

// ShareMetrics calls fn with every share group's metrics, in group name
// order, read from memory (no Pebble read): a group's state copied under
// its lock, one group at a time, so that a collection does not hold up the
// groups. Topics are named from the cached topic snapshot; the state of a
// topic deleted since (or not yet listed) is left out. It does nothing
// once closed, and returns the error of listing the topics.
func (c *Coordinator) ShareMetrics(ctx context.Context, fn func(GroupMetrics)) error {
	if !c.host.Enter() {
		return nil
	}
	defer c.host.Leave()
	snap, err := c.host.Topics(ctx)
	if err != nil {
		return err
	}
	groups := c.host.Groups()
	slices.SortFunc(groups, func(a, b Entry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, g := range groups {
		g.Lock()
		s := g.Share()
		if g.Dead() || s == nil {
			g.Unlock()
			continue
		}
		m := GroupMetrics{Group: g.Name()}
		byID := map[topicID]int{}
		topic := func(id topicID) *TopicMetrics {
			i, ok := byID[id]
			if !ok {
				name, known := snap.TopicName(coordapi.TopicID(id))
				var view *coordapi.TopicView
				if known {
					t, _ := snap.Topic(name)
					view = t.View
				} else if v, vok, _ := c.shareViewOf(ctx, id); vok {
					name, known, view = v.name, true, &coordapi.TopicView{BaseID: coordapi.TopicID(v.base), BaseName: v.baseName, Key: v.key}
				}
				if !known {
					return nil
				}
				i = len(m.Topics)
				byID[id] = i
				tm := TopicMetrics{Topic: name, TopicID: id, DataTopic: name, DataTopicID: id}
				if view != nil {
					tm.DataTopic, tm.DataTopicID = view.BaseName, view.BaseID
				}
				m.Topics = append(m.Topics, tm)
			}
			return &m.Topics[i]
		}
		for id, n := range s.counts {
			if t := topic(id); t != nil {
				t.Counts = *n
			}
		}
		for id, ps := range s.parts {
			t := topic(id)
			if t == nil {
				continue
			}
			for n, p := range ps {
				t.Partitions = append(t.Partitions, PartitionMetrics{
					Partition: n, Start: p.Start(), Completed: p.Completed(), InFlight: acquiredOf(p),
				})
			}
		}
		g.Unlock()
		m.ReadCommitted = c.host.Config(g.Name()).ReadCommitted
		for i := range m.Topics {
			slices.SortFunc(m.Topics[i].Partitions, func(a, b PartitionMetrics) int { return cmp.Compare(a.Partition, b.Partition) })
		}
		slices.SortFunc(m.Topics, func(a, b TopicMetrics) int { return strings.Compare(a.Topic, b.Topic) })
		fn(m)
	}
	return nil
}

// acquiredOf is the number of p's records in state Acquired.
func acquiredOf(p *share.Partition) int64 {
	var n int64
	for _, r := range p.Ranges() {
		if r.State == share.Acquired {
			n += r.Len()
		}
	}
	return n
}
