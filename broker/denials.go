package broker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// denials counts and logs denied authorization checks. Every denial is
// counted and logged at Debug; one of each (principal, operation,
// resource) at most once a minute at Info, so that a denied client that
// retries cannot flood the log.
type denials struct {
	log *slog.Logger
	m   *brokerMetrics
	mu  struct {
		sync.Mutex
		logged map[denialKey]time.Time
	}
}

type denialKey struct {
	principal, name string
	op              int8
	rt              int8
}

// denialLogEvery is how often one kind of denial is logged at Info.
const denialLogEvery = time.Minute

// maxDenialKeys bounds the denials remembered for rate limiting.
const maxDenialKeys = 4096

// apiKV is the api attribute of /kv's denials (AuthorizeTopic).
const apiKV int16 = -1

func newDenials(log *slog.Logger, m *brokerMetrics) *denials {
	d := &denials{log: log, m: m}
	d.mu.logged = make(map[denialKey]time.Time)
	return d
}

// denied counts and logs one denial of op on resource (rt, name) to
// principal from host, serving api (a Kafka API key, or apiKV).
func (d *denials) denied(api int16, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) {
	apiName := "kv"
	if api != apiKV {
		apiName = kmsg.NameForKey(api)
	}
	d.m.authDenied.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String("api", apiName), attribute.String("resource_type", rt.String())))
	attrs := []any{"principal", principal, "host", host, "api", apiName, "operation", op.String(),
		"resource_type", rt.String(), "resource", name}
	d.log.Debug("authorization denied", attrs...)
	k := denialKey{principal: principal, name: name, op: int8(op), rt: int8(rt)}
	now := time.Now()
	d.mu.Lock()
	last, seen := d.mu.logged[k]
	logIt := !seen || now.Sub(last) >= denialLogEvery
	if logIt {
		if len(d.mu.logged) >= maxDenialKeys {
			for k, at := range d.mu.logged {
				if now.Sub(at) >= denialLogEvery {
					delete(d.mu.logged, k)
				}
			}
			if len(d.mu.logged) >= maxDenialKeys {
				clear(d.mu.logged)
			}
		}
		d.mu.logged[k] = now
	}
	d.mu.Unlock()
	if logIt {
		d.log.Info("authorization denied (logged once a minute per principal, operation and resource)", attrs...)
	}
}
