package rpc

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// ErrUnavailable is wrapped by every error of a request that got no answer:
// no coordinator subscribed (it is down), the deadline passed, the NATS
// connection is down, or the request could not be sent. Such errors also
// wrap kerr.KafkaStorageError, so that brokers answer clients a retriable
// code, and the cause (context.DeadlineExceeded, nats.ErrNoResponders...).
var ErrUnavailable = errors.New("rpc: coordinator unavailable")

// ErrInternal is wrapped by the errors of requests the coordinator failed
// for a reason that is not a Kafka-level one (a storage failure, the
// coordinator shutting down, its deadline passing). They also wrap
// kerr.KafkaStorageError: the client may retry.
var ErrInternal = errors.New("rpc: coordinator failed the request")

// errUnsupportedVersion is answered to a message of an unknown version.
var errUnsupportedVersion = &coordapi.KafkaError{Code: kerr.UnsupportedVersion,
	Message: "unsupported coordinator rpc version"}

// Error flags.
const (
	// errFlagKafkaError: the coordinator's error was a
	// *coordapi.KafkaError, with a Kafka error message.
	errFlagKafkaError = 1 << 0
)

// encError writes an error reply body: Kafka error code (0 when the error
// has none), flags, the Kafka error message, and the error's full text.
func encError(e *encoder, err error) {
	var (
		code  int16
		flags byte
		msg   string
	)
	var ke *coordapi.KafkaError
	var kerrErr *kerr.Error
	switch {
	case errors.As(err, &ke) && ke.Code != nil:
		code, flags, msg = ke.Code.Code, errFlagKafkaError, ke.Message
	case errors.As(err, &kerrErr):
		code = kerrErr.Code
	}
	e.varint(int64(code))
	e.byte(flags)
	e.str(msg)
	e.str(err.Error())
}

// decError reads an error reply body and rebuilds the error for op.
func decError(d *decoder, op string) error {
	code, flags, msg, text := d.int16(), d.byte(), d.str(), d.str()
	if d.err != nil {
		return d.err
	}
	re := &RemoteError{Op: op, Text: text}
	switch {
	case code == 0:
		re.err = []error{ErrInternal, kerr.KafkaStorageError}
	case flags&errFlagKafkaError != 0:
		re.err = []error{&coordapi.KafkaError{Code: kafkaError(code), Message: msg}}
	default:
		re.err = []error{kafkaError(code)}
	}
	return re
}

// kafkaError returns franz-go's error for code (the same pointer, so that
// errors.Is works), or a new one for a code franz-go does not know.
func kafkaError(code int16) *kerr.Error {
	if ke := kerr.TypedErrorForCode(code); ke != nil && (ke != kerr.UnknownServerError || code == kerr.UnknownServerError.Code) {
		return ke
	}
	return &kerr.Error{Message: "UNKNOWN_ERROR_CODE", Code: code, Description: "An error code this build does not know."}
}

// RemoteError is an error the coordinator answered. Its text is the
// coordinator's own, and it unwraps to what the coordinator's error
// wrapped: the *coordapi.KafkaError or *kerr.Error of a Kafka-level
// failure (so errors.Is(err, kerr.UnknownTopicOrPartition) holds as it
// would in-process), or ErrInternal and kerr.KafkaStorageError for any
// other failure.
type RemoteError struct {
	// Op is the operation, e.g. "create_topic".
	Op string
	// Text is the coordinator's error text.
	Text string
	err  []error
}

// Error returns the coordinator's error text.
func (e *RemoteError) Error() string { return e.Text }

// Unwrap returns the errors the coordinator's error wrapped.
func (e *RemoteError) Unwrap() []error { return e.err }

// unavailableError is the error of a request that got no answer.
type unavailableError struct {
	op    string
	cause error
}

func (e *unavailableError) Error() string {
	return "coordinator " + e.op + ": " + ErrUnavailable.Error() + ": " + e.cause.Error()
}

func (e *unavailableError) Unwrap() []error {
	return []error{kerr.KafkaStorageError, ErrUnavailable, e.cause}
}
