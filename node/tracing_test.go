package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/tracing"
)

// spanTree finds spans by name among the exported ones.
type spanTree []sdktrace.ReadOnlySpan

func (st spanTree) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range st {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// children are the spans whose parent is s.
func (st spanTree) children(s sdktrace.ReadOnlySpan) map[string]sdktrace.ReadOnlySpan {
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, c := range st {
		if c.Parent().SpanID() == s.SpanContext().SpanID() && c.Parent().TraceID() == s.SpanContext().TraceID() {
			out[c.Name()] = c
		}
	}
	return out
}

func linked(s sdktrace.ReadOnlySpan, to trace.SpanContext) bool {
	for _, l := range s.Links() {
		if l.SpanContext.SpanID() == to.SpanID() && l.SpanContext.TraceID() == to.TraceID() {
			return true
		}
	}
	return false
}

// TestTracing produces through one traced node and fetches through
// another (sharing its coordinator and store, so that the fetch asks the
// coordinator and misses the chunk cache), and checks the span trees:
// a produce's request, append, wait and answer, its object's upload and
// commit linked both ways; a fetch's lookup, read and GET; a produce whose
// record carries a traceparent header joins that trace.
func TestTracing(t *testing.T) {
	store := objectstore.NewMemory()
	exp1, exp2 := tracetest.NewInMemoryExporter(), tracetest.NewInMemoryExporter()
	n1 := floetest.StartNode(t, node.Config{Store: store, NATSListen: "127.0.0.1:0", Cluster: "tracetest",
		Tracing: tracing.Options{Exporter: exp1, SampleRatio: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := pinned(t, n1.KafkaAddr(), kgo.DefaultProduceTopic("traced"))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "traced"); err != nil {
		t.Fatal(err)
	}

	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
	)
	for _, tc := range []struct {
		name        string
		traceparent string
	}{
		{name: "new trace"},
		{name: "traceparent header", traceparent: "00-" + traceID + "-" + spanID + "-01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp1.Reset()
			rec := &kgo.Record{Value: []byte("v")}
			if tc.traceparent != "" {
				rec.Headers = []kgo.RecordHeader{{Key: "traceparent", Value: []byte(tc.traceparent)}}
			}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
			var (
				st      spanTree
				produce sdktrace.ReadOnlySpan
			)
			testkit.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
				st = exp1.GetSpans().Snapshots()
				ps := st.named("kafka.produce")
				if len(ps) != 1 || len(st.named("ingest.object")) != 1 {
					return fmt.Errorf("%d produce spans, %d object spans", len(ps), len(st.named("ingest.object")))
				}
				produce = ps[0]
				return nil
			})
			kids := st.children(produce)
			for _, name := range []string{"ingest.append", "ingest.wait", "kafka.answer"} {
				if kids[name] == nil {
					t.Errorf("kafka.produce has no %s child: %v", name, kids)
				}
			}
			obj := st.named("ingest.object")[0]
			okids := st.children(obj)
			for _, name := range []string{"objectstore.put", "coordinator.commit"} {
				if okids[name] == nil {
					t.Errorf("ingest.object has no %s child: %v", name, okids)
				}
			}
			if obj.Parent().IsValid() {
				t.Errorf("ingest.object has a parent %v: want a root", obj.Parent())
			}
			if !linked(obj, produce.SpanContext()) {
				t.Errorf("ingest.object links %v, not the produce span", obj.Links())
			}
			if w := kids["ingest.wait"]; w != nil && !linked(w, obj.SpanContext()) {
				t.Errorf("ingest.wait links %v, not the object span", w.Links())
			}
			if tc.traceparent != "" {
				if got := produce.SpanContext().TraceID().String(); got != traceID {
					t.Errorf("produce trace %s, want %s", got, traceID)
				}
				if got := produce.Parent().SpanID().String(); got != spanID || !produce.Parent().IsRemote() {
					t.Errorf("produce parent %s (remote %v), want %s", got, produce.Parent().IsRemote(), spanID)
				}
			} else if produce.Parent().IsValid() {
				t.Errorf("produce has a parent %v", produce.Parent())
			}
		})
	}

	t.Run("fetch", func(t *testing.T) {
		n2 := floetest.StartNode(t, node.Config{Store: store, NATSURL: n1.NATSURL(), Cluster: "tracetest",
			Tracing: tracing.Options{Exporter: exp2, SampleRatio: 1}, Broker: broker.Options{NodeID: 2}})
		consumer := pinned(t, n2.KafkaAddr(), kgo.ConsumeTopics("traced"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(100*time.Millisecond))
		got := 0
		for got < 2 {
			fs := consumer.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatal(err)
			}
			got += fs.NumRecords()
		}
		var st spanTree
		testkit.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
			st = exp2.GetSpans().Snapshots()
			for _, f := range st.named("kafka.fetch") {
				kids := st.children(f)
				read := kids["fetch.read"]
				if kids["coordinator.find_batches"] == nil || read == nil || kids["kafka.answer"] == nil {
					continue
				}
				if st.children(read)["cache.load"] == nil {
					return fmt.Errorf("fetch.read has no cache.load child: %v", st.children(read))
				}
				return nil
			}
			return fmt.Errorf("no kafka.fetch span with find_batches, read and answer among %d spans", len(st))
		})
	})
}
