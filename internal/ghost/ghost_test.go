package ghost

import "testing"

func TestKeys(t *testing.T) {
	g := New[string](3)
	for _, k := range []string{"a", "b", "c", "d"} { // "a" falls out
		g.Add(k)
	}
	if g.Len() != 3 {
		t.Fatalf("%d keys, want 3", g.Len())
	}
	if g.Take("a") {
		t.Fatal("the oldest key outlived the capacity")
	}
	if !g.Take("c") || g.Take("c") {
		t.Fatal("Take of a remembered key must succeed once")
	}
	// A key added again takes a new slot; its old slot's eviction does not
	// forget it.
	g.Add("b")
	g.Add("e")
	g.Add("f")
	if !g.Take("b") {
		t.Fatal("a re-added key was forgotten with its old slot")
	}
	if New[int](0).Len() != 0 {
		t.Fatal("empty")
	}
	z := New[int](0)
	z.Add(1)
	if !z.Take(1) {
		t.Fatal("a zero capacity is one key")
	}
}
