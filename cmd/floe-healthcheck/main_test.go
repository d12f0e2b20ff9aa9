package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestCandidates(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{nil, nil, []string{"http://127.0.0.1:8080/healthz", "http://127.0.0.1:8090/healthz"}},
		{[]string{"http://x:1/healthz"}, map[string]string{"FLOE_HEALTHCHECK_URL": "http://y"}, []string{"http://x:1/healthz"}},
		{nil, map[string]string{"FLOE_HEALTHCHECK_URL": "http://y/healthz"}, []string{"http://y/healthz"}},
		{nil, map[string]string{"FLOE_HTTP_ADDR": "0.0.0.0:8091"}, []string{"http://127.0.0.1:8091/healthz"}},
		{nil, map[string]string{"FLOE_HTTP_ADDR": ":8443", "FLOE_TLS_CERT": "/c.pem"}, []string{"https://127.0.0.1:8443/healthz"}},
	} {
		if got := candidates(c.args, env(c.env)); !slices.Equal(got, c.want) {
			t.Errorf("candidates(%v, %v) = %v, want %v", c.args, c.env, got, c.want)
		}
	}
}

func TestRun(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		io.WriteString(w, "standby leader=c-1")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	e := env(map[string]string{"FLOE_HTTP_ADDR": "0.0.0.0:" + port})
	var out strings.Builder
	if code := run(nil, e, &out); code != 0 {
		t.Fatalf("healthy server: exit %d (%s)", code, out.String())
	}
	status = http.StatusServiceUnavailable
	if code := run(nil, e, &out); code != 1 || !strings.Contains(out.String(), "503") {
		t.Fatalf("503: exit %d, %q", code, out.String())
	}
	srv.Close()
	if code := run([]string{srv.URL + "/healthz"}, e, &out); code != 1 {
		t.Fatalf("nothing listening: exit %d", code)
	}
	if code := run([]string{"a", "b"}, e, &out); code != 2 {
		t.Fatalf("two URLs: exit %d, want 2", code)
	}
}
