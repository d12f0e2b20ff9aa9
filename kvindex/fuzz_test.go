package kvindex

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/floe-io/floe/internal/testkit"
)

var fuzzSeeds = []string{
	"/kv/kv/a", "/kv/kv/a?partition=1", "/kv/kv/eC95?key_encoding=base64url",
	"/kv/kv/eC95==?key_encoding=base64url&partition=2", "/kv/kv/x%2Fy", "/kv/kv/%FF%00",
	"/kv/kv/", "/kv//a", "/kv/kv/a/b", "/kv/kv/a?partition=-1", "/kv/kv/a?partition=%31",
	"/kv/kv/a?key_encoding=hex", "/kv/kv/a+b%20c?x=%zz", "/kv/t%2Fx/k", "/kv/kv/a?partition=2147483648",
	"/kv/kv/YQ=?key_encoding=base64url", "/kv/kv/a?key_encoding=base64url&key_encoding=hex",
}

// FuzzParseRequest feeds arbitrary request targets to the path and query parser: it
// must not panic, must accept only non-empty topics and keys, and what it accepts must
// survive being encoded back into a target, raw or base64url, with its partition.
func FuzzParseRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		req, e := parseRequest(u.Path, u.RawPath, u.RawQuery)
		if e != nil {
			if e.status != http.StatusBadRequest {
				t.Fatalf("%q: parse error with status %d", target, e.status)
			}
			return
		}
		if req.topic == "" || len(req.key) == 0 || req.partition < -1 {
			t.Fatalf("%q: accepted %+v", target, req)
		}
		query := ""
		if req.partition >= 0 {
			query = "partition=" + strconv.Itoa(int(req.partition))
		}
		for _, enc := range []string{"raw", "base64url"} {
			again := "/kv/" + url.PathEscape(req.topic) + "/"
			q := query
			if enc == "raw" {
				again += url.PathEscape(string(req.key))
			} else {
				again += base64.RawURLEncoding.EncodeToString(req.key)
				if q != "" {
					q += "&"
				}
				q += "key_encoding=base64url"
			}
			if q != "" {
				again += "?" + q
			}
			u2, err := url.ParseRequestURI(again)
			if err != nil {
				t.Fatalf("%q: re-encoded as %q: %v", target, again, err)
			}
			req2, e2 := parseRequest(u2.Path, u2.RawPath, u2.RawQuery)
			if e2 != nil {
				t.Fatalf("%q: re-encoded as %q: %s", target, again, e2.msg)
			}
			if req2.topic != req.topic || !bytes.Equal(req2.key, req.key) || req2.partition != req.partition {
				t.Fatalf("%q: re-encoded as %q parses to %+v, want %+v", target, again, req2, req)
			}
		}
	})
}

// FuzzHandler serves arbitrary targets from the test fixture: no panic, no 500, and
// every error body is the documented JSON.
func FuzzHandler(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	fx := newFixture(f)
	h := NewHandler(fx.log, HandlerOptions{Logger: testkit.Logger()})
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.URL = u
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusOK:
			return
		case http.StatusBadRequest, http.StatusNotFound, http.StatusServiceUnavailable:
		default:
			t.Fatalf("%q: status %d: %s", target, w.Code, w.Body)
		}
		var eb ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil || eb.ErrorCode/100 != w.Code || eb.Message == "" {
			t.Fatalf("%q: error body %q (%v)", target, w.Body, err)
		}
	})
}
