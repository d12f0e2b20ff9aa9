package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
)

func TestGetChunk(t *testing.T) {
	// "obj": two full chunks and a last one of a full chunk plus a tail
	// it absorbs; "small": one short chunk.
	const size = 3*testChunk + testChunk/16
	tests := []struct {
		name           string
		key            string
		offset, length int64
		want           func(data, small []byte) []byte // nil: an error
		err            error
		gets           int64 // GETs over a cold and a warm pass
	}{
		{name: "first chunk", key: "obj", offset: 0, length: testChunk,
			want: func(d, _ []byte) []byte { return d[:testChunk] }, gets: 1},
		{name: "middle chunk", key: "obj", offset: testChunk, length: testChunk,
			want: func(d, _ []byte) []byte { return d[testChunk : 2*testChunk] }, gets: 1},
		{name: "last chunk with its tail", key: "obj", offset: 2 * testChunk, length: size - 2*testChunk,
			want: func(d, _ []byte) []byte { return d[2*testChunk:] }, gets: 1},
		{name: "short only chunk", key: "small", offset: 0, length: 100,
			want: func(_, s []byte) []byte { return s }, gets: 1},
		{name: "unaligned offset", key: "obj", offset: 10, length: testChunk, err: ErrNotChunk},
		{name: "negative offset", key: "obj", offset: -testChunk, length: testChunk, err: ErrNotChunk},
		{name: "zero length", key: "obj", offset: 0, length: 0, err: ErrNotChunk},
		{name: "longer than a chunk and a tail", key: "obj", offset: 0, length: testChunk + testChunk/8 + 1, err: ErrNotChunk},
		{name: "missing object", key: "nope", offset: 0, length: testChunk, err: objectstore.ErrNotFound, gets: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeStore()
			data, small := store.add("obj", size), store.add("small", 100)
			c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 16 * testChunk, ReadAhead: 2})
			for _, pass := range []string{"cold", "warm"} {
				got, err := c.GetChunk(context.Background(), tt.key, tt.offset, tt.length)
				if tt.err != nil {
					if !errors.Is(err, tt.err) {
						t.Fatalf("%s: err = %v, want %v", pass, err, tt.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", pass, err)
				}
				if !bytes.Equal(got, tt.want(data, small)) {
					t.Fatalf("%s: wrong bytes", pass)
				}
			}
			// The warm pass costs nothing: the chunk stayed resident (and
			// no read-ahead ran). A failed load is not cached.
			if n := store.total.Load(); n != tt.gets {
				t.Fatalf("%d GETs, want %d", n, tt.gets)
			}
		})
	}
}

// TestGetChunkSharesTheCache: a chunk GetChunk loaded serves GetRange, and
// one GetRange loaded serves GetChunk; a length that is not the chunk's is
// refused without a GET.
func TestGetChunkSharesTheCache(t *testing.T) {
	store := newFakeStore()
	const size = 2*testChunk + 100
	data := store.add("obj", size)
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 16 * testChunk, ReadAhead: -1})
	ctx := context.Background()

	if _, err := c.GetChunk(ctx, "obj", testChunk, testChunk); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetRange(ctx, "obj", size, testChunk+10, 20)
	if err != nil || !bytes.Equal(got, data[testChunk+10:testChunk+30]) {
		t.Fatalf("GetRange after GetChunk: %v", err)
	}
	if _, err := c.GetRange(ctx, "obj", size, 0, 10); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetChunk(ctx, "obj", 0, testChunk)
	if err != nil || !bytes.Equal(got, data[:testChunk]) {
		t.Fatalf("GetChunk after GetRange: %v", err)
	}
	if _, err := c.GetChunk(ctx, "obj", 0, testChunk-1); !errors.Is(err, ErrNotChunk) {
		t.Fatalf("GetChunk of a resident chunk with another length: err = %v", err)
	}
	if s := c.Stats(); s.Gets != 2 || s.Hits != 3 {
		t.Fatalf("Gets = %d, Hits = %d; want 2 and 3", s.Gets, s.Hits)
	}
}

// TestGetChunkJoinsLoad: concurrent GetChunk and GetRange misses of one
// chunk share one GET.
func TestGetChunkJoinsLoad(t *testing.T) {
	store := newFakeStore()
	data := store.add("obj", 2*testChunk)
	store.gate = make(chan struct{})
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 8 * testChunk, ReadAhead: -1})

	const readers = 16
	var wg sync.WaitGroup
	errs := make(chan error, readers+1)
	for i := range readers {
		wg.Go(func() {
			got, err := c.GetChunk(context.Background(), "obj", testChunk, testChunk)
			if err == nil && !bytes.Equal(got, data[testChunk:]) {
				err = fmt.Errorf("reader %d: wrong bytes", i)
			}
			errs <- err
		})
	}
	wg.Go(func() {
		got, err := c.GetRange(context.Background(), "obj", 2*testChunk, testChunk+5, 5)
		if err == nil && !bytes.Equal(got, data[testChunk+5:testChunk+10]) {
			err = errors.New("GetRange: wrong bytes")
		}
		errs <- err
	})
	testkit.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		if m := c.Stats().Misses; m != readers+1 {
			return fmt.Errorf("%d readers waiting", m)
		}
		return nil
	})
	// A reader asking for another length while the load runs is refused.
	if _, err := c.GetChunk(context.Background(), "obj", testChunk, 10); !errors.Is(err, ErrNotChunk) {
		t.Fatalf("GetChunk with another length during the load: err = %v", err)
	}
	close(store.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := store.total.Load(); n != 1 {
		t.Fatalf("%d GETs for one chunk, want 1", n)
	}
}

func TestGetChunkClosed(t *testing.T) {
	store := newFakeStore()
	store.add("obj", testChunk)
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 8 * testChunk})
	c.Close()
	if _, err := c.GetChunk(context.Background(), "obj", 0, testChunk); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}
