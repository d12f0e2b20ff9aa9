// Package bufpool recycles large, short-lived byte buffers by size class,
// for paths that allocate megabytes a second and hold each buffer for
// milliseconds: a fetch's records and frame, a tier job's WAL reads.
package bufpool

import (
	"math/bits"
	"sync"
)

// Size classes of a Pool: powers of two from 4 KiB to 64 MiB.
const (
	minBufClass = 12 // 4 KiB
	maxBufClass = 26 // 64 MiB
)

// Pool recycles byte buffers by size class (a power of two from 4 KiB to
// 64 MiB), so that a Get wastes less than half of what it hands out; a
// buffer above the largest class is allocated and dropped. Every buffer
// allocated brings the next garbage collection nearer, and on two cores a
// collection's marking runs beside produce and fetch: the fetch path's
// buffers and the tier jobs' reads were two fifths of a loaded broker's
// allocations before they came from a Pool.
//
// A buffer put back must not be referenced again. The zero Pool is ready
// to use; a Pool must not be copied after first use.
type Pool struct {
	classes [maxBufClass - minBufClass + 1]sync.Pool // of *[]byte
}

// bufClass returns the class of a buffer of n bytes: the smallest power of
// two at least n, and at least 1<<minBufClass.
func bufClass(n int) int {
	if n <= 1<<minBufClass {
		return minBufClass
	}
	return bits.Len(uint(n - 1))
}

// Get returns a buffer of length n, from the pool when its class has one.
// Its bytes are not zeroed: the caller overwrites all of them.
func (p *Pool) Get(n int) []byte {
	c := bufClass(n)
	if c > maxBufClass {
		return make([]byte, n)
	}
	if b, ok := p.classes[c-minBufClass].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<c)
}

// Put gives b back for reuse. A buffer whose capacity is not a class's (it
// was not made by Get, or append grew it) is left to the garbage collector.
func (p *Pool) Put(b []byte) {
	c := cap(b)
	if c < 1<<minBufClass || c > 1<<maxBufClass || c&(c-1) != 0 {
		return
	}
	b = b[:0]
	p.classes[bits.Len(uint(c))-1-minBufClass].Put(&b)
}
