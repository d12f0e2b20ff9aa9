package node

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/floe-io/floe/kvindex"
)

// fakeKV is a kvindex.Service whose steps do nothing.
type fakeKV struct{ kvindex.Service }

func (fakeKV) Topic(context.Context, string) (kvindex.TopicInfo, error) {
	return kvindex.TopicInfo{}, nil
}

func (fakeKV) Lookup(context.Context, [16]byte, int32, []byte) (kvindex.LookupResult, error) {
	return kvindex.LookupResult{}, nil
}

// TestKVTracing: GET /kv is a server span, a child of the request's
// traceparent header, with its lookup steps as children.
func TestKVTracing(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("test")
	svc := tracedKV{fakeKV{}, tr}
	h := tracedHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		svc.Topic(r.Context(), "t")
		svc.Lookup(r.Context(), [16]byte{}, 0, []byte("k"))
		w.WriteHeader(http.StatusNotFound)
	}), tr, "GET /kv")
	req := httptest.NewRequest("GET", "/kv/t/k", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), req)

	spans := spanTreeOf(exp.GetSpans().Snapshots())
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	server := spans["GET /kv"]
	if server == nil || server.Parent().SpanID().String() != "00f067aa0ba902b7" || server.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("server span %v", server)
	}
	for _, name := range []string{"kv.topic", "kv.lookup"} {
		if s := spans[name]; s == nil || s.Parent().SpanID() != server.SpanContext().SpanID() {
			t.Errorf("%s: %v, want a child of GET /kv", name, s)
		}
	}
	found := false
	for _, a := range server.Attributes() {
		if a.Key == "http.response.status_code" && a.Value.AsInt64() == 404 {
			found = true
		}
	}
	if !found {
		t.Errorf("server span attributes %v: no status 404", server.Attributes())
	}
}

func spanTreeOf(spans []sdktrace.ReadOnlySpan) map[string]sdktrace.ReadOnlySpan {
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		out[s.Name()] = s
	}
	return out
}
