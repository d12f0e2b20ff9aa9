package fetchread

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// Part is one partition of a read on its way through Plan and Read (or
// Offsets): the caller fills the exported fields, and the Reader answers
// in Resp, the partition's place in the Fetch response.
type Part struct {
	// TopicPartition is the partition whose batches are read: for a
	// view, its base topic's.
	TopicPartition
	// Offset is the fetch offset.
	Offset int64
	// MaxBytes is the request's partition max bytes.
	MaxBytes int
	// Resp receives the partition's offsets, records and error code.
	Resp *kmsg.FetchResponseTopicPartition
	// ViewKey is the key of a hierarchical view's fetch: only its records
	// are answered (filterView). Nil for a topic's own fetch.
	ViewKey []byte
	// ReadCommitted stops at the last stable offset and lists the range's
	// aborted transactions (isolation level 1).
	ReadCommitted bool

	// found is the coordinates answer (asked for up to ask bytes), code
	// its Kafka error code (0: none).
	ask   int32
	found coordapi.FindBatchesResponse
	code  int16
	// batches are the ones planned to be read: a prefix of found.Batches.
	batches []coordapi.BatchCoord

	// posted is set when a view's coordinates came from the posting index
	// (views.go): found.Batches are then only the batches holding
	// viewKey, keyBatches what the coordinator answered before segments
	// were resolved, and viewThrough the offset the answer covers up to.
	posted      bool
	keyBatches  []coordapi.KeyBatch
	viewThrough int64
}
