package tiered

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/bits"
)

// OffsetMap entry layout: a 128-bit key digest, then the key's latest offset.
const (
	// OffsetMapEntrySize is the bytes one OffsetMap slot takes: a 16-byte key
	// digest and an 8-byte offset.
	OffsetMapEntrySize = digestSize + 8

	// DefaultOffsetMapLoadFactor is the share of an OffsetMap's slots it fills
	// before Put reports it full, Kafka's log.cleaner.io.buffer.load.factor
	// default (0.9).
	DefaultOffsetMapLoadFactor = 0.9

	digestSize = 16
)

// OffsetMap maps record keys to the latest offset seen for each, the index a
// compaction pass builds over a partition's dirty range before it rewrites the
// segments: Kafka's SkimpyOffsetMap. It holds no keys, only a 128-bit digest of
// each (SHA-256 truncated, so two keys sharing a digest is as unlikely as an
// MD5 collision in Kafka's), in one fixed buffer of open-addressing slots sized
// from a byte budget at creation (Kafka's log.cleaner.dedupe.buffer.size): its
// memory never grows with the keys. When it is full, Put refuses new keys and
// the pass covers the offsets up to LatestOffset; the next pass, after Reset,
// starts from there.
//
// Slot layout, OffsetMapEntrySize (24) bytes each, little-endian:
//
//	+-------------------+-------------------+------------------+
//	| digest bytes 0-8  | digest bytes 8-16 |  latest offset   |
//	|      uint64       |      uint64       |      int64       |
//	+-------------------+-------------------+------------------+
//
// An all-zero digest marks an empty slot (a key whose digest is all zero has
// its last bit set instead). The slot count is prime and a key's probe
// sequence is double hashing, starting at a slot drawn from its digest's first
// half and stepping by one drawn from its second, so every probe sequence
// visits every slot. An OffsetMap is not safe for concurrent use.
type OffsetMap struct {
	buf        []byte
	slots      uint64
	maxEntries int
	entries    int
	latest     int64
}

// NewOffsetMap returns an empty OffsetMap in at most bufferBytes of memory:
// the largest prime number of slots that fits, of which it fills loadFactor
// (0 < loadFactor < 1; 0 means DefaultOffsetMapLoadFactor). The budget must
// leave room for at least one key.
func NewOffsetMap(bufferBytes int, loadFactor float64) (*OffsetMap, error) {
	if loadFactor == 0 {
		loadFactor = DefaultOffsetMapLoadFactor
	}
	if !(loadFactor > 0 && loadFactor < 1) {
		return nil, fmt.Errorf("tiered: offset map load factor %v is not between 0 and 1", loadFactor)
	}
	if bufferBytes < 2*OffsetMapEntrySize {
		return nil, fmt.Errorf("tiered: offset map budget of %d bytes is below %d, two slots", bufferBytes, 2*OffsetMapEntrySize)
	}
	slots := largestPrimeAtMost(uint64(bufferBytes / OffsetMapEntrySize))
	maxEntries := min(int(float64(slots)*loadFactor), int(slots)-1)
	if maxEntries < 1 {
		return nil, fmt.Errorf("tiered: offset map of %d slots at load factor %v holds no key", slots, loadFactor)
	}
	return &OffsetMap{
		buf:        make([]byte, slots*OffsetMapEntrySize),
		slots:      slots,
		maxEntries: maxEntries,
		latest:     -1,
	}, nil
}

// largestPrimeAtMost returns the largest prime at or below n, which is at
// least 2. ProbablyPrime(0) is exact below 2^64, and primes are dense enough
// (gaps below 1500 up to 2^64) that the walk down is short.
func largestPrimeAtMost(n uint64) uint64 {
	var x big.Int
	for ; n > 2; n-- {
		if x.SetUint64(n).ProbablyPrime(0) {
			return n
		}
	}
	return 2
}

// digest is a key's 128-bit digest as the two words a slot stores.
type digest struct{ lo, hi uint64 }

