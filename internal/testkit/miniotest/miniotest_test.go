package miniotest

import (
	"context"
	"net/http"
	"testing"
)

func TestStart(t *testing.T) {
	srv := Start(t)
	ctx := context.Background()
	store := srv.Store(t)
	if err := store.Put(ctx, "hello/world", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	got, err := store.GetRange(ctx, "hello/world", 0, -1)
	if err != nil || string(got) != "hi" {
		t.Fatalf("GetRange = %q, %v", got, err)
	}
	// EnsureBucket on an existing bucket is a no-op.
	if err := store.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	srv.Stop() // idempotent
	if resp, err := http.Get(srv.Endpoint + "/minio/health/live"); err == nil {
		resp.Body.Close()
		t.Fatalf("minio still answers after Stop: %s", resp.Status)
	}
}

func TestLookupBinaryExplicitMissing(t *testing.T) {
	t.Setenv("FLOE_MINIO_BIN", "/nonexistent/minio")
	if _, err := lookupBinary(); err == nil {
		t.Fatal("lookupBinary accepted a missing FLOE_MINIO_BIN")
	}
}
