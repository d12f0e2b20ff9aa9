package coordapi

import "strings"

// Object key layout, the one place it is written down. Every object floe
// writes lives under the operator's prefix (--s3-prefix, "" for none):
//
//	<prefix>/wal/<uuidv7>     WAL objects: ingest writes them, the GC lists
//	                          wal/ for orphans
//
// A prefix is a key's leading segments: "floe", "floe/" and "/floe/" are
// the same prefix, so that a trailing '/' given by a user does not make an
// empty segment (which no store accepts).

// walDir is the folder of WAL objects under the prefix.
const walDir = "wal/"

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
