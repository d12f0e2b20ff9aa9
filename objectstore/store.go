// Package objectstore is floe's one view of object storage: a small
// interface (Put, GetRange, Delete, List, Head) and its backends.
//
//   - S3: any S3 API (AWS, MinIO) through aws-sdk-go-v2.
//   - Dir: a local directory, the embedded default. Writes are atomic.
//   - Memory: an in-process map, for unit tests.
//   - Faulty: a wrapper that injects errors and latency, for tests.
//
// Objects are immutable once written, so no backend needs
// read-after-overwrite consistency. (Dir.Stage holds an object in memory
// before Dir.Persist writes the same bytes.)
package objectstore

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned (wrapped) by GetRange and Head when the key does
// not exist. Check it with errors.Is.
var ErrNotFound = errors.New("objectstore: object not found")

// ErrInvalidRange is returned (wrapped) by GetRange when the offset is
// negative or beyond the end of the object. Reading at exactly the end
// returns no bytes and no error.
var ErrInvalidRange = errors.New("objectstore: offset beyond end of object")

// ErrInvalidKey is returned (wrapped) by every backend for a key that is
// empty, absolute, or contains empty, "." or ".." path segments. All
// backends reject the same keys so that code tested against Memory
// behaves the same on Dir and S3.
var ErrInvalidKey = errors.New("objectstore: invalid key")

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key          string
	Size         int64
	LastModified time.Time
}

// RangeReaderAt is a Store that reads a range into the caller's buffer
// (Dir), sparing the buffer GetRange allocates for each read.
type RangeReaderAt interface {
	// ReadRangeAt reads key's bytes from offset into dst and returns how
	// many it read: fewer than len(dst) only where the object ends. An
	// offset beyond the end is an error, as in GetRange.
	ReadRangeAt(ctx context.Context, key string, offset int64, dst []byte) (int, error)
}

// ReadRangeAt reads key's bytes from offset into dst with s's ReadRangeAt
// when it has one, else with GetRange and a copy.
func ReadRangeAt(ctx context.Context, s Store, key string, offset int64, dst []byte) (int, error) {
	if r, ok := s.(RangeReaderAt); ok {
		return r.ReadRangeAt(ctx, key, offset, dst)
	}
	b, err := s.GetRange(ctx, key, offset, int64(len(dst)))
	return copy(dst, b), err
}

// KeyLister is a Store that can list keys alone, cheaper than List where
// sizes and times cost a request each (Dir: a stat of each file).
type KeyLister interface {
	// ListKeys returns the keys List would return for prefix, in key
	// order.
	ListKeys(ctx context.Context, prefix string) ([]string, error)
}

// Store is the object storage interface every backend implements. All
// methods are safe for concurrent use and honour ctx's deadline.
type Store interface {
	// Put writes data under key, replacing nothing: keys are written once.
	// When Put returns nil the object is durable and readable.
	Put(ctx context.Context, key string, data []byte) error
	// GetRange reads length bytes of key starting at offset. A length < 0
	// reads to the end. Reading past the end returns the bytes that exist;
	// an offset beyond the end returns an error.
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns every object whose key starts with prefix, in key order.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Head returns the size and modification time of key.
	Head(ctx context.Context, key string) (ObjectInfo, error)
}
