package objectstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// directSupported reports whether dir's file system takes an aligned
// O_DIRECT write.
func directSupported(t testing.TB, dir string) bool {
	t.Helper()
	if openDirectFlag == 0 {
		return false
	}
	f, err := createTemp(dir, openDirectFlag)
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	defer f.Close()
	return writeAt(f, alignedBuf(directBlock), 0) == nil
}

// Put writes every length exactly, from block-aligned and unaligned
// memory, whole blocks or not, through O_DIRECT where the file system
// takes it: the file holds the bytes given and nothing else (the padding
// of the last block is cut off); GetRange reads them back, large ranges
// with O_DIRECT too.
func TestDirPutDirectLengths(t *testing.T) {
	root := t.TempDir()
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	direct := directSupported(t, root)
	t.Logf("O_DIRECT on %s: %v (%s)", root, direct, runtime.GOOS)
	d.w.directMin = 0 // every length through O_DIRECT, the smallest too
	ctx := context.Background()
	for _, n := range []int{0, 1, 511, 4095, 4096, 4097, 3*4096 + 17, directScratch - 1, directScratch, directScratch + 1, 3*directScratch + 4095, 8 << 20} {
		for _, aligned := range []bool{true, false} {
			src := alignedBuf(n + 1)
			if !aligned {
				src = src[1:]
			}
			src = src[:n]
			for i := range src {
				src[i] = byte(i*31 + n)
			}
			key := fmt.Sprintf("obj/%d-%v", n, aligned)
			if err := d.Put(ctx, key, src); err != nil {
				t.Fatalf("Put %d bytes (aligned %v): %v", n, aligned, err)
			}
			got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(key)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, src) {
				t.Fatalf("Put %d bytes (aligned %v): file holds %d bytes, not the ones put", n, aligned, len(got))
			}
			// GetRange reads large ranges with O_DIRECT: whole, and off
			// the block boundaries at both ends.
			for _, r := range [][2]int{{0, n}, {4097, n - 4097 - 3}, {1, directReadMin}, {n - directReadMin - 5, directReadMin}} {
				if r[0] < 0 || r[1] < 0 || r[0]+r[1] > n {
					continue
				}
				got, err := d.GetRange(ctx, key, int64(r[0]), int64(r[1]))
				if err != nil {
					t.Fatalf("GetRange(%d, +%d) of %d bytes: %v", r[0], r[1], n, err)
				}
				if !bytes.Equal(got, src[r[0]:r[0]+r[1]]) {
					t.Fatalf("GetRange(%d, +%d) of %d bytes: got %d bytes, not the ones put", r[0], r[1], n, len(got))
				}
			}
		}
	}
	if direct && !d.w.direct() {
		t.Errorf("the file system takes O_DIRECT, but Dir fell back to the page cache")
	}
	entries, err := os.ReadDir(filepath.Join(root, "obj"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name()[0] == '.' {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// Objects below directWriteMin go through the page cache, the rest with
// O_DIRECT while the file system takes it.
func TestDirDirectForSize(t *testing.T) {
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	direct := openDirectFlag != 0
	for _, tc := range []struct {
		n    int
		want bool
	}{{0, false}, {4096, false}, {directWriteMin - 1, false}, {directWriteMin, direct}, {8 << 20, direct}} {
		if got := d.w.directFor(tc.n); got != tc.want {
			t.Errorf("directFor(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	d.w.refuseDirect()
	if d.w.directFor(8 << 20) {
		t.Errorf("directFor after O_DIRECT was refused = true")
	}
}

// A write O_DIRECT refuses (EINVAL: here, memory off the block boundary)
// is errDirectRefused, on which Put falls back to the page cache.
func TestDirectRefusedIsRecognised(t *testing.T) {
	dir := t.TempDir()
	if !directSupported(t, dir) {
		t.Skipf("no O_DIRECT on %s", dir)
	}
	f, err := createTemp(dir, openDirectFlag)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := alignedBuf(2 * directBlock)[1 : directBlock+1]
	if err := writeAt(f, buf, 0); !errors.Is(err, errDirectRefused) {
		t.Fatalf("misaligned O_DIRECT write: %v, want errDirectRefused", err)
	}
	var w writer
	w.refuseDirect()
	tmp, err := w.writeTemp(dir, []byte("through the page cache"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(tmp); string(got) != "through the page cache" {
		t.Fatalf("fallback wrote %q", got)
	}
}
