package objectstore

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// syncFS makes files and their directories durable. A large group (the
// inline objects of a second at low load: up to a hundred) gets one
// syncfs(2): one journal commit and one device cache flush for all of
// them, where an fsync each would queue a hundred behind the commits' own
// syncs. Linux reports writeback errors through it since 5.8. A small
// group gets an fsync of each file and directory, as does any group while
// much is dirty, because syncfs writes back every dirty page and buffer
// of the file system, not only Persist's few:
//
//   - After another program's heavy writes (in bench-vs-kafka.sh, Apache
//     Kafka's saturation phase, which acks from the page cache, runs
//     before floe's) it forced all of them out once a second, and the
//     commits' own syncs queued behind that writeback. With 4 GB of
//     another file dirty, the embedded default at 96,000 records/s (2
//     producers, 8 partitions, a consumer, 20 s) had produce p99 49, 28,
//     364 and 57 ms in four runs, against 21, 26, 39 and 50 with a sync of
//     each file in turn (2026-12-06, a scratch script). So when more than
//     syncFSMaxDirty is dirty or under writeback machine-wide
//     (/proc/meminfo), each file and directory is synced instead.
//   - Under load, floe's own churn of files (a WAL object created and
//     renamed every few milliseconds, the collector deleting as many)
//     leaves the file system's metadata dirty: inode tables, bitmaps,
//     directories, little in bytes. In the lifecycle soak (issue 38) a
//     syncfs wrote them back as a burst of a few hundred scattered 4 KiB
//     writes (perf's block:block_rq_issue, under sync_filesystem), and the
//     commits' fsyncs and the reads beside it waited up to 190 ms behind
//     them (execution traces of produce stalls, 2026-12-07). There the
//     groups held 1-23 objects, 4-5 most often: an fsync each costs the
//     device no more than the syncfs.
func syncFS(f *os.File, files []string) error {
	if !useSyncfs(len(files), machineDirty) {
		return syncEach(files)
	}
	return unix.Syncfs(int(f.Fd()))
}

// useSyncfs reports whether a group of n files is made durable with
// syncfs(2): a large group while little is dirty (dirty is read only for
// a large group).
func useSyncfs(n int, dirty func() (int64, bool)) bool {
	if n < syncFSMinFiles {
		return false
	}
	d, ok := dirty()
	return ok && d <= syncFSMaxDirty
}

// syncFSMaxDirty is the most dirty data for which syncFS uses syncfs(2):
// a second of writeback at the slowest device floe expects.
const syncFSMaxDirty = 64 << 20

// syncFSMinFiles is the smallest group syncFS makes durable with
// syncfs(2): below it, an fsync each.
const syncFSMinFiles = 32

// machineDirty returns the bytes dirty or under writeback machine-wide,
// from /proc/meminfo; ok is false when it cannot be read.
func machineDirty() (int64, bool) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	return parseDirty(data)
}

// parseDirty sums the Dirty and Writeback lines of /proc/meminfo's text
// (in kB); ok is false unless both are there.
func parseDirty(meminfo []byte) (int64, bool) {
	var sum int64
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || (string(name) != "Dirty" && string(name) != "Writeback") {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			return 0, false
		}
		sum += kb << 10
		found++
	}
	if found != 2 {
		return 0, false
	}
	return sum, true
}
