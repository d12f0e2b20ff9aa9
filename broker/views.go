package broker

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
	"github.com/floe-io/floe/tiered"
)

// Hierarchical views (coordapi/views.go): the coordinator resolves
// "base/KEY" to a topic whose View names the base topic and the key. A view
// is read, never written: Fetch reads the base topic's batches and keeps
// only the records whose key is the view's (filterView); ListOffsets and
// OffsetForLeaderEpoch answer the base's offsets; Metadata names the
// base's leaders; Produce and DeleteRecords refuse it.

// dataID returns the id of the topic holding t's data: the base topic's for
// a view, else t's own.
func dataID(t coordapi.Topic) coordapi.TopicID {
	if t.View != nil {
		return t.View.BaseID
	}
	return t.ID
}

// errViewWrite refuses a write to a view.
func errViewWrite(t coordapi.Topic) error {
	return fmt.Errorf("%w: %q is a view of topic %q (hierarchical.enabled): produce to %q with key %q instead",
		kerr.InvalidTopicException, t.Name, t.View.BaseName, t.View.BaseName, t.View.Key)
}

// filterView returns the batches of data (whole batches, patched for the
// wire) with only the records whose key is key: a batch whose records all
// match as it is, one with some rebuilt around them (same offsets, producer
// fields and codec, a valid CRC), one with none dropped, but the last batch
// kept as a bare header even then, so that a consumer's next offset moves
// past what it was sent. Control batches stay. A batch that does not parse
// ends the result there (the consumer asks again from its offset).
func filterView(data, key []byte) []byte {
	var out []byte // nil while every batch so far stays as it is
	keep := func(r tiered.RecordInfo) bool { return r.Key != nil && bytes.Equal(r.Key, key) }
	at := 0
	for at < len(data) {
		h, err := record.ParseHeader(data[at:])
		if err != nil || h.Size() > len(data)-at {
			break
		}
		n := h.Size()
		last := at+n == len(data)
		b, _, err := tiered.CompactBatch(data[at:at+n:at+n], tiered.CompactPolicy{
			Keep:        keep,
			Lazy:        true, // a key's batch is usually all its own
			AskKeyless:  true,
			RetainEmpty: func(record.Header) bool { return last },
		})
		if err != nil {
			break
		}
		switch {
		case out == nil && len(b) == n && &b[0] == &data[at]:
			// Unchanged (CompactBatch returned the batch itself): no copy
			// until a batch differs.
		case out == nil:
			out = append(append(make([]byte, 0, len(data)), data[:at]...), b...)
		default:
			out = append(out, b...)
		}
		at += n
	}
	if out == nil {
		return data[:at]
	}
	return out
}
