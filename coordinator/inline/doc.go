// Package inline persists the inline objects a coordinator commits
// (CommitRequest.Inline) in the background. On a local directory store a
// produce paid two device round trips one after the other: the object's
// Put (its file's fsync, then its directory's) and the commit's synced
// Pebble write. A small object can ride in its commit instead, for one
// round trip in all:
//
//	broker ──commit + bytes──► coordinator: Stage(key, bytes)       readable (memory), not durable
//	                                        Pebble batch, synced:   the commit, and
//	                                                                's' object-key -> bytes
//	                            ◄── answer
//	                           flusher:     Persist(keys of 1s)     durable, one syncfs a large group
//	                                        delete their 's' rows
//
// The staged row is written in the batch that commits the object, so a
// committed inline object is durable once its commit is: after a crash
// (which loses the store's staged copies) the coordinator's Open writes
// every object still with a row before it reads or serves anything,
// whatever its options (FlushAtOpen). Staging comes before the commit, so a committed
// object is always readable; one staged by a commit that then failed is an
// orphan, collected as any other (its row, if the failure came after the
// write, waits for the next Open). The rows are few (about
// MaxPending), and a flushed row's delete need not be synced: one
// that comes back after a crash is written again, the same bytes, or
// becomes an orphan if its object was deleted meanwhile.
//
// Objects are persisted in groups (flushBatch, flushDelay), so
// that the device sees a few syncs a second beside the commits' own rather
// than two more per commit, which the commits queued behind.
//
// Only a coordinator that writes to the brokers' own store, in their
// process, can take inline objects: the embedded default, which shares
// the node's directory store (coordinator.Options.Inline).
//
// The Flusher takes no lock of the coordinator's: Rows' methods take
// theirs. Its own state is channels.
package inline
