package objectstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/floe-io/floe/objectstore"
)

func TestS3OptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts objectstore.S3Options
		want []string // substrings of the error; none means valid
	}{
		{"minimal", objectstore.S3Options{Bucket: "b"}, nil},
		{"minio", objectstore.S3Options{Bucket: "b", Endpoint: "http://127.0.0.1:9000", PathStyle: true, AccessKey: "a", SecretKey: "s"}, nil},
		{"no bucket", objectstore.S3Options{}, []string{"bucket is required"}},
		{"endpoint without scheme", objectstore.S3Options{Bucket: "b", Endpoint: "127.0.0.1:9000"}, []string{"http:// or https://"}},
		{"half credentials", objectstore.S3Options{Bucket: "b", AccessKey: "a"}, []string{"together"}},
		{"everything wrong", objectstore.S3Options{Endpoint: "ftp://x", SecretKey: "s", SessionToken: "t"},
			[]string{"bucket is required", "http:// or https://", "together", "session token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, missing %q", err, w)
				}
			}
			if _, nerr := objectstore.NewS3(context.Background(), tc.opts); nerr == nil {
				t.Errorf("NewS3 accepted options Validate rejects")
			}
		})
	}
}

// Put makes one attempt: its caller (ingest) owns upload retries, so a
// failing S3 sees one PUT per attempt of the caller, not three. Reads keep
// the SDK's retries.
func TestS3PutIsNotRetriedBySDK(t *testing.T) {
	var puts, gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			puts.Add(1)
		case http.MethodGet:
			gets.Add(1)
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>busy</Message></Error>`)
	}))
	defer srv.Close()
	s, err := objectstore.NewS3(t.Context(), objectstore.S3Options{Bucket: "b", Endpoint: srv.URL, PathStyle: true, AccessKey: "k", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "wal/x", []byte("data")); err == nil {
		t.Fatal("put to a failing S3 succeeded")
	}
	if n := puts.Load(); n != 1 {
		t.Errorf("one Put made %d PUT requests, want 1", n)
	}
	if _, err := s.GetRange(t.Context(), "wal/x", 0, 4); err == nil {
		t.Fatal("get from a failing S3 succeeded")
	}
	if n := gets.Load(); n < 2 {
		t.Errorf("one GetRange made %d GET requests, want the SDK's retries (>1)", n)
	}
}
