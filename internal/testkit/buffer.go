package testkit

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for a writer (a process's output, a
// printer's goroutine) beside the test's reads. The zero value is empty
// and ready.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
