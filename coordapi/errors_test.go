package coordapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestErrorCode: a wrapped Kafka error answers its code, anything else the
// retriable KAFKA_STORAGE_ERROR, nil none.
func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int16
	}{
		{nil, 0},
		{kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition.Code},
		{fmt.Errorf("find: %w", kerr.OffsetOutOfRange), kerr.OffsetOutOfRange.Code},
		{Errorf(kerr.InvalidConfig, "bad config"), kerr.InvalidConfig.Code},
		{errors.New("connection reset"), kerr.KafkaStorageError.Code},
	} {
		if got := ErrorCode(tc.err); got != tc.want {
			t.Errorf("ErrorCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
