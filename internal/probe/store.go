package probe

import (
	"context"
	"errors"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// ObjectStore is the "object_store" check of brokers and coordinators:
// store answers a HEAD of a key under prefix's WAL that never exists, and
// "not found" is the answer that says it works. On S3 a HEAD costs what a
// GET costs, a twelfth of a LIST.
func ObjectStore(store objectstore.Store, prefix string) Check {
	key := coordapi.WALPrefix(prefix) + "floe-ready-check"
	return Check{Name: "object_store", Run: func(ctx context.Context) error {
		_, err := store.Head(ctx, key)
		if err == nil || errors.Is(err, objectstore.ErrNotFound) {
			return nil
		}
		return err
	}}
}