// digestOf returns key's digest: the first 16 bytes of its SHA-256, never all
// zero (the empty slot's mark).
func digestOf(key []byte) digest {
	sum := sha256.Sum256(key)
	d := digest{binary.LittleEndian.Uint64(sum[0:8]), binary.LittleEndian.Uint64(sum[8:16])}
	if d == (digest{}) {
		d.hi = 1
	}
	return d
}

// find returns the byte position of d's slot, or of the empty slot where d
// would go, and whether d is there. The map always has an empty slot
// (maxEntries < slots) and the probe sequence visits every slot, so the loop
// ends.
func (m *OffsetMap) find(d digest) (pos int, found bool) {
	i, _ := bits.Mul64(d.lo, m.slots)      // first slot, in [0, slots)
	step, _ := bits.Mul64(d.hi, m.slots-1) // in [0, slots-1)
	step++                                 // in [1, slots): coprime with the prime slots
	for range m.slots {
		pos = int(i) * OffsetMapEntrySize
		e := m.buf[pos : pos+digestSize : pos+digestSize]
		lo, hi := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:])
		if lo == d.lo && hi == d.hi {
			return pos, true
		}
		if lo == 0 && hi == 0 {
			return pos, false
		}
		if i += step; i >= m.slots {
			i -= m.slots
		}
	}
	panic("tiered: offset map has no empty slot") // unreachable: entries < slots
}

// Put records offset as key's latest offset unless the map already holds a
// higher one for it, and raises LatestOffset to offset. It reports false, and
// changes nothing, when key is new and the map is full (Len() == Cap()): the
// pass must stop indexing there. Offsets are a partition's, never negative;
// key is not retained.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	return m.put(digestOf(key), offset)
}

func (m *OffsetMap) put(d digest, offset int64) bool {
	pos, found := m.find(d)
	e := m.buf[pos : pos+OffsetMapEntrySize : pos+OffsetMapEntrySize]
	switch {
	case found:
		if offset > int64(binary.LittleEndian.Uint64(e[digestSize:])) {
			binary.LittleEndian.PutUint64(e[digestSize:], uint64(offset))
		}
	case m.entries >= m.maxEntries:
		return false
	default:
		binary.LittleEndian.PutUint64(e, d.lo)
		binary.LittleEndian.PutUint64(e[8:], d.hi)
		binary.LittleEndian.PutUint64(e[digestSize:], uint64(offset))
		m.entries++
	}
	m.latest = max(m.latest, offset)
	return true
}

// Get returns the latest offset put for key, and false when the map has none.
func (m *OffsetMap) Get(key []byte) (offset int64, ok bool) {
	return m.get(digestOf(key))
}

func (m *OffsetMap) get(d digest) (int64, bool) {
	pos, found := m.find(d)
	if !found {
		return -1, false
	}
	return int64(binary.LittleEndian.Uint64(m.buf[pos+digestSize:])), true
}

// Len returns the number of keys in the map.
func (m *OffsetMap) Len() int { return m.entries }

// Cap returns the number of keys the map holds before Put reports it full:
// its slots times its load factor.
func (m *OffsetMap) Cap() int { return m.maxEntries }

// SizeBytes returns the memory the map's slots take, at most the budget given
// to NewOffsetMap.
func (m *OffsetMap) SizeBytes() int { return len(m.buf) }

// LatestOffset returns the highest offset Put has recorded since creation or
// Reset, -1 for none. A pass built on a map that filled up indexes only the
// offsets up to it: records past it must be kept (Kafka's
// Cleaner.shouldRetainRecord, pastLatestOffset), and the next pass starts
// after it.
func (m *OffsetMap) LatestOffset() int64 { return m.latest }

// AdvanceLatestOffset raises LatestOffset to offset, if below: a pass that has
// read a whole batch covers its last offset even when it put no key of it (a
// control batch, an aborted transaction's, keyless records, gaps), as Kafka's
// Cleaner.buildOffsetMapForSegment does after each batch.
func (m *OffsetMap) AdvanceLatestOffset(offset int64) { m.latest = max(m.latest, offset) }

// Reset empties the map for the next pass, keeping its memory.
func (m *OffsetMap) Reset() {
	clear(m.buf)
	m.entries = 0
	m.latest = -1
}
