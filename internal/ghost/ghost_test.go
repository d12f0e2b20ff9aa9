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
	// A key added again takes a new slot; when its old slot is reused, the
	// key is not forgotten with it.
	h := New[string](3)
	h.Add("x")
	h.Add("y")
	h.Add("z") // ring [x y z], next slot 0
	h.Add("y") // slot 0 (x forgotten); y's old slot 1 is next
	h.Add("w") // reuses slot 1, which still names y
	if !h.Take("y") {
		t.Fatal("a re-added key was forgotten when its old slot was reused")
	}
	if h.Take("x") {
		t.Fatal("x outlived its slot")
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
