package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/testkit"
)

// panickyCoordinator panics when asked to create topic "boom".
type panickyCoordinator struct {
	coordapi.Coordinator
	panics atomic.Int32
}

func (c *panickyCoordinator) CreateTopic(ctx context.Context, req coordapi.CreateTopicRequest) (coordapi.Topic, error) {
	if req.Name == "boom" {
		c.panics.Add(1)
		panic("boom")
	}
	return c.Coordinator.CreateTopic(ctx, req)
}

// TestHandlerPanicClosesConnection checks what a handler's panic does: its
// connection closes without an answer, as after a handler's error, and the
// broker goes on serving, the next connection answered.
func TestHandlerPanicClosesConnection(t *testing.T) {
	coord := &panickyCoordinator{Coordinator: newTestCoordinator(t)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := newTestBroker(t, Deps{Coordinator: coord}, func(o *Options) {
		o.AdvertisedAddr = ln.Addr().String()
		o.Logger = testkit.Logger()
	})
	go func() { _ = b.Serve(ln) }()

	create := func(name string) (*kmsg.CreateTopicsResponse, error) {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(4)
		req.TimeoutMillis = 5000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, -1
		req.Topics = append(req.Topics, rt)
		if _, err := nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("panic-test")).AppendRequest(nil, req, 7)); err != nil {
			t.Fatal(err)
		}
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return nil, err
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(nc, frame); err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.SetVersion(4)
		if err := resp.ReadFrom(frame[4:]); err != nil { // after the correlation id
			t.Fatal(err)
		}
		return resp, nil
	}

	if resp, err := create("boom"); !errors.Is(err, io.EOF) {
		t.Fatalf("a panicking handler answered %+v, %v: want its connection closed (EOF)", resp, err)
	}
	if n := coord.panics.Load(); n != 1 {
		t.Fatalf("the coordinator panicked %d times, want 1", n)
	}
	resp, err := create("fine")
	if err != nil {
		t.Fatalf("after a handler's panic the broker does not answer: %v", err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics after the panic: %+v", resp.Topics)
	}
}
