package tiered

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestNewOffsetMap(t *testing.T) {
	for _, tc := range []struct {
		name       string
		bytes      int
		loadFactor float64
		slots      int // 0: an error
		cap        int
		err        string
	}{
		{name: "default load factor", bytes: 24 * 100, slots: 97, cap: 87},
		{name: "prime fits exactly", bytes: 24*101 + 23, loadFactor: 0.5, slots: 101, cap: 50},
		{name: "two slots", bytes: 48, loadFactor: 0.9, slots: 2, cap: 1},
		{name: "load factor near 1 leaves a slot empty", bytes: 24 * 7, loadFactor: 0.999, slots: 7, cap: 6},
		{name: "one slot", bytes: 47, err: "below 48"},
		{name: "negative budget", bytes: -1, err: "below 48"},
		{name: "load factor 1", bytes: 2400, loadFactor: 1, err: "not between 0 and 1"},
		{name: "negative load factor", bytes: 2400, loadFactor: -0.5, err: "not between 0 and 1"},
		{name: "load factor too small for a key", bytes: 24 * 3, loadFactor: 0.1, err: "holds no key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewOffsetMap(tc.bytes, tc.loadFactor)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := m.SizeBytes(); got != tc.slots*OffsetMapEntrySize || got > tc.bytes {
				t.Errorf("SizeBytes = %d, want %d slots (%d bytes) within %d", got, tc.slots, tc.slots*OffsetMapEntrySize, tc.bytes)
			}
			if m.Cap() != tc.cap || m.Len() != 0 || m.LatestOffset() != -1 {
				t.Errorf("Cap, Len, LatestOffset = %d, %d, %d, want %d, 0, -1", m.Cap(), m.Len(), m.LatestOffset(), tc.cap)
			}
		})
	}
}

