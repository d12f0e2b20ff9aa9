package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// errorCode maps an error from the coordinator or ingest to the Kafka error
// code Apache Kafka would return: the wrapped *kerr.Error's code when there is
// one, else a retriable code (the client retries; nothing was acknowledged).
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

// errorMessage returns a message for responses that carry one, nil when err
// is nil.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
