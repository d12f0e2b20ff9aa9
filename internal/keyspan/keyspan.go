// Package keyspan holds the byte-key arithmetic that every Pebble-backed
// store in floe shares: the coordinator's families, the key index's postings,
// and the group and share-group rows all scan a prefix by iterating
// [prefix, PrefixEnd(prefix)), most of them with Scan.
package keyspan

import (
	"fmt"

	"github.com/cockroachdb/pebble"
)

// PrefixEnd returns the smallest key greater than every key that starts with
// p, for use as an iterator's exclusive upper bound. It returns nil when no
// such key exists (p is empty or all 0xff), which Pebble reads as "no upper
// bound". p is not modified.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// Scan calls fn for every key in [lower, upper) of r, in key order, and
// stops at the first error, fn's returned unchanged. k and v are only valid
// during the call: fn copies what it keeps.
func Scan(r pebble.Reader, lower, upper []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("pebble: new iterator: %w", err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("pebble: read %x: %w", it.Key(), err)
		}
		if err := fn(it.Key(), v); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("pebble: iterate: %w", err)
	}
	return nil
}

// ScanFamily is Scan over every key whose first byte is family.
func ScanFamily(r pebble.Reader, family byte, fn func(k, v []byte) error) error {
	return Scan(r, []byte{family}, PrefixEnd([]byte{family}), fn)
}
