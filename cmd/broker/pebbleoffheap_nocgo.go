//go:build !cgo

package main

// pebbleOffHeap is the embedded coordinator's Pebble memory outside the Go
// heap. Built without cgo (the container image), Pebble's block cache and
// memtables are Go slices, inside the memory limit: none.
const pebbleOffHeap = 0
