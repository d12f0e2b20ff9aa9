package groups

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerGroup is the state of a KIP-848 consumer group.
type consumerGroup struct {
	members    map[string]*consumerMember
	emptySince time.Time
}

// consumerMember is a KIP-848 group member.
type consumerMember struct {
	id         string
	instanceID *string
	clientID   string
	clientHost string
	topics     []string
}

func (c *consumerGroup) emptyLocked() bool { return len(c.members) == 0 }

func (c *consumerGroup) stateLocked() string {
	if c.emptyLocked() {
		return "Empty"
	}
	return "Stable"
}

func (c *consumerGroup) isSubscribedLocked(topic string) bool {
	for _, m := range c.members {
		if slices.Contains(m.topics, topic) {
			return true
		}
	}
	return false
}

func (c *consumerGroup) nextDeadlineLocked() time.Time { return time.Time{} }

func (c *consumerGroup) sortedMembersLocked() []*consumerMember {
	ms := make([]*consumerMember, 0, len(c.members))
	for _, m := range c.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *consumerMember) int { return strings.Compare(a.id, b.id) })
	return ms
}

func (g *group) expireConsumerLocked(time.Time) {}

func (g *group) validateConsumerCommitLocked(*kmsg.OffsetCommitRequest) *kerr.Error {
	return kerr.UnknownMemberID
}

func (g *group) validateConsumerFetchLocked(kmsg.OffsetFetchRequestGroup) *kerr.Error {
	return nil
}
