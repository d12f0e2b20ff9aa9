package sharegroups

import (
	"fmt"
	"slices"
	"testing"

	"github.com/floe-io/floe/groups/members"
)

// TestSimpleAssign: the simple assignor's balance and stickiness.
func TestSimpleAssign(t *testing.T) {
	a, b := topicID{1}, topicID{2}
	parts := func(id topicID, n int32) []tp {
		var out []tp
		for p := range n {
			out = append(out, tp{id, p})
		}
		return out
	}
	for _, c := range []struct {
		name string
		subs [][]tp
		prev []members.Partitions
		// want: each member's partition count; each partition's member
		// count (by topic a, then b).
		perMember    []int
		perPartition map[tp]int
		check        func(t *testing.T, out []members.Partitions)
	}{
		{name: "3 members, 1 partition: all share it", subs: [][]tp{parts(a, 1), parts(a, 1), parts(a, 1)},
			perMember: []int{1, 1, 1}, perPartition: map[tp]int{{a, 0}: 3}},
		{name: "8 members, 4 partitions: two each", subs: slices.Repeat([][]tp{parts(a, 4)}, 8),
			perMember: []int{1, 1, 1, 1, 1, 1, 1, 1}, perPartition: map[tp]int{{a, 0}: 2, {a, 1}: 2, {a, 2}: 2, {a, 3}: 2}},
		{name: "2 members, 5 partitions: 3 and 2", subs: slices.Repeat([][]tp{parts(a, 5)}, 2),
			perMember: []int{3, 2}, perPartition: map[tp]int{{a, 0}: 1, {a, 1}: 1, {a, 2}: 1, {a, 3}: 1, {a, 4}: 1}},
		{name: "3 members, 2 partitions: one partition shared", subs: slices.Repeat([][]tp{parts(a, 2)}, 3),
			perMember: []int{1, 1, 1}},
		{name: "heterogeneous: each topic over its subscribers", subs: [][]tp{parts(a, 2), append(parts(a, 2), parts(b, 2)...), parts(b, 2)},
			perMember: []int{1, 2, 1}, perPartition: map[tp]int{{a, 0}: 1, {a, 1}: 1, {b, 0}: 1, {b, 1}: 1}},
		{name: "sticky: a new member takes from the others", subs: slices.Repeat([][]tp{parts(a, 4)}, 3),
			prev:      []members.Partitions{{a: {0, 1}}, {a: {2, 3}}, {}},
			perMember: []int{2, 1, 1},
			check: func(t *testing.T, out []members.Partitions) {
				for i, kept := range []members.Partitions{{a: {0}}, {a: {2}}} {
					if !kept.SubsetOf(out[i]) {
						t.Errorf("member %d: %v, want it to keep %v", i, out[i], kept)
					}
				}
			}},
		{name: "no subscription", subs: [][]tp{nil, parts(a, 1)}, perMember: []int{0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			prev := c.prev
			if prev == nil {
				prev = make([]members.Partitions, len(c.subs))
			}
			out := simpleAssign(c.subs, prev)
			count := map[tp]int{}
			var per []int
			for _, ps := range out {
				per = append(per, ps.Count())
				for id, l := range ps {
					for _, p := range l {
						count[tp{id, p}]++
					}
				}
			}
			if !slices.Equal(per, c.perMember) {
				t.Errorf("per member %v, want %v (%v)", per, c.perMember, out)
			}
			if c.perPartition != nil && fmt.Sprint(count) != fmt.Sprint(c.perPartition) {
				t.Errorf("per partition %v, want %v", count, c.perPartition)
			}
			if c.check != nil {
				c.check(t, out)
			}
		})
	}
}
