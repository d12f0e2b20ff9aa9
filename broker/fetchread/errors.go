package fetchread

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// errorCode is the Kafka error code a partition answers for err: the
// wrapped *kerr.Error's code when there is one, else KAFKA_STORAGE_ERROR
// (retriable: the client reads again).
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.KafkaStorageError.Code
}
