package coordapi

import (
	"fmt"
	"strconv"
	"strings"
)

// Object key layout, the one place it is written down. Every object floe
// writes lives under the operator's prefix (--s3-prefix, "" for none):
//
//	<prefix>/wal/<uuidv7>     WAL objects: ingest writes them, the GC lists
//	                          wal/ for orphans
//	<prefix>/tiered/<topic-id>/<partition>/<base-offset>-<unique>.seg
//	                          segment objects (tiered/): topic-id in hex,
//	                          partition in decimal, base-offset zero-padded
//	                          to 20 digits so keys sort by offset; unique
//	                          is the writing job's, so a retried job never
//	                          overwrites an object another row names
//	<prefix>/coordinator/snapshots/<seq>/...
//	                          the coordinator's snapshots (package
//	                          coordinator/ha); shard i > 0 of a sharded
//	                          coordinator keeps its own under
//	                          coordinator/shard-<i>/snapshots/
//
// A prefix is a key's leading segments: "floe", "floe/" and "/floe/" are
// the same prefix, so that a trailing '/' given by a user does not make an
// empty segment (which no store accepts).

// walDir is the folder of WAL objects under the prefix.
const walDir = "wal/"

// tieredDir is the folder of segment objects under the prefix.
const tieredDir = "tiered/"

// snapshotDir is the folder of the coordinator's snapshots.
const snapshotDir = "coordinator/snapshots/"

// CleanPrefix returns prefix without leading and trailing '/'.
func CleanPrefix(prefix string) string { return strings.Trim(prefix, "/") }

// WALPrefix returns the key prefix every WAL object under prefix starts
// with: "<prefix>/wal/", or "wal/" without a prefix.
func WALPrefix(prefix string) string {
	if p := CleanPrefix(prefix); p != "" {
		return p + "/" + walDir
	}
	return walDir
}

// WALKey returns the key of WAL object id under prefix.
func WALKey(prefix, id string) string { return WALPrefix(prefix) + id }

// SnapshotPrefix returns the key prefix of the coordinator's snapshots
// under prefix: "<prefix>/coordinator/snapshots/", or
// "coordinator/snapshots/" without a prefix.
func SnapshotPrefix(prefix string) string {
	if p := CleanPrefix(prefix); p != "" {
		return p + "/" + snapshotDir
	}
	return snapshotDir
}

// ShardSnapshotPrefix returns the key prefix of the snapshots of
// coordinator shard shard (above 0) under prefix:
// "<prefix>/coordinator/shard-<shard>/snapshots/". Shard 0 keeps
// SnapshotPrefix's, as a coordinator without shards does.
func ShardSnapshotPrefix(prefix string, shard int) string {
	dir := "coordinator/shard-" + strconv.Itoa(shard) + "/snapshots/"
	if p := CleanPrefix(prefix); p != "" {
		return p + "/" + dir
	}
	return dir
}

// LegacySnapshotPrefix returns where coordinators before SnapshotPrefix
// kept their snapshots under prefix: the prefix and "coordinator/snapshots/"
// with no separator ("prodcoordinator/snapshots/" for prefix "prod"). It is
// "" when that is SnapshotPrefix(prefix) itself, as without a prefix or
// with one ending in "/".
func LegacySnapshotPrefix(prefix string) string {
	if old := prefix + snapshotDir; old != SnapshotPrefix(prefix) {
		return old
	}
	return ""
}

// TieredPrefix returns the key prefix every segment object under prefix starts
// with: "<prefix>/tiered/", or "tiered/" without a prefix.
func TieredPrefix(prefix string) string {
	if p := CleanPrefix(prefix); p != "" {
		return p + "/" + tieredDir
	}
	return tieredDir
}

// SegmentKey returns the key of the segment object of topicID's partition that
// starts at baseOffset, written by a job that chose unique:
// "<prefix>/tiered/<topic-id>/<partition>/<base-offset>-<unique>.seg", the base
// offset zero-padded to 20 digits.
func SegmentKey(prefix string, topicID TopicID, partition int32, baseOffset int64, unique string) string {
	return fmt.Sprintf("%s%s/%d/%020d-%s.seg", TieredPrefix(prefix), topicID, partition, baseOffset, unique)
}
