package miniotest

import (
	"bytes"
	"io"
	"os"
	"sync"
)

// logBuffer collects MinIO's output, which the process writes from two
// pipes at once, so that a failing test can print it.
type logBuffer struct {
	mu struct {
		sync.Mutex
		buf bytes.Buffer
	}
}

// Write appends p to the buffer.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.buf.Write(p)
}

// String returns everything written so far.
func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.buf.String()
}

// writer returns where MinIO's output goes: the buffer, and stderr too
// when FLOE_TEST_LOG=1.
func (b *logBuffer) writer() io.Writer {
	if logToStderr() {
		return io.MultiWriter(b, os.Stderr)
	}
	return b
}
