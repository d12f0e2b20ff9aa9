package loadtest

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// maxErrorKinds bounds the error table: a broker that answers every request
// with a new message must not grow it without limit.
const maxErrorKinds = 64

// ErrorCounts counts errors by kind ("produce: NOT_ENOUGH_REPLICAS",
// "kv: http 500", ...), at most maxErrorKinds of them (the rest as
// "other"), for the reports of loadtest and of the fleet simulator. The
// zero value is ready; it is safe for concurrent use.
type ErrorCounts struct {
	mu struct {
		sync.Mutex
		total int64
		kinds map[string]int64
	}
}

// Add counts err under "<source>: <kind>" (ErrorKind).
func (e *ErrorCounts) Add(source string, err error) { e.AddKind(source + ": " + ErrorKind(err)) }

// AddKind counts one error of an already classified kind.
func (e *ErrorCounts) AddKind(kind string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.kinds == nil {
		e.mu.kinds = make(map[string]int64)
	}
	if _, ok := e.mu.kinds[kind]; !ok && len(e.mu.kinds) >= maxErrorKinds {
		kind = "other"
	}
	e.mu.kinds[kind]++
	e.mu.total++
}

// Total is the number of errors counted so far.
func (e *ErrorCounts) Total() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mu.total
}

// Snapshot copies the counts.
func (e *ErrorCounts) Snapshot() map[string]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int64, len(e.mu.kinds))
	for k, v := range e.mu.kinds {
		out[k] = v
	}
	return out
}

// ErrorKind names an error's kind briefly and with low cardinality: the
// Kafka error code name, a client error, a network failure class, or the
// error's first 80 characters.
func ErrorKind(err error) string {
	var ke *kerr.Error
	var ne net.Error
	switch {
	case errors.As(err, &ke):
		return ke.Message
	case errors.Is(err, kgo.ErrRecordTimeout):
		return "record timeout"
	case errors.Is(err, kgo.ErrRecordRetries):
		return "record retries exhausted"
	case errors.Is(err, kgo.ErrClientClosed):
		return "client closed"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &ne) && ne.Timeout():
		return "network timeout"
	}
	s := err.Error()
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}
