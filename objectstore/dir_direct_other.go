//go:build !linux

package objectstore

// openDirectFlag is 0 where Dir does not write with O_DIRECT: Put writes
// through the page cache.
const openDirectFlag = 0
