package objectstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/floe-io/floe/internal/testkit/miniotest"
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

// TestS3PutChecksumGuardsBody checks what replaced the signed payload: a
// Put sends its body unsigned (no SHA-256 on either side) with a CRC32C the
// signature covers, so a body changed on its way is refused by the store,
// not kept. A proxy between the store and a real MinIO flips one byte.
func TestS3PutChecksumGuardsBody(t *testing.T) {
	m := miniotest.Start(t)
	target, err := url.Parse(m.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var flip atomic.Bool
	var sawUnsigned atomic.Bool
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // the signature covers Host
			if r.In.Method != http.MethodPut || r.In.Body == nil {
				return
			}
			if r.In.Header.Get("X-Amz-Content-Sha256") == "UNSIGNED-PAYLOAD" && r.In.Header.Get("X-Amz-Checksum-Crc32c") != "" {
				sawUnsigned.Store(true)
			}
			body, err := io.ReadAll(r.In.Body)
			if err != nil {
				t.Error(err)
			}
			if flip.Load() && len(body) > 0 {
				body[len(body)/2] ^= 0x40
			}
			r.Out.Body = io.NopCloser(bytes.NewReader(body))
		},
	})
	defer proxy.Close()
	opts := m.Options()
	opts.Endpoint = proxy.URL
	s, err := objectstore.NewS3(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("floe wal object "), 4096)
	if err := s.Put(t.Context(), "wal/intact", data); err != nil {
		t.Fatalf("put through an honest proxy: %v", err)
	}
	if !sawUnsigned.Load() {
		t.Error("the PUT did not go unsigned with a CRC32C header")
	}
	got, err := s.GetRange(t.Context(), "wal/intact", 0, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), want the %d put", len(got), err, len(data))
	}
	flip.Store(true)
	if err := s.Put(t.Context(), "wal/flipped", data); err == nil {
		t.Fatal("a PUT whose body changed on its way was accepted")
	}
	flip.Store(false)
	if _, err := s.GetRange(t.Context(), "wal/flipped", 0, 1); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("the refused object reads back: %v, want ErrNotFound", err)
	}
}
