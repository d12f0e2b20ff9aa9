package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// Hierarchical views (coordapi/views.go): the coordinator resolves
// "base/KEY" to a topic whose View names the base topic and the key. A view
// is read, never written: Fetch reads the base topic's batches and keeps
// only the records whose key is the view's (fetchread's filterView); ListOffsets and
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
