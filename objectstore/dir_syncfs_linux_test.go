package objectstore

import "testing"

func TestParseDirty(t *testing.T) {
	for _, tc := range []struct {
		name    string
		meminfo string
		want    int64
		ok      bool
	}{
		{"both", "MemTotal:       24000000 kB\nDirty:            1544 kB\nWriteback:          16 kB\nAnonPages: 1 kB\n", (1544 + 16) << 10, true},
		{"writeback missing", "Dirty:            1544 kB\n", 0, false},
		{"not a number", "Dirty: x kB\nWriteback: 0 kB\n", 0, false},
		{"empty value", "Dirty:\nWriteback: 0 kB\n", 0, false},
		{"WritebackTmp is another line", "Dirty: 1 kB\nWritebackTmp: 99 kB\nWriteback: 2 kB\n", 3 << 10, true},
	} {
		got, ok := parseDirty([]byte(tc.meminfo))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: parseDirty = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := machineDirty(); !ok {
		t.Error("machineDirty cannot read this machine's /proc/meminfo")
	}
}

func TestUseSyncfs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		dirty int64
		ok    bool
		want  bool
	}{
		{"a soak's group", 5, 0, true, false},
		{"just under", syncFSMinFiles - 1, 0, true, false},
		{"a low-load second's group", 100, 1 << 20, true, true},
		{"at the smallest", syncFSMinFiles, syncFSMaxDirty, true, true},
		{"much dirty", 100, syncFSMaxDirty + 1, true, false},
		{"meminfo unread", 100, 0, false, false},
	} {
		read := false
		got := useSyncfs(tc.n, func() (int64, bool) { read = true; return tc.dirty, tc.ok })
		if got != tc.want {
			t.Errorf("%s: useSyncfs(%d) = %v, want %v", tc.name, tc.n, got, tc.want)
		}
		if read != (tc.n >= syncFSMinFiles) {
			t.Errorf("%s: /proc/meminfo read = %v for %d files", tc.name, read, tc.n)
		}
	}
}

// syncEach, the path syncFS takes when much is dirty, syncs what exists
// and reports a file that does not.
func TestSyncEach(t *testing.T) {
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, key := range []string{"a/x", "a/y", "b/z"} {
		p, err := d.path(key)
		if err == nil {
			err = d.writeFileUnsynced(p, []byte(key))
		}
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if err := syncEach(paths); err != nil {
		t.Fatalf("syncEach: %v", err)
	}
	if err := syncEach(append(paths, paths[0]+".missing")); err == nil {
		t.Fatal("syncEach of a missing file succeeded")
	}
}
