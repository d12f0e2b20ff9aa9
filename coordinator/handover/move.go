package handover

import (
	"context"
	"fmt"

	"github.com/floe-io/floe/coordapi"
)

// DefaultChunkBytes is ExportPartition's chunk size when asked for none:
// well within NATS's default largest message (1 MiB).
const DefaultChunkBytes = 256 << 10

// Peer is a shard as a handover drives it: *rpc.Client, or a
// *coordinator.Coordinator.
type Peer interface {
	FencePartition(ctx context.Context, id coordapi.TopicID, partition int32, version uint64) error
	ExportPartition(ctx context.Context, id coordapi.TopicID, partition int32, cursor []byte, maxBytes int) (coordapi.PartitionChunk, error)
	ImportPartition(ctx context.Context, ch *coordapi.PartitionChunk) error
	DropPartition(ctx context.Context, id coordapi.TopicID, partition int32) error
}

// Move hands partition (id, partition) over from shard from to shard to
// as part of map version version: fence, export in chunks of chunkBytes
// (0: DefaultChunkBytes) imported one by one, drop. It returns how many
// chunks it moved. On an error the partition is left fenced on from
// (refused by both shards) and Move is to be called again: it starts over
// from the first chunk, which the import takes as a new copy. A partition
// from dropped already (a move that failed after its drop) is not moved
// again.
func Move(ctx context.Context, from, to Peer, id coordapi.TopicID, partition int32, version uint64, chunkBytes int) (chunks int, err error) {
	if err := from.FencePartition(ctx, id, partition, version); err != nil {
		return 0, fmt.Errorf("move %s/%d: %w", id, partition, err)
	}
	var cursor []byte
	for {
		ch, err := from.ExportPartition(ctx, id, partition, cursor, chunkBytes)
		if err != nil {
			return chunks, fmt.Errorf("move %s/%d: export after %d chunks: %w", id, partition, chunks, err)
		}
		if ch.Gone {
			return chunks, nil
		}
		if err := to.ImportPartition(ctx, &ch); err != nil {
			return chunks, fmt.Errorf("move %s/%d: import chunk %d: %w", id, partition, chunks, err)
		}
		chunks++
		if ch.Done {
			break
		}
		if len(ch.Cursor) == 0 {
			return chunks, fmt.Errorf("move %s/%d: chunk %d is neither the last nor says where the next starts", id, partition, chunks)
		}
		cursor = ch.Cursor
	}
	if err := from.DropPartition(ctx, id, partition); err != nil {
		return chunks, fmt.Errorf("move %s/%d: drop: %w", id, partition, err)
	}
	return chunks, nil
}
