package record

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error ParseHeader, Validate, Split and Records return wraps one
// of them (and errors wrapping ErrInvalid also match ErrCorrupt); test with errors.Is.
// The Kafka error code each suggests is the one Apache Kafka answers a producer with in
// the same situation.
var (
	// ErrShort reports that a buffer ends before the structure it should hold does: fewer
	// bytes than a batch header, when parsing a header from a stream.
	ErrShort = errors.New("record: short buffer")

	// ErrCorrupt reports bytes that are not a well-formed batch: a batch length that
	// disagrees with the buffer, a CRC mismatch, misframed concatenated batches. Kafka
	// answers CORRUPT_MESSAGE, which producers retry: corruption can happen in transit.
	ErrCorrupt = errors.New("record: corrupt batch")

	// ErrInvalid reports a batch whose CRC is intact but whose content breaks a rule Kafka
	// enforces on produce: record count against lastOffsetDelta, producer fields, records
	// that do not parse or do not decompress. Kafka answers INVALID_RECORD, which producers
	// do not retry. Errors wrapping ErrInvalid also match ErrCorrupt, so check ErrInvalid
	// first when choosing an error code.
	ErrInvalid = errors.New("record: invalid batch")

	// ErrUnsupportedMagic reports a message set of magic 0 or 1 (or an unknown magic):
	// this package handles only magic 2. Kafka answers INVALID_RECORD to a Produce v3+
	// carrying one.
	ErrUnsupportedMagic = errors.New("record: unsupported magic")

	// ErrUnsupportedCodec reports a compression codec id outside 0-4 in the attributes.
	// UNSUPPORTED_COMPRESSION_TYPE is the closest Kafka error code.
	ErrUnsupportedCodec = errors.New("record: unsupported compression codec")

	// ErrTooLarge reports a batch whose records would decompress past the limit given to
	// RecordsLimit (DefaultMaxDecompressed for Records). Kafka has no such limit; answer
	// MESSAGE_TOO_LARGE, on which the Java producer splits the batch and retries.
	ErrTooLarge = errors.New("record: decompressed batch too large")
)

// formatError carries a message and the sentinel it wraps. ErrInvalid errors unwrap to
// ErrCorrupt as well.
type formatError struct {
	kind error
	msg  string
}

func (e *formatError) Error() string { return e.kind.Error() + ": " + e.msg }

func (e *formatError) Unwrap() []error {
	if e.kind == ErrInvalid {
		return []error{ErrInvalid, ErrCorrupt}
	}
	return []error{e.kind}
}

func errorf(kind error, format string, args ...any) error {
	return &formatError{kind: kind, msg: fmt.Sprintf(format, args...)}
}
