package bufpool

import "testing"

func TestPool(t *testing.T) {
	var p Pool
	for _, tc := range []struct {
		n, wantCap int
	}{
		{0, 4 << 10},
		{1, 4 << 10},
		{4 << 10, 4 << 10},
		{4<<10 + 1, 8 << 10},
		{1 << 20, 1 << 20},
		{1<<20 + 1, 2 << 20},
		{64 << 20, 64 << 20},
		{64<<20 + 1, 64<<20 + 1}, // above the classes: made to measure
	} {
		b := p.Get(tc.n)
		if len(b) != tc.n || cap(b) != tc.wantCap {
			t.Errorf("get(%d): len %d cap %d, want len %d cap %d", tc.n, len(b), cap(b), tc.n, tc.wantCap)
		}
	}

	// Capacities that are not a class's are dropped, never handed out
	// shorter than asked.
	for _, c := range []int{0, 3 << 10, 12 << 10, 128 << 20} {
		p.Put(make([]byte, 0, c))
	}
	for _, n := range []int{5 << 10, 9 << 10, 13 << 10} {
		if b := p.Get(n); len(b) != n || cap(b) < n || cap(b)&(cap(b)-1) != 0 {
			t.Errorf("get(%d) after odd puts: len %d cap %d", n, len(b), cap(b))
		}
	}
}

func TestPoolAllocs(t *testing.T) {
	var p Pool
	p.Put(p.Get(1 << 20))
	allocs := testing.AllocsPerRun(100, func() {
		b := p.Get(1 << 20)
		p.Put(b)
	})
	// One small allocation a put (the pointer sync.Pool stores), none of
	// the megabyte: a get that made its buffer anew would be a second.
	if allocs > 1 {
		t.Fatalf("get and put of a pooled 1 MiB buffer: %.1f allocations, want at most 1", allocs)
	}
}
