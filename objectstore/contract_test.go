package objectstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit/miniotest"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/s3latency"
)

func TestMemoryContract(t *testing.T) {
	testStore(t, objectstore.NewMemory())
}

func TestDirContract(t *testing.T) {
	d, err := objectstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testStore(t, d)
}

func TestFaultyPassThroughContract(t *testing.T) {
	testStore(t, objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{}))
}

func TestS3MinIOContract(t *testing.T) {
	srv := miniotest.Start(t)
	testStore(t, srv.Store(t))
}

// TestS3LatencyProxyContract runs the contract through the S3 latency
// proxy (s3-express: short delays), so that every request floe makes
// passes it unchanged, signatures included.
func TestS3LatencyProxyContract(t *testing.T) {
	srv := miniotest.StartProfile(t, s3latency.S3Express)
	testStore(t, srv.Store(t))
	st := srv.Proxy.Stats()
	for _, op := range []string{"put", "get", "head", "delete", "list"} {
		if st.Ops[op].Requests == 0 {
			t.Errorf("no %s went through the proxy: %+v", op, st.Ops)
		}
	}
}

// randBytes returns n deterministic pseudo-random bytes.
func randBytes(seed uint64, n int) []byte {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

// testStore is the contract every Store backend must pass. Subtests use
// disjoint key prefixes, so they share one store.
func testStore(t *testing.T, s objectstore.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	mustPut := func(t *testing.T, key string, data []byte) {
		t.Helper()
		if err := s.Put(ctx, key, data); err != nil {
			t.Fatalf("Put(%q): %v", key, err)
		}
	}
	mustGet := func(t *testing.T, key string, off, n int64) []byte {
		t.Helper()
		got, err := s.GetRange(ctx, key, off, n)
		if err != nil {
			t.Fatalf("GetRange(%q, %d, %d): %v", key, off, n, err)
		}
		return got
	}

	t.Run("PutGetRanges", func(t *testing.T) {
		data := randBytes(1, 1000)
		mustPut(t, "ranges/obj", data)
		for _, tc := range []struct {
			off, n int64
			want   []byte
		}{
			{0, -1, data},
			{0, 1000, data},
			{0, 10, data[:10]},
			{10, 100, data[10:110]},
			{990, 10, data[990:]},
			{995, 100, data[995:]}, // past the end: what exists
			{500, -1, data[500:]},
			{999, 1, data[999:]},
			{1000, -1, nil}, // at the end: nothing, no error
			{1000, 10, nil},
			{0, 0, nil},
			{500, 0, nil},
		} {
			got := mustGet(t, "ranges/obj", tc.off, tc.n)
			if !bytes.Equal(got, tc.want) {
				t.Errorf("GetRange(%d, %d) = %d bytes, want %d bytes", tc.off, tc.n, len(got), len(tc.want))
			}
		}
		info, err := s.Head(ctx, "ranges/obj")
		if err != nil {
			t.Fatal(err)
		}
		if info.Key != "ranges/obj" || info.Size != 1000 {
			t.Errorf("Head = %+v, want key ranges/obj size 1000", info)
		}
		if d := time.Since(info.LastModified); d < -time.Minute || d > time.Minute {
			t.Errorf("Head LastModified = %v, not about now", info.LastModified)
		}
	})

	t.Run("ReadRangeAt", func(t *testing.T) {
		// objectstore.ReadRangeAt: the store's own (Dir) or GetRange's
		// bytes copied, the same either way.
		data := randBytes(4, 1000)
		mustPut(t, "readat/obj", data)
		large := randBytes(5, 600<<10) // a range past directReadMin
		mustPut(t, "readat/large", large)
		for _, tc := range []struct {
			key  string
			off  int64
			n    int
			want []byte
		}{
			{"readat/obj", 0, 1000, data},
			{"readat/obj", 10, 100, data[10:110]},
			{"readat/obj", 995, 100, data[995:]}, // past the end: what exists
			{"readat/obj", 1000, 10, nil},
			{"readat/obj", 500, 0, nil},
			{"readat/large", 4096, 512 << 10, large[4096 : 4096+512<<10]},
			{"readat/large", 1000, 599 << 10, large[1000 : 1000+599<<10]},
		} {
			dst := make([]byte, tc.n)
			n, err := objectstore.ReadRangeAt(ctx, s, tc.key, tc.off, dst)
			if err != nil || !bytes.Equal(dst[:n], tc.want) {
				t.Errorf("ReadRangeAt(%s, %d, %d) = %d bytes, %v; want %d bytes", tc.key, tc.off, tc.n, n, err, len(tc.want))
			}
		}
		if _, err := objectstore.ReadRangeAt(ctx, s, "readat/obj", 1001, make([]byte, 1)); !errors.Is(err, objectstore.ErrInvalidRange) {
			t.Errorf("ReadRangeAt beyond the end: %v, want ErrInvalidRange", err)
		}
		if _, err := objectstore.ReadRangeAt(ctx, s, "missing/obj", 0, make([]byte, 10)); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("ReadRangeAt(missing): %v, want ErrNotFound", err)
		}
	})

	t.Run("ListKeys", func(t *testing.T) {
		kl, ok := s.(objectstore.KeyLister)
		if !ok {
			t.Skip("the store lists keys only with List")
		}
		for _, k := range []string{"lk/a/1", "lk/a/2", "lk/a.b", "lk/b"} {
			mustPut(t, k, []byte(k))
		}
		for _, prefix := range []string{"lk/", "lk/a", "lk/a/", "lk/c", ""} {
			infos, err := s.List(ctx, prefix)
			if err != nil {
				t.Fatal(err)
			}
			keys, err := kl.ListKeys(ctx, prefix)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, o := range infos {
				want = append(want, o.Key)
			}
			if !slices.Equal(keys, want) {
				t.Errorf("ListKeys(%q) = %q, List's keys %q", prefix, keys, want)
			}
		}
	})

	t.Run("OffsetBeyondEnd", func(t *testing.T) {
		mustPut(t, "beyond/obj", randBytes(2, 100))
		for _, tc := range []struct{ off, n int64 }{{101, -1}, {101, 10}, {5000, 1}, {101, 0}, {-1, 10}} {
			got, err := s.GetRange(ctx, "beyond/obj", tc.off, tc.n)
			if !errors.Is(err, objectstore.ErrInvalidRange) {
				t.Errorf("GetRange(%d, %d) = %d bytes, %v; want ErrInvalidRange", tc.off, tc.n, len(got), err)
			}
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		for _, n := range []int64{-1, 10, 0} {
			if _, err := s.GetRange(ctx, "missing/obj", 0, n); !errors.Is(err, objectstore.ErrNotFound) {
				t.Errorf("GetRange(missing, 0, %d) error = %v, want ErrNotFound", n, err)
			}
		}
		if _, err := s.GetRange(ctx, "missing/obj", 5, 10); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("GetRange(missing, 5, 10) error = %v, want ErrNotFound", err)
		}
		if _, err := s.Head(ctx, "missing/obj"); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Head(missing) error = %v, want ErrNotFound", err)
		}
	})

	t.Run("DeleteIdempotent", func(t *testing.T) {
		mustPut(t, "del/obj", []byte("x"))
		for i := range 2 {
			if err := s.Delete(ctx, "del/obj"); err != nil {
				t.Fatalf("Delete #%d: %v", i+1, err)
			}
		}
		if err := s.Delete(ctx, "del/never"); err != nil {
			t.Fatalf("Delete(never written): %v", err)
		}
		if _, err := s.Head(ctx, "del/obj"); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Head after Delete error = %v, want ErrNotFound", err)
		}
		if _, err := s.GetRange(ctx, "del/obj", 0, -1); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("GetRange after Delete error = %v, want ErrNotFound", err)
		}
		infos, err := s.List(ctx, "del/")
		if err != nil || len(infos) != 0 {
			t.Errorf("List after Delete = %v, %v; want nothing", infos, err)
		}
	})

	t.Run("List", func(t *testing.T) {
		// '-' < '.' < '/' < '0' in byte order: directory-shaped keys must
		// sort by full key, not by walk order.
		keys := []string{"list/a-x", "list/a.x", "list/a/x", "list/a0", "list/b/c/d", "list/bb"}
		sizes := map[string]int64{}
		for i, k := range slices.Backward(keys) { // put out of order
			sizes[k] = int64(i * 10)
			mustPut(t, k, randBytes(uint64(i), i*10))
		}
		mustPut(t, "lister/x", []byte("not under list/"))
		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"list/", keys},
			{"list", append(slices.Clone(keys), "lister/x")},
			{"list/a", keys[:4]},
			{"list/a/", keys[2:3]},
			{"list/b", keys[4:]},
			{"list/b/c/", keys[4:5]},
			{"list/b/c/d", keys[4:5]},
			{"list/zzz", nil},
			{"nope/", nil},
		} {
			infos, err := s.List(ctx, tc.prefix)
			if err != nil {
				t.Fatalf("List(%q): %v", tc.prefix, err)
			}
			var got []string
			for _, info := range infos {
				got = append(got, info.Key)
				if want, ok := sizes[info.Key]; ok && info.Size != want {
					t.Errorf("List(%q): %s size %d, want %d", tc.prefix, info.Key, info.Size, want)
				}
				if info.LastModified.IsZero() {
					t.Errorf("List(%q): %s has no LastModified", tc.prefix, info.Key)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
			}
		}
		all, err := s.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSortedFunc(all, func(a, b objectstore.ObjectInfo) int { return strings.Compare(a.Key, b.Key) }) {
			t.Errorf("List(\"\") not in key order")
		}
		if len(all) < len(keys)+1 {
			t.Errorf("List(\"\") = %d objects, want at least %d", len(all), len(keys)+1)
		}
	})

	t.Run("EmptyObject", func(t *testing.T) {
		mustPut(t, "empty/obj", nil)
		for _, n := range []int64{-1, 0, 10} {
			if got := mustGet(t, "empty/obj", 0, n); len(got) != 0 {
				t.Errorf("GetRange(empty, 0, %d) = %d bytes", n, len(got))
			}
		}
		if _, err := s.GetRange(ctx, "empty/obj", 1, -1); !errors.Is(err, objectstore.ErrInvalidRange) {
			t.Errorf("GetRange(empty, 1, -1) error = %v, want ErrInvalidRange", err)
		}
		info, err := s.Head(ctx, "empty/obj")
		if err != nil || info.Size != 0 {
			t.Errorf("Head(empty) = %+v, %v", info, err)
		}
	})

	t.Run("KeysWithSlashes", func(t *testing.T) {
		key := "deep/a/b/c/d/0195f3c2-7d1e-7c3a-9b1e-3f2a1b4c5d6e"
		mustPut(t, key, []byte("deep"))
		if got := mustGet(t, key, 0, -1); string(got) != "deep" {
			t.Errorf("GetRange = %q", got)
		}
		info, err := s.Head(ctx, key)
		if err != nil || info.Key != key || info.Size != 4 {
			t.Errorf("Head = %+v, %v", info, err)
		}
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		for _, key := range []string{"", "/abs", "../up", "a/../b", "a/./b", "./a", "a//b", "a/", ".", "..", "a\\b", "nul\x00", "bad\xff", strings.Repeat("k", 1025)} {
			if err := s.Put(ctx, key, []byte("x")); !errors.Is(err, objectstore.ErrInvalidKey) {
				t.Errorf("Put(%q) error = %v, want ErrInvalidKey", key, err)
			}
			if _, err := s.GetRange(ctx, key, 0, -1); !errors.Is(err, objectstore.ErrInvalidKey) {
				t.Errorf("GetRange(%q) error = %v, want ErrInvalidKey", key, err)
			}
			if _, err := s.Head(ctx, key); !errors.Is(err, objectstore.ErrInvalidKey) {
				t.Errorf("Head(%q) error = %v, want ErrInvalidKey", key, err)
			}
			if err := s.Delete(ctx, key); !errors.Is(err, objectstore.ErrInvalidKey) {
				t.Errorf("Delete(%q) error = %v, want ErrInvalidKey", key, err)
			}
		}
	})

	t.Run("BuffersAreCopies", func(t *testing.T) {
		data := []byte("original")
		mustPut(t, "copy/obj", data)
		copy(data, "mutated!")
		got := mustGet(t, "copy/obj", 0, -1)
		if string(got) != "original" {
			t.Fatalf("after mutating Put's buffer, GetRange = %q", got)
		}
		copy(got, "mutated!")
		if got := mustGet(t, "copy/obj", 0, -1); string(got) != "original" {
			t.Fatalf("after mutating GetRange's result, GetRange = %q", got)
		}
	})

	t.Run("LargeObject", func(t *testing.T) {
		const size = 8 << 20
		data := randBytes(3, size)
		mustPut(t, "large/obj", data)
		if got := mustGet(t, "large/obj", 0, -1); !bytes.Equal(got, data) {
			t.Fatalf("GetRange(whole) = %d bytes, differs from the %d put", len(got), size)
		}
		off := int64(4<<20 - 1000) // crosses a 4 MiB chunk boundary
		if got := mustGet(t, "large/obj", off, 100_000); !bytes.Equal(got, data[off:off+100_000]) {
			t.Fatalf("GetRange(%d, 100000) differs", off)
		}
		if got := mustGet(t, "large/obj", size-10, 4<<20); !bytes.Equal(got, data[size-10:]) {
			t.Fatalf("GetRange(tail) differs")
		}
		info, err := s.Head(ctx, "large/obj")
		if err != nil || info.Size != size {
			t.Fatalf("Head = %+v, %v", info, err)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		const workers, perWorker = 8, 8
		shared := randBytes(4, 64<<10)
		mustPut(t, "conc/shared", shared)
		var wg sync.WaitGroup
		errs := make(chan error, workers*perWorker*2)
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					key := fmt.Sprintf("conc/%d/%d", w, i)
					data := randBytes(uint64(w*1000+i), 1000+w*100+i)
					if err := s.Put(ctx, key, data); err != nil {
						errs <- err
						continue
					}
					got, err := s.GetRange(ctx, key, 0, -1)
					if err != nil || !bytes.Equal(got, data) {
						errs <- fmt.Errorf("%s: read back %d bytes (%v), want %d", key, len(got), err, len(data))
					}
					off := int64(i * 1000)
					got, err = s.GetRange(ctx, "conc/shared", off, 4096)
					if err != nil || !bytes.Equal(got, shared[off:off+4096]) {
						errs <- fmt.Errorf("shared at %d: %d bytes (%v)", off, len(got), err)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		infos, err := s.List(ctx, "conc/")
		if err != nil || len(infos) != workers*perWorker+1 {
			t.Errorf("List(conc/) = %d objects, %v; want %d", len(infos), err, workers*perWorker+1)
		}
	})

	t.Run("Upload", func(t *testing.T) {
		// Sizes around the backends' buffers: empty, small, one Dir
		// block, and past two S3 parts (a multipart upload of three).
		sizes := []int{0, 1000, objectstore.DirUploadBlockBytes, 2*objectstore.S3PartBytes + 12345}
		for i, size := range sizes {
			key := fmt.Sprintf("upload/%d", i)
			data := randBytes(uint64(100+i), size)
			u, err := objectstore.NewUpload(ctx, s, key)
			if err != nil {
				t.Fatalf("NewUpload(%q): %v", key, err)
			}
			// Writes of odd sizes, so that they straddle the buffers.
			for rest, step := data, 1; len(rest) > 0; step = step*7 + 1 {
				n := min(step%(3<<20)+1, len(rest))
				if w, err := u.Write(rest[:n]); err != nil || w != n {
					t.Fatalf("%s: Write(%d bytes) = %d, %v", key, n, w, err)
				}
				rest = rest[n:]
			}
			if _, err := s.GetRange(ctx, key, 0, -1); !errors.Is(err, objectstore.ErrNotFound) {
				t.Errorf("%s: GetRange before Commit error = %v, want ErrNotFound", key, err)
			}
			if err := u.Commit(ctx); err != nil {
				t.Fatalf("%s: Commit: %v", key, err)
			}
			if err := u.Abort(ctx); err != nil {
				t.Errorf("%s: Abort after Commit: %v", key, err)
			}
			if got := mustGet(t, key, 0, -1); !bytes.Equal(got, data) {
				t.Errorf("%s: read back %d bytes, differs from the %d uploaded", key, len(got), size)
			}
			if size > 0 {
				off := int64(size / 2)
				if got := mustGet(t, key, off, 100); !bytes.Equal(got, data[off:min(off+100, int64(size))]) {
					t.Errorf("%s: GetRange(%d, 100) differs", key, off)
				}
			}
			if info, err := s.Head(ctx, key); err != nil || info.Size != int64(size) {
				t.Errorf("%s: Head = %+v, %v; want size %d", key, info, err, size)
			}
		}
		infos, err := s.List(ctx, "upload/")
		if err != nil || len(infos) != len(sizes) {
			t.Errorf("List(upload/) = %d objects, %v; want %d", len(infos), err, len(sizes))
		}

		// Abort, after more than a part: nothing is left.
		u, err := objectstore.NewUpload(ctx, s, "upload-aborted/obj")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Write(randBytes(7, objectstore.S3PartBytes+1)); err != nil {
			t.Fatal(err)
		}
		if err := u.Abort(ctx); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		if _, err := u.Write([]byte("x")); err == nil {
			t.Error("Write after Abort succeeded")
		}
		if err := u.Commit(ctx); err == nil {
			t.Error("Commit after Abort succeeded")
		}
		if _, err := s.Head(ctx, "upload-aborted/obj"); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Head(aborted) error = %v, want ErrNotFound", err)
		}
		if infos, err := s.List(ctx, "upload-aborted/"); err != nil || len(infos) != 0 {
			t.Errorf("List(upload-aborted/) = %v, %v; want none", infos, err)
		}

		if _, err := objectstore.NewUpload(ctx, s, "/bad"); !errors.Is(err, objectstore.ErrInvalidKey) {
			t.Errorf("NewUpload(/bad) error = %v, want ErrInvalidKey", err)
		}
	})

	t.Run("CanceledContext", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		ccancel()
		if err := s.Put(cctx, "canceled/obj", []byte("x")); !errors.Is(err, context.Canceled) {
			t.Errorf("Put(canceled ctx) error = %v, want context.Canceled", err)
		}
		if _, err := s.GetRange(cctx, "ranges/obj", 0, -1); !errors.Is(err, context.Canceled) {
			t.Errorf("GetRange(canceled ctx) error = %v, want context.Canceled", err)
		}
		if _, err := s.List(cctx, "ranges/"); !errors.Is(err, context.Canceled) {
			t.Errorf("List(canceled ctx) error = %v, want context.Canceled", err)
		}
	})
}
