package members

import (
	"slices"
	"strings"
)

// Subscription is a heartbeat's subscribed topic names as a member keeps
// them: copied out of the request's buffer (which the connection reuses),
// sorted and without duplicates, so that two subscriptions compare with
// slices.Equal and the member record writes them in one order.
func Subscription(names []string) []string {
	topics := make([]string, len(names))
	for i, t := range names {
		topics[i] = strings.Clone(t)
	}
	slices.Sort(topics)
	return slices.Compact(topics)
}
