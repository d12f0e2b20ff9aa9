package objectstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"

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

// TestDirStage checks that a staged object reads, heads and lists at once
// without a file, that Persist writes it (skipping keys not staged), and
// that Delete drops it; also through Instrumented.
func TestDirStage(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := objectstore.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	s := objectstore.Instrument(d, noop.NewMeterProvider().Meter("test"))
	if err := s.Put(ctx, "wal/0000", []byte("put")); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"wal/0001", "wal/0002"} {
		if err := s.Stage(ctx, key, []byte("staged")); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.GetRange(ctx, "wal/0001", 2, 3); err != nil || string(got) != "age" {
		t.Fatalf("staged object's [2, +3) reads %q, %v", got, err)
	}
	if _, err := s.GetRange(ctx, "wal/0001", 7, 1); !errors.Is(err, objectstore.ErrInvalidRange) {
		t.Errorf("read past a staged object's end: %v, want ErrInvalidRange", err)
	}
	dst := make([]byte, 8)
	if n, err := s.ReadRangeAt(ctx, "wal/0001", 2, dst); err != nil || string(dst[:n]) != "aged" {
		t.Errorf("ReadRangeAt of a staged object's [2, +8) reads %q, %v; want what exists, \"aged\"", dst[:n], err)
	}
	if info, err := s.Head(ctx, "wal/0001"); err != nil || info.Size != 6 {
		t.Errorf("Head(staged) = %+v, %v", info, err)
	}
	infos, err := s.List(ctx, "wal/")
	if err != nil || len(infos) != 3 || infos[0].Key != "wal/0000" || infos[1].Key != "wal/0001" || infos[2].Size != 6 {
		t.Fatalf("List(wal/) = %+v, %v; want the put object and both staged ones, in order", infos, err)
	}
	if _, err := os.Stat(filepath.Join(root, "wal", "0001")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a staged object has a file: %v", err)
	}
	if err := s.Persist(ctx, []string{"wal/0001", "wal/never-staged"}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(root, "wal", "0001")); err != nil || string(got) != "staged" {
		t.Errorf("after Persist the file holds %q, %v", got, err)
	}
	if _, err := s.Head(ctx, "wal/never-staged"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Persist of a key never staged made an object: %v", err)
	}
	if err := s.Delete(ctx, "wal/0002"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Head(ctx, "wal/0002"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Head(deleted staged object) = %v, want ErrNotFound", err)
	}
	if infos, err := s.List(ctx, "wal/"); err != nil || len(infos) != 2 {
		t.Errorf("List(wal/) after Persist and Delete = %+v, %v; want the two files", infos, err)
	}
	if err := s.Stage(ctx, "wal/.floe-tmp-x", nil); !errors.Is(err, objectstore.ErrInvalidKey) {
		t.Errorf("Stage(temp-file name) error = %v, want ErrInvalidKey", err)
	}
	mem := objectstore.Instrument(objectstore.NewMemory(), noop.NewMeterProvider().Meter("test"))
	if err := mem.Stage(ctx, "k", nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Stage on a store without it = %v, want ErrUnsupported", err)
	}
}
