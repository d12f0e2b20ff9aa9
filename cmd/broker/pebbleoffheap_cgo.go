//go:build cgo

package main

import "github.com/floe-io/floe/coordinator"

// pebbleOffHeap is the embedded coordinator's Pebble memory outside the Go
// heap. Built with cgo, Pebble allocates its block cache and memtables with
// C's allocator (its internal/manual), which the Go runtime's memory limit
// does not see.
const pebbleOffHeap = coordinator.PebbleMemoryBytes
