package service

import (
	"fmt"
	"testing"
)

// TestCapLags: whole groups in name order until the cap; later groups keep
// their sum only.
func TestCapLags(t *testing.T) {
	parts := func(n int) []partLag { return make([]partLag, n) }
	for _, tc := range []struct {
		max  int
		want string // groups with their partitions kept
	}{
		{max: 100, want: "a:2 b:3 c:1"},
		{max: 6, want: "a:2 b:3 c:1"},
		{max: 5, want: "a:2 b:3 c:0"},
		{max: 4, want: "a:2 b:0 c:0"}, // b does not fit: c, which would, is cut too
		{max: 0, want: "a:0 b:0 c:0"},
	} {
		gs := []groupLag{{name: "c", sum: 1, parts: parts(1)}, {name: "a", sum: 2, parts: parts(2)}, {name: "b", sum: 3, parts: parts(3)}}
		capLags(gs, tc.max)
		got := ""
		for i, g := range gs {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("%s:%d", g.name, len(g.parts))
			if g.sum == 0 {
				t.Errorf("max %d: group %s lost its sum", tc.max, g.name)
			}
		}
		if got != tc.want {
			t.Errorf("max %d: %s, want %s", tc.max, got, tc.want)
		}
	}
}
