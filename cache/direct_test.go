package cache

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// TestGetRangeDirect: a direct read GETs exactly its range and caches
// nothing; once the chunks are resident (loaded by GetRange) it reads
// them instead of the store.
func TestGetRangeDirect(t *testing.T) {
	store := newFakeStore()
	const size = 4*testChunk + 100
	data := store.add("obj", size)
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 64 * testChunk, ReadAhead: -1})
	ctx := context.Background()
	tests := []struct {
		name           string
		offset, length int64
		want           []byte // nil: data[offset:offset+length]
		gets           int64  // store GETs it adds
		err            error
	}{
		{name: "inside a chunk", offset: 100, length: 50, gets: 1},
		{name: "across chunks", offset: testChunk - 10, length: 30, gets: 1},
		{name: "to the end", offset: size - 10, length: -1, want: data[size-10:], gets: 1},
		{name: "zero length", offset: 5, length: 0, want: []byte{}},
		{name: "beyond the end", offset: size + 1, length: 1, err: ErrOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := c.Stats()
			got, err := c.GetRangeDirect(ctx, "obj", size, tt.offset, tt.length)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = data[tt.offset : tt.offset+tt.length]
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d", len(got), len(want))
			}
			after := c.Stats()
			if after.Gets-before.Gets != tt.gets || after.BytesLoaded-before.BytesLoaded != int64(len(want)) && tt.gets > 0 {
				t.Errorf("GETs +%d, bytes +%d; want +%d GETs of exactly %d bytes", after.Gets-before.Gets,
					after.BytesLoaded-before.BytesLoaded, tt.gets, len(want))
			}
			if after.Chunks != 0 {
				t.Errorf("%d chunks cached by direct reads", after.Chunks)
			}
		})
	}
	// Resident chunks serve a direct read, across two of them too.
	if _, err := c.GetRange(ctx, "obj", size, 0, 2*testChunk); err != nil {
		t.Fatal(err)
	}
	before := c.Stats()
	for _, r := range [][2]int64{{10, 20}, {testChunk - 5, 10}} {
		got, err := c.GetRangeDirect(ctx, "obj", size, r[0], r[1])
		if err != nil || !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
			t.Fatalf("resident read at %d: %v", r[0], err)
		}
	}
	if s := c.Stats(); s.Gets != before.Gets || s.Hits <= before.Hits {
		t.Errorf("resident direct reads: GETs %d -> %d, hits %d -> %d", before.Gets, s.Gets, before.Hits, s.Hits)
	}
	if s := c.Stats(); s.DirectReads != 3 {
		t.Errorf("DirectReads = %d, want 3", s.DirectReads)
	}
}
