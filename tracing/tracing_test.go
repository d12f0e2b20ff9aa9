package tracing

import (
	"context"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		ok   bool
	}{
		{Options{}, true},
		{Options{Endpoint: "collector:4318", SampleRatio: 1}, true},
		{Options{Endpoint: "http://collector:4318", SampleRatio: 0.1}, true},
		{Options{Endpoint: "https://otlp.example.com/custom/v1/traces", SampleRatio: 0}, true},
		{Options{Endpoint: "ftp://collector", SampleRatio: 1}, false},
		{Options{Endpoint: "http://", SampleRatio: 1}, false},
		{Options{Endpoint: "collector:4318", SampleRatio: 1.5}, false},
		{Options{SampleRatio: -0.1}, false},
	} {
		if err := tc.opts.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok=%v", tc.opts, err, tc.ok)
		}
	}
}

// TestOff: no endpoint, no provider, and a nil tracer that callers test.
func TestOff(t *testing.T) {
	p, err := New(context.Background(), Options{SampleRatio: 1})
	if err != nil || p != nil || p.Tracer("x") != nil || p.Shutdown(context.Background()) != nil {
		t.Fatalf("off: %v %v", p, err)
	}
	p, err = New(context.Background(), Options{Endpoint: "127.0.0.1:1", SampleRatio: 1})
	if err != nil || p.Tracer("x") == nil {
		t.Fatalf("on: %v %v", p, err)
	}
	// Nothing was exported: shutting down does not wait for the
	// unreachable collector.
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
