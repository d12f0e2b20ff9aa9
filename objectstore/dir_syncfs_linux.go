package objectstore

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// syncFS makes every write to the file system holding f durable, data and
// metadata, with one syncfs(2): one journal commit and one device cache
// flush for all of Persist's files. Linux reports writeback errors through
// it since 5.8.
//
// But syncfs writes back every dirty page of the file system, not only
// Persist's few: after another program's heavy writes (in
// bench-vs-kafka.sh, Apache Kafka's saturation phase, which acks from the
// page cache, runs before floe's) it forced all of them out once a second,
// and the commits' own syncs queued behind that writeback. With 4 GB of another file dirty, the embedded
// default at 96,000 records/s (2 producers, 8 partitions, a consumer, 20
// s) had produce p99 49, 28, 364 and 57 ms in four runs, against 21, 26,
// 39 and 50 with a sync of each file in turn, and the dirty pages were
// gone after each run instead of left to the kernel (2026-12-06, a
// scratch script). So when
// more than syncFSMaxDirty is dirty or under writeback machine-wide
// (/proc/meminfo), each file and directory is synced instead.
func syncFS(f *os.File, files []string) error {
	if dirty, ok := machineDirty(); !ok || dirty > syncFSMaxDirty {
		return syncEach(files)
	}
	return unix.Syncfs(int(f.Fd()))
}

// syncFSMaxDirty is the most dirty data for which syncFS uses syncfs(2):
// a second of writeback at the slowest device floe expects.
const syncFSMaxDirty = 64 << 20

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
