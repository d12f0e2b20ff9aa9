package objectstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is a Store held in a map, for unit tests. It copies data on Put
// and on GetRange, so callers may reuse their buffers and cannot change a
// stored object by mutating what they read.
type Memory struct {
	mu struct {
		sync.RWMutex
		objects map[string]memObject
	}
}

// memObject is one stored object.
type memObject struct {
	data    []byte
	modTime time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	m := &Memory{}
	m.mu.objects = make(map[string]memObject)
	return m
}

// Put stores a copy of data under key.
func (m *Memory) Put(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	obj := memObject{data: slices.Clone(data), modTime: time.Now()}
	if obj.data == nil {
		obj.data = []byte{}
	}
	m.mu.Lock()
	m.mu.objects[key] = obj
	m.mu.Unlock()
	return nil
}

// GetRange returns a copy of length bytes of key from offset.
func (m *Memory) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	if err := CheckKey(key); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	m.mu.RLock()
	obj, ok := m.mu.objects[key]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	// obj.data is never modified after Put, so it is safe to read unlocked.
	n, err := checkRange(key, int64(len(obj.data)), offset, length)
	if err != nil {
		return nil, err
	}
	return slices.Clone(obj.data[offset : offset+n]), nil
}

// Delete removes key; a missing key is not an error.
func (m *Memory) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	m.mu.Lock()
	delete(m.mu.objects, key)
	m.mu.Unlock()
	return nil
}

// List returns the objects whose key starts with prefix, in key order.
func (m *Memory) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	var out []ObjectInfo
	m.mu.RLock()
	for k, obj := range m.mu.objects {
		if strings.HasPrefix(k, prefix) {
			out = append(out, ObjectInfo{Key: k, Size: int64(len(obj.data)), LastModified: obj.modTime})
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Head returns the size and modification time of key.
func (m *Memory) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, fmt.Errorf("head %s: %w", key, err)
	}
	if err := CheckKey(key); err != nil {
		return ObjectInfo{}, fmt.Errorf("head: %w", err)
	}
	m.mu.RLock()
	obj, ok := m.mu.objects[key]
	m.mu.RUnlock()
	if !ok {
		return ObjectInfo{}, fmt.Errorf("head %s: %w", key, ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: int64(len(obj.data)), LastModified: obj.modTime}, nil
}
