package objectstore_test

import (
	"context"
	"strings"
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
