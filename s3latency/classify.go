package s3latency

import (
	"net/http"
	"strconv"
	"strings"
)

// Op is the kind of an S3 request, which picks its latency.
type Op int

// The operations the proxy tells apart.
const (
	OpOther     Op = iota // bucket calls and anything unrecognised: like a HEAD
	OpGet                 // GetObject, ranged or not
	OpPut                 // PutObject
	OpPart                // UploadPart
	OpMultipart           // CreateMultipartUpload, CompleteMultipartUpload, AbortMultipartUpload
	OpHead                // HeadObject, HeadBucket
	OpDelete              // DeleteObject, DeleteObjects
	OpList                // ListObjects(V2), ListMultipartUploads, ListParts
	numOps
)

var opNames = [numOps]string{"other", "get", "put", "part", "multipart", "head", "delete", "list"}

// String returns the operation's name, as the proxy's stats use it.
func (o Op) String() string {
	if o < 0 || o >= numOps {
		return "op(" + strconv.Itoa(int(o)) + ")"
	}
	return opNames[o]
}

// Classify names the operation of r and the bytes it sends (for a PUT or
// an upload part; -1 when unknown). It reads only the method, the path and
// the query, so that it works for path-style and virtual-hosted requests.
func Classify(r *http.Request) (Op, int64) {
	q := r.URL.Query()
	objectPath := objectKey(r.URL.Path) != ""
	switch r.Method {
	case http.MethodGet:
		switch {
		case q.Has("uploadId"), q.Has("uploads"), q.Has("list-type"), q.Has("prefix"), q.Has("delimiter"), !objectPath:
			return OpList, -1
		}
		return OpGet, -1
	case http.MethodPut:
		size := putSize(r)
		switch {
		case q.Has("partNumber") && q.Has("uploadId"):
			return OpPart, size
		case !objectPath:
			return OpOther, size // CreateBucket and bucket settings
		}
		return OpPut, size
	case http.MethodPost:
		switch {
		case q.Has("uploads"), q.Has("uploadId"):
			return OpMultipart, -1
		case q.Has("delete"):
			return OpDelete, -1
		}
		return OpOther, -1
	case http.MethodHead:
		return OpHead, -1
	case http.MethodDelete:
		if q.Has("uploadId") {
			return OpMultipart, -1
		}
		return OpDelete, -1
	}
	return OpOther, -1
}

// putSize returns the bytes of a PUT's object: the decoded length of an
// aws-chunked body, else its Content-Length.
func putSize(r *http.Request) int64 {
	if v := r.Header.Get("X-Amz-Decoded-Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return r.ContentLength
}

// objectKey returns what follows the first path segment (the bucket, in
// path style); empty for a bucket-level path. With virtual-hosted requests
// the first segment is the key's own first one, so a key of one segment
// looks like a bucket: floe's keys always have several.
func objectKey(path string) string {
	path = strings.TrimPrefix(path, "/")
	_, key, _ := strings.Cut(path, "/")
	return key
}

// prefixOf returns the S3 prefix a request's key belongs to for
// throttling: its path up to the last '/'.
func prefixOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return ""
}
