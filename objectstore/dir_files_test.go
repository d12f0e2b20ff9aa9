package objectstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// Reads through the open-file cache see what the last write or delete of
// a key left, and the cache holds at most its bound.
func TestDirOpenFiles(t *testing.T) {
	ctx := context.Background()
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d.files.max = 3
	read := func(key string) ([]byte, error) {
		t.Helper()
		return d.GetRange(ctx, key, 0, -1)
	}
	for i := range 6 {
		if err := d.Put(ctx, fmt.Sprintf("wal/%d", i), []byte(fmt.Sprintf("v1-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		for i := range 6 {
			got, err := read(fmt.Sprintf("wal/%d", i))
			if err != nil || string(got) != fmt.Sprintf("v1-%d", i) {
				t.Fatalf("round %d: wal/%d = %q, %v", round, i, got, err)
			}
		}
	}
	if n := len(d.files.m); n != 3 || d.files.lru.Len() != 3 {
		t.Fatalf("%d files cached (%d listed), want the bound, 3", n, d.files.lru.Len())
	}

	// A cached key deleted: not found. Written again: its new bytes.
	if _, err := read("wal/5"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "wal/5"); err != nil {
		t.Fatal(err)
	}
	if _, err := read("wal/5"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read after Delete: %v, want ErrNotFound", err)
	}
	if err := d.Put(ctx, "wal/5", []byte("v2-5, longer")); err != nil {
		t.Fatal(err)
	}
	if got, err := read("wal/5"); err != nil || string(got) != "v2-5, longer" {
		t.Fatalf("read after a new Put: %q, %v", got, err)
	}
	// Replaced by an upload, and by a Persist of a staged object.
	if _, err := read("wal/4"); err != nil {
		t.Fatal(err)
	}
	u, err := d.NewUpload(ctx, "wal/4")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write([]byte("uploaded")); err != nil {
		t.Fatal(err)
	}
	if err := u.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := read("wal/4"); err != nil || string(got) != "uploaded" {
		t.Fatalf("read after an upload: %q, %v", got, err)
	}
	if _, err := read("wal/3"); err != nil {
		t.Fatal(err)
	}
	if err := d.Stage(ctx, "wal/3", []byte("staged")); err != nil {
		t.Fatal(err)
	}
	if err := d.Persist(ctx, []string{"wal/3"}); err != nil {
		t.Fatal(err)
	}
	if got, err := read("wal/3"); err != nil || string(got) != "staged" {
		t.Fatalf("read after a Persist: %q, %v", got, err)
	}
}

// Concurrent reads, writes and deletes of a few keys: every read returns
// a whole version the key had, or not found; no file is closed under a
// read (the race detector and the reads' errors would say).
func TestDirOpenFilesConcurrent(t *testing.T) {
	ctx := context.Background()
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d.files.max = 2
	const keys, versions = 4, 40
	value := func(k, v int) []byte { return bytes.Repeat([]byte{byte(k), byte(v)}, 512) }
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			key := fmt.Sprintf("wal/%d", k)
			for v := range versions {
				if v%5 == 4 {
					if err := d.Delete(ctx, key); err != nil {
						t.Error(err)
					}
					continue
				}
				if err := d.Put(ctx, key, value(k, v)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for r := range 4 {
		wg.Go(func() {
			for i := range 400 {
				k := (i + r) % keys
				got, err := d.GetRange(ctx, fmt.Sprintf("wal/%d", k), 0, -1)
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					t.Errorf("read wal/%d: %v", k, err)
					return
				}
				if len(got) != 1024 || got[0] != byte(k) || !bytes.Equal(got, value(k, int(got[1]))) {
					t.Errorf("read wal/%d: %d bytes, not a version written", k, len(got))
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(d.files.m); n > 2 {
		t.Fatalf("%d files cached, bound 2", n)
	}
}

// BenchmarkDirReadRangeAt reads 4 KiB ranges of 64 objects in turn, as the
// tier jobs read a partition's batches from WAL objects one after another:
// with the open-file cache (each read a pread) and without it (an open, a
// stat and a close around each).
func BenchmarkDirReadRangeAt(b *testing.B) {
	for _, tc := range []struct {
		name  string
		files int
	}{{"cached", dirOpenFiles}, {"uncached", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			d, err := NewDir(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			d.files.max = tc.files
			const objects = 64
			for i := range objects {
				if err := d.Put(ctx, fmt.Sprintf("wal/%02d", i), make([]byte, 128<<10)); err != nil {
					b.Fatal(err)
				}
			}
			dst := make([]byte, 4<<10)
			b.SetBytes(int64(len(dst)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := d.ReadRangeAt(ctx, fmt.Sprintf("wal/%02d", i%objects), int64(i%16)*8<<10, dst); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
