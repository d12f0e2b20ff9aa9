package coordapi

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrClosed is returned by every method of a coordinator, or of a client of
// one, once Close has been called.
var ErrClosed = errors.New("coordinator: closed")

// KafkaError is a Kafka-level failure that carries the message Apache Kafka
// would put in a response's error_message field (for example "Unknown topic
// config name: x"), so that admin tools show the same text. It unwraps to its
// *kerr.Error, so callers get the code with errors.As(err, &kerrErr) and the
// message with errors.As(err, &kafkaErr).
type KafkaError struct {
	Code    *kerr.Error
	Message string
}

// Error returns the message followed by the Kafka error name.
func (e *KafkaError) Error() string {
	if e.Message == "" {
		return e.Code.Error()
	}
	return e.Message + " (" + e.Code.Message + ")"
}

// Unwrap returns the Kafka error code.
func (e *KafkaError) Unwrap() error { return e.Code }

// Errorf builds a *KafkaError with a formatted message.
func Errorf(code *kerr.Error, format string, args ...any) error {
	return &KafkaError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode is the Kafka error code a response answers for err, a failure
// of the coordinator, the object store or ingest: the wrapped *kerr.Error's
// code when there is one, else KAFKA_STORAGE_ERROR, which clients retry
// (nothing was acknowledged). 0 for nil.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.KafkaStorageError.Code
}
