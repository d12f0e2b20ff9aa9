package broker

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describedGroup is what describedGroups needs of one group of a
// ConsumerGroupDescribe or ShareGroupDescribe response.
type describedGroup[G any] struct {
	// id is the group's id; ops its AuthorizedOperations.
	id  func(*G) string
	ops func(*G) *int32
	// topicsOK reports whether the principal may DESCRIBE every topic the
	// group's members subscribe to or are assigned.
	topicsOK func(*G) bool
	// failed is the answer for a group that failed with code and msg.
	failed func(group string, code int16, msg *string) G
}

// describedGroups answers a group describe request's ids in request order
// once the group coordinator answered the allowed ones (answered, in the
// same order): each answered group with its authorized operations filled
// in when asked for and its topics checked, the others with the error that
// kept them out (GROUP_AUTHORIZATION_FAILED, the coordinator's code, or
// UNKNOWN_SERVER_ERROR when it skipped one). ok is authorizedGroups'.
func describedGroups[G any](b *Broker, r *request, d describedGroup[G], ids []string, ok []bool, answered []G, code int16) []G {
	out := make([]G, 0, len(ids))
	k := 0
	for i, g := range ids {
		if groupOK(ok, i) && k < len(answered) && d.id(&answered[k]) == g {
			dg := answered[k]
			k++
			if ops := d.ops(&dg); *ops != math.MinInt32 { // asked for
				*ops = b.groupAuthorizedOperations(r, g)
			}
			if !d.topicsOK(&dg) {
				dg = d.failed(g, kerr.TopicAuthorizationFailed.Code,
					kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe."))
			}
			out = append(out, dg)
			continue
		}
		c := code
		if !groupOK(ok, i) {
			c = kerr.GroupAuthorizationFailed.Code
		} else if c == 0 {
			c = kerr.UnknownServerError.Code // not answered
		}
		out = append(out, d.failed(g, c, nil))
	}
	return out
}

// topicDescribeCheck returns a check of whether r's principal may DESCRIBE
// a topic, asking the authorizer once per topic.
func (b *Broker) topicDescribeCheck(r *request) func(topic string) bool {
	checked := map[string]bool{}
	return func(t string) bool {
		if ok, seen := checked[t]; seen {
			return ok
		}
		ok := b.authorizedTopic(r, kmsg.ACLOperationDescribe, t)
		checked[t] = ok
		return ok
	}
}
