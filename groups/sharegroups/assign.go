package sharegroups

import (
	"bytes"
	"cmp"
	"maps"
	"slices"

	"github.com/floe-io/floe/groups/members"
)

// tp is one topic partition, by topic id.
type tp struct {
	id topicID
	p  int32
}

func (a tp) compare(b tp) int {
	if c := bytes.Compare(a.id[:], b.id[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.p, b.p)
}

// simpleAssign is Kafka's simple share group assignor (4.1+): balanced and
// sticky. subs[i] lists member i's subscribed partitions (sorted), prev[i]
// its previous target. When every member subscribes to the same
// partitions they are spread together; otherwise each topic is spread
// over the members subscribing to it. With at least as many members as
// partitions, each member gets one partition and each partition ⌊M/P⌋ or
// ⌈M/P⌉ members; with fewer, each partition goes to one member, and each
// member gets ⌊P/M⌋ or ⌈P/M⌉. Members keep what they had where the
// balance allows.
func simpleAssign(subs [][]tp, prev []members.Partitions) []members.Partitions {
	out := make([]members.Partitions, len(subs))
	for i := range out {
		out[i] = members.Partitions{}
	}
	homogeneous := true
	for i := 1; i < len(subs); i++ {
		if !slices.Equal(subs[i], subs[0]) {
			homogeneous = false
			break
		}
	}
	if homogeneous {
		if len(subs) > 0 {
			all := make([]int, len(subs))
			for i := range all {
				all[i] = i
			}
			spread(subs[0], all, prev, out)
		}
		return out
	}
	// Heterogeneous: each topic over its subscribers.
	byTopic := map[topicID][]tp{}
	members := map[topicID][]int{}
	for i, s := range subs {
		for _, x := range s {
			if len(members[x.id]) == 0 || members[x.id][len(members[x.id])-1] != i {
				members[x.id] = append(members[x.id], i)
			}
			if len(members[x.id]) == 1 {
				byTopic[x.id] = append(byTopic[x.id], x)
			}
		}
	}
	ids := slices.SortedFunc(maps.Keys(byTopic), func(a, b topicID) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range ids {
		spread(byTopic[id], members[id], prev, out)
	}
	return out
}

// spread assigns parts over the members ms (indexes into prev and out).
func spread(parts []tp, ms []int, prev, out []members.Partitions) {
	if len(parts) == 0 || len(ms) == 0 {
		return
	}
	M, P := len(ms), len(parts)
	if M >= P {
		// Each member one partition; each partition floor or ceil
		// members, extras of them ceil.
		floor, extras := M/P, M%P
		count := make(map[tp]int, P)
		take := func(x tp) bool {
			switch n := count[x]; {
			case n < floor:
			case n == floor && extras > 0:
				extras--
			default:
				return false
			}
			count[x]++
			return true
		}
		var rest []int
		for _, i := range ms {
			kept := false
			for _, x := range parts {
				if prev[i].Has(x.id, x.p) && take(x) {
					out[i].Add(x.id, x.p)
					kept = true
					break
				}
			}
			if !kept {
				rest = append(rest, i)
			}
		}
		for _, i := range rest {
			// The least loaded partition that may take one more.
			best := -1
			for j, x := range parts {
				n := count[x]
				if n > floor || (n == floor && extras == 0) {
					continue
				}
				if best < 0 || n < count[parts[best]] {
					best = j
				}
			}
			x := parts[best]
			take(x)
			out[i].Add(x.id, x.p)
		}
		return
	}
	// Each partition one member; each member floor or ceil partitions.
	floor, extras := P/M, P%M
	count := make(map[int]int, M)
	take := func(i int) bool {
		switch n := count[i]; {
		case n < floor:
		case n == floor && extras > 0:
			extras--
		default:
			return false
		}
		count[i]++
		return true
	}
	owned := make(map[tp]bool, P)
	for _, i := range ms {
		for _, x := range parts {
			if !owned[x] && prev[i].Has(x.id, x.p) && take(i) {
				out[i].Add(x.id, x.p)
				owned[x] = true
			}
		}
	}
	for _, x := range parts {
		if owned[x] {
			continue
		}
		best := -1
		for _, i := range ms {
			n := count[i]
			if n > floor || (n == floor && extras == 0) {
				continue
			}
			if best < 0 || n < count[best] {
				best = i
			}
		}
		take(best)
		out[best].Add(x.id, x.p)
	}
}
