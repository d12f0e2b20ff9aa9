package s3latency

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		header         map[string]string
		body           string
		op             Op
		size           int64
	}{
		{"GET", "/bucket/p/wal/0190", nil, "", OpGet, -1},
		{"GET", "/bucket?list-type=2&prefix=p%2Fwal%2F", nil, "", OpList, -1},
		{"GET", "/bucket/", nil, "", OpList, -1},
		{"GET", "/bucket/p/seg?uploadId=abc", nil, "", OpList, -1},
		{"PUT", "/bucket/p/wal/0190", nil, "12345", OpPut, 5},
		{"PUT", "/bucket/p/wal/0190", map[string]string{"X-Amz-Decoded-Content-Length": "3"}, "chunked-body", OpPut, 3},
		{"PUT", "/bucket/p/seg?partNumber=2&uploadId=abc", nil, "xy", OpPart, 2},
		{"PUT", "/bucket", nil, "", OpOther, 0},
		{"POST", "/bucket/p/seg?uploads", nil, "", OpMultipart, -1},
		{"POST", "/bucket/p/seg?uploadId=abc", nil, "<x/>", OpMultipart, -1},
		{"POST", "/bucket?delete", nil, "<Delete/>", OpDelete, -1},
		{"DELETE", "/bucket/p/seg?uploadId=abc", nil, "", OpMultipart, -1},
		{"DELETE", "/bucket/p/wal/0190", nil, "", OpDelete, -1},
		{"HEAD", "/bucket/p/wal/0190", nil, "", OpHead, -1},
		{"HEAD", "/bucket", nil, "", OpHead, -1},
	} {
		r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		if tc.body == "" {
			r.ContentLength = 0
		}
		op, size := Classify(r)
		if op != tc.op || size != tc.size {
			t.Errorf("%s %s: %v/%d, want %v/%d", tc.method, tc.target, op, size, tc.op, tc.size)
		}
	}
}

func TestPrefixOf(t *testing.T) {
	for in, want := range map[string]string{"/b/p/wal/x": "/b/p/wal", "/b": "", "x": ""} {
		if got := prefixOf(in); got != want {
			t.Errorf("prefixOf(%q) = %q, want %q", in, got, want)
		}
	}
}