func TestLargestPrimeAtMost(t *testing.T) {
	for n, want := range map[uint64]uint64{2: 2, 3: 3, 4: 3, 100: 97, 1 << 20: 1048573, 5592405: 5592373} {
		if got := largestPrimeAtMost(n); got != want {
			t.Errorf("largestPrimeAtMost(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestOffsetMapOps runs sequences of operations on a small map, "put k o" (and
// the result), "get k" (the offset or "none"), "reset".
func TestOffsetMapOps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slots int // budget in slots; load factor 0.5
		ops   []string
	}{{
		name:  "keeps the highest offset per key",
		slots: 11,
		ops: []string{
			"put a 5 ok", "put b 3 ok", "put a 9 ok", "put a 7 ok", "put b 2 ok",
			"get a 9", "get b 3", "get c none", "len 2", "latest 9",
		},
	}, {
		name:  "full map refuses new keys, not known ones",
		slots: 7, // cap 3
		ops: []string{
			"put a 1 ok", "put b 2 ok", "put c 3 ok", "len 3",
			"put d 4 full", "len 3", "latest 3", "get d none",
			"put a 10 ok", "get a 10", "latest 10",
		},
	}, {
		name:  "reset empties it for the next pass",
		slots: 7,
		ops: []string{
			"put a 1 ok", "put b 2 ok", "put c 3 ok", "put d 4 full",
			"reset", "len 0", "latest -1", "get a none",
			"put d 4 ok", "put e 5 ok", "get d 4", "get e 5", "len 2",
		},
	}, {
		name:  "empty key",
		slots: 11,
		ops:   []string{"put  4 ok", "get  4", "latest 4", "get x none"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewOffsetMap(tc.slots*OffsetMapEntrySize, 0.5)
			if err != nil {
				t.Fatal(err)
			}
			for i, op := range tc.ops {
				f := strings.Split(op, " ")
				var got, want string
				switch f[0] {
				case "put":
					var off int64
					fmt.Sscan(f[2], &off)
					got, want = map[bool]string{true: "ok", false: "full"}[m.Put([]byte(f[1]), off)], f[3]
				case "get":
					got, want = "none", f[2]
					if off, ok := m.Get([]byte(f[1])); ok {
						got = fmt.Sprint(off)
					}
				case "len":
					got, want = fmt.Sprint(m.Len()), f[1]
				case "latest":
					got, want = fmt.Sprint(m.LatestOffset()), f[1]
				case "reset":
					m.Reset()
					continue
				default:
					t.Fatalf("bad op %q", op)
				}
				if got != want {
					t.Fatalf("op %d %q: got %s", i, op, got)
				}
			}
		})
	}
}

// TestOffsetMapProbing fills maps to their capacity and checks every key is
// found with its offset: at a 0.9 load factor most keys share a first slot
// with another and are found by probing.
func TestOffsetMapProbing(t *testing.T) {
	for _, slots := range []int{2, 3, 13, 101, 4099} {
		t.Run(fmt.Sprint(slots), func(t *testing.T) {
			m, err := NewOffsetMap(slots*OffsetMapEntrySize, 0.9)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int64{}
			for i := 0; m.Len() < m.Cap(); i++ {
				k := fmt.Sprintf("key-%d", i)
				if !m.Put([]byte(k), int64(i)) {
					t.Fatalf("Put %d refused at %d of %d", i, m.Len(), m.Cap())
				}
				want[k] = int64(i)
			}
			if m.Put([]byte("one more"), 0) {
				t.Fatal("a full map took a new key")
			}
			for k, off := range want {
				if got, ok := m.Get([]byte(k)); !ok || got != off {
					t.Fatalf("Get(%s) = %d, %v, want %d", k, got, ok, off)
				}
			}
			for i := range 1000 { // misses end at an empty slot
				if _, ok := m.Get(fmt.Appendf(nil, "absent-%d", i)); ok {
					t.Fatalf("absent key %d found", i)
				}
			}
		})
	}
}

// TestOffsetMapCollidingDigests puts digests chosen to share a first slot, and
// some a step too, and the all-zero digest that marks empty slots.
func TestOffsetMapCollidingDigests(t *testing.T) {
	m, err := NewOffsetMap(13*OffsetMapEntrySize, 0.9) // 13 slots, 11 keys
	if err != nil {
		t.Fatal(err)
	}
	// lo 0 and lo 1 both draw slot 0 of 13; hi picks the step.
	ds := []digest{{0, 1}, {1, 1}, {0, 2}, {1, 2}, {0, 1 << 63}, {1, 1 << 63}, {5, 5}}
	for i, d := range ds {
		if !m.put(d, int64(i)) {
			t.Fatalf("put %v refused", d)
		}
	}
	for i, d := range ds {
		if got, ok := m.get(d); !ok || got != int64(i) {
			t.Fatalf("get %v = %d, %v, want %d", d, got, ok, i)
		}
	}
	if _, ok := m.get(digest{2, 1}); ok {
		t.Fatal("absent digest found")
	}
	if d := digestOf(nil); d == (digest{}) {
		t.Fatal("a key got the empty slot's digest")
	}
}

// BenchmarkOffsetMap puts and gets a million keys in a map at a 0.8 load: a
// 30 MB buffer, so most probes miss the CPU caches.
func BenchmarkOffsetMap(b *testing.B) {
	const keys = 1 << 20
	m, err := NewOffsetMap(keys*OffsetMapEntrySize*10/8, 0.9)
	if err != nil {
		b.Fatal(err)
	}
	buf := append(make([]byte, 0, 32), "user-"...)
	key := func(i int) []byte { return strconv.AppendInt(buf[:5], int64(i%keys), 10) }
	b.Run("Put", func(b *testing.B) {
		m.Reset()
		b.ReportAllocs()
		for i := range b.N {
			if !m.Put(key(i), int64(i)) {
				b.Fatal("full")
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		m.Reset()
		for i := range keys {
			m.Put(key(i), int64(i))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, ok := m.Get(key(i)); !ok {
				b.Fatal("missing")
			}
		}
	})
}
