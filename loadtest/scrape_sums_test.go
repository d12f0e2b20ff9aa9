package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// ScrapeSums adds a metric's samples over their labels and leaves out
// names with none.
func TestScrapeSums(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# HELP a_bytes x\na_bytes{part=\"1\"} 10\na_bytes{part=\"2\"} 32\nb_total 7\nc 1\n")
	}))
	defer srv.Close()
	got, err := ScrapeSums(context.Background(), srv.Client(), srv.URL, "a_bytes", "b_total", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a_bytes"] != 42 || got["b_total"] != 7 {
		t.Fatalf("sums %v, want a_bytes 42 and b_total 7 only", got)
	}
}
