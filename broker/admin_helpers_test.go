package broker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// newAdminBroker returns a Broker on coord that serves no listener:
// handler tests call serveVersion.
func newAdminBroker(t *testing.T, coord Coordinator, mods ...func(*Options)) *Broker {
	t.Helper()
	opts := Options{NodeID: 1, AdvertisedAddr: "127.0.0.1:9092", ClusterID: "floe-test", DefaultPartitions: 4}
	for _, m := range mods {
		m(&opts)
	}
	b := New(opts, coord, nil, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b.Close(ctx)
	})
	return b
}

// serveVersion sends req at version through the broker's own request
// decoding (a full frame, header included, through parseRequest), calls the
// registered handler, and returns its response as the client would read it:
// encoded at version, decoded back, and re-encoded to the same bytes. So a
// test checks only what the wire carries at that version.
func serveVersion[R kmsg.Response](t *testing.T, b *Broker, req kmsg.Request, version int16) R {
	t.Helper()
	req.SetVersion(version)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("admin-test")).AppendRequest(nil, req, 42)
	r, a, err := parseRequest(frame[4:])
	if err != nil {
		t.Fatalf("%s v%d: parse request: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	if a.fn == nil {
		t.Fatalf("%s: not a plain handler", kmsg.NameForKey(req.Key()))
	}
	resp, err := a.fn(b, context.Background(), r)
	if err != nil {
		t.Fatalf("%s v%d: handler error (closes the connection): %v", kmsg.NameForKey(req.Key()), version, err)
	}
	if resp == nil {
		t.Fatalf("%s v%d: no response", kmsg.NameForKey(req.Key()), version)
	}
	resp.SetVersion(version)
	wire := resp.AppendTo(nil)
	got := kmsg.ResponseForKey(req.Key())
	got.SetVersion(version)
	if err := got.ReadFrom(wire); err != nil {
		t.Fatalf("%s v%d: decode response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	if again := got.AppendTo(nil); !bytes.Equal(again, wire) {
		t.Fatalf("%s v%d: response does not round-trip:\n%x\n%x", kmsg.NameForKey(req.Key()), version, wire, again)
	}
	return got.(R)
}

// servedVersions returns every version the broker serves of key.
func servedVersions(t *testing.T, key kmsg.Key) []int16 {
	t.Helper()
	a := lookupAPI(int16(key))
	if a == nil {
		t.Fatalf("%s is not served", kmsg.NameForKey(int16(key)))
	}
	var out []int16
	for v := a.min; v <= a.max; v++ {
		out = append(out, v)
	}
	return out
}

// showStr prints a nullable string in failure messages.
func showStr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
