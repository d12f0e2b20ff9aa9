package producecheck

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/record"
)

// batchError maps a record-format error to the code Kafka answers: bad
// framing or CRC is CORRUPT_MESSAGE (retried), a well-formed batch that
// breaks a rule is INVALID_RECORD (not retried), an old magic is
// UNSUPPORTED_FOR_MESSAGE_FORMAT, and a batch that decompresses past the
// limit is MESSAGE_TOO_LARGE (the Java producer splits and retries).
//
// Records that do not decompress are INVALID_RECORD too. There Kafka's
// record iterator throws a plain KafkaException ("Failed to decompress
// record stream"), which reaches the producer as UNKNOWN_SERVER_ERROR;
// INVALID_RECORD is what Kafka answers for every other malformed record,
// and, like UNKNOWN_SERVER_ERROR, clients do not retry it, but it blames
// the batch rather than the broker.
func batchError(err error) error {
	switch {
	case errors.Is(err, record.ErrUnsupportedMagic):
		return fmt.Errorf("%w: %v", kerr.UnsupportedForMessageFormat, err)
	case errors.Is(err, record.ErrTooLarge):
		return fmt.Errorf("%w: %v", kerr.MessageTooLarge, err)
	case errors.Is(err, record.ErrInvalid):
		return fmt.Errorf("%w: %v", kerr.InvalidRecord, err)
	default:
		return fmt.Errorf("%w: %v", kerr.CorruptMessage, err)
	}
}
