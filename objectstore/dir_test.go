package objectstore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
)

func TestDirLayout(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "nested", "root")
	d, err := objectstore.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "wal/0001", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "wal", "0001"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("file under root = %q, %v", got, err)
	}
	// A failed or crashed Put leaves a temp file: never listed.
	if err := os.WriteFile(filepath.Join(root, "wal", ".floe-tmp-123"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	infos, err := d.List(ctx, "wal/")
	if err != nil || len(infos) != 1 || infos[0].Key != "wal/0001" {
		t.Fatalf("List(wal/) = %+v, %v; want only wal/0001", infos, err)
	}
	if err := d.Put(ctx, "wal/.floe-tmp-x", nil); !errors.Is(err, objectstore.ErrInvalidKey) {
		t.Errorf("Put(temp-file name) error = %v, want ErrInvalidKey", err)
	}
	// Nothing is left behind by successful puts.
	entries, err := os.ReadDir(filepath.Join(root, "wal"))
	if err != nil || len(entries) != 2 {
		t.Errorf("wal/ holds %d entries, want the object and the planted temp file", len(entries))
	}
}

func TestDirNotObjects(t *testing.T) {
	ctx := context.Background()
	d, err := objectstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "a/b", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// "a" is a directory and "a/b/c" runs through a file: neither is an
	// object.
	for _, key := range []string{"a", "a/b/c"} {
		if _, err := d.Head(ctx, key); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Head(%q) error = %v, want ErrNotFound", key, err)
		}
		if _, err := d.GetRange(ctx, key, 0, -1); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("GetRange(%q) error = %v, want ErrNotFound", key, err)
		}
		if err := d.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q) = %v", key, err)
		}
	}
	if _, err := d.Head(ctx, "a/b"); err != nil {
		t.Errorf("a/b gone after deleting non-objects: %v", err)
	}
}

// spareFiles returns the names of the spares in dir.
func spareFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".floe-tmp-spare-") {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestDirSpares: a Dir with spares keeps that many empty temporary files
// in the directories it writes to, Puts take them (the objects read back
// whole, mode 0644, never listed), the pools of the directories used
// least recently go beyond four, and Close removes every spare.
func TestDirSpares(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := objectstore.NewDirOptions(root, objectstore.DirOptions{Spares: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitSpares := func(dir string, want int) {
		t.Helper()
		testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
			if got := len(spareFiles(t, filepath.Join(root, dir))); got != want {
				return fmt.Errorf("%s holds %d spares, want %d", dir, got, want)
			}
			return nil
		})
	}
	for i := range 10 {
		key := fmt.Sprintf("wal/%04d", i)
		before := spareFiles(t, filepath.Join(root, "wal"))
		if err := d.Put(ctx, key, []byte(key)); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			// The Put wrote into one of the spares: its name is gone.
			taken := 0
			for _, n := range before {
				if _, err := os.Stat(filepath.Join(root, "wal", n)); errors.Is(err, fs.ErrNotExist) {
					taken++
				}
			}
			if taken != 1 {
				t.Fatalf("put %d took %d of the spares %v, want 1", i, taken, before)
			}
		}
		waitSpares("wal", 3) // refilled before the next Put
		got, err := d.GetRange(ctx, key, 0, -1)
		if err != nil || string(got) != key {
			t.Fatalf("GetRange(%s) = %q, %v", key, got, err)
		}
		fi, err := os.Stat(filepath.Join(root, "wal", fmt.Sprintf("%04d", i)))
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: mode %v, %v; want 0644", key, fi.Mode(), err)
		}
	}
	infos, err := d.List(ctx, "")
	if err != nil || len(infos) != 10 {
		t.Fatalf("List = %d objects, %v; want the 10 put", len(infos), err)
	}
	// Four more directories: wal/ is the one used least recently.
	for _, dir := range []string{"a", "b", "c", "e"} {
		if err := d.Put(ctx, dir+"/x", []byte("x")); err != nil {
			t.Fatal(err)
		}
		waitSpares(dir, 3)
	}
	waitSpares("wal", 0)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"wal", "a", "b", "c", "e"} {
		if n := spareFiles(t, filepath.Join(root, dir)); len(n) != 0 {
			t.Errorf("%s holds spares %v after Close", dir, n)
		}
	}
	// A closed Dir still writes, without spares.
	if err := d.Put(ctx, "a/y", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if n := spareFiles(t, filepath.Join(root, "a")); len(n) != 0 {
		t.Errorf("a/ holds spares %v after a Put on a closed Dir", n)
	}
}
