package objectstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

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
