package brokers

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// logged is a slog.Handler that records the messages of the log lines it handles.
type logged struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logged) Enabled(context.Context, slog.Level) bool { return true }
func (l *logged) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logged) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logged) WithGroup(string) slog.Handler      { return l }

// take returns the messages logged since the last take.
func (l *logged) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.msgs
	l.msgs = nil
	return m
}

// TestRegisterInvalid checks Register's refusals of a bad node id, host
// or port (INVALID_REQUEST), at their boundaries, and that a refused
// broker is not listed.
func TestRegisterInvalid(t *testing.T) {
	ok := coordapi.BrokerInfo{NodeID: 0, Host: "h", Port: 9092}
	with := func(f func(*coordapi.BrokerInfo)) coordapi.BrokerInfo { b := ok; f(&b); return b }
	invalid := kerr.InvalidRequest.Code
	for _, tc := range []struct {
		name string
		info coordapi.BrokerInfo
		want int16
	}{
		{"node id 0", ok, 0},
		{"port 1", with(func(b *coordapi.BrokerInfo) { b.Port = 1 }), 0},
		{"port 65535", with(func(b *coordapi.BrokerInfo) { b.Port = 65535 }), 0},
		{"negative node id", with(func(b *coordapi.BrokerInfo) { b.NodeID = -1 }), invalid},
		{"no host", with(func(b *coordapi.BrokerInfo) { b.Host = "" }), invalid},
		{"port 0", with(func(b *coordapi.BrokerInfo) { b.Port = 0 }), invalid},
		{"negative port", with(func(b *coordapi.BrokerInfo) { b.Port = -1 }), invalid},
		{"port 65536", with(func(b *coordapi.BrokerInfo) { b.Port = 65536 }), invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1000, 0)}
			r := New(time.Minute, clock.now, nil)
			err := r.Register(tc.info)
			if got := coordapi.ErrorCode(err); got != tc.want {
				t.Fatalf("Register(%+v): code %d (%v), want %d", tc.info, got, err, tc.want)
			}
			var want []coordapi.BrokerInfo
			if tc.want == 0 {
				want = []coordapi.BrokerInfo{tc.info}
			}
			if live := r.Live(); !slices.Equal(live, want) {
				t.Fatalf("Live = %+v, want %+v", live, want)
			}
		})
	}
}

// TestRegistry runs scripts of heartbeats, deregistrations and clock
// moves on a registry with a 10s TTL, checking after each step the
// error, the live brokers (node ids and hosts) and the lines logged.
func TestRegistry(t *testing.T) {
	const ttl = 10 * time.Second
	b := func(id int32, host string) coordapi.BrokerInfo {
		return coordapi.BrokerInfo{NodeID: id, Host: host, Port: 9092}
	}
	rack := func(info coordapi.BrokerInfo, r string) coordapi.BrokerInfo { info.Rack = r; return info }
	type step struct {
		advance time.Duration
		do      string // "reg", "dereg" or "" (only Live)
		info    coordapi.BrokerInfo
		code    int16
		live    []coordapi.BrokerInfo
		logs    []string
	}
	const (
		reg     = "broker registered"
		dereg   = "broker deregistered"
		expired = "broker expired"
	)
	dup := kerr.DuplicateBrokerRegistration.Code
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"empty", []step{{live: []coordapi.BrokerInfo{}}}},
		{"sorted by node id", []step{
			{do: "reg", info: b(3, "c"), live: []coordapi.BrokerInfo{b(3, "c")}, logs: []string{reg}},
			{do: "reg", info: b(1, "a"), live: []coordapi.BrokerInfo{b(1, "a"), b(3, "c")}, logs: []string{reg}},
			{do: "reg", info: b(2, "b"), live: []coordapi.BrokerInfo{b(1, "a"), b(2, "b"), b(3, "c")}, logs: []string{reg}},
		}},
		{"live until the TTL, not at it", []step{
			{do: "reg", info: b(1, "a"), live: []coordapi.BrokerInfo{b(1, "a")}, logs: []string{reg}},
			{advance: ttl - time.Nanosecond, live: []coordapi.BrokerInfo{b(1, "a")}},
			{advance: time.Nanosecond, live: []coordapi.BrokerInfo{}, logs: []string{expired}},
			{live: []coordapi.BrokerInfo{}},
		}},
		{"heartbeat renews, quietly", []step{
			{do: "reg", info: b(1, "a"), live: []coordapi.BrokerInfo{b(1, "a")}, logs: []string{reg}},
			{advance: 9 * time.Second, do: "reg", info: b(1, "a"), live: []coordapi.BrokerInfo{b(1, "a")}},
			{advance: 9 * time.Second, live: []coordapi.BrokerInfo{b(1, "a")}},
			{advance: time.Second, live: []coordapi.BrokerInfo{}, logs: []string{expired}},
		}},
		{"another address may not take a live node id", []step{
			{do: "reg", info: b(1, "a"), live: []coordapi.BrokerInfo{b(1, "a")}, logs: []string{reg}},
			{advance: ttl - time.Nanosecond, do: "reg", info: b(1, "x"), code: dup, live: []coordapi.BrokerInfo{b(1, "a")}},
		}},
		{"another address takes an expired node id", []step{
			{do: "reg", info: b(1, "a"), live: []coordapi.BrokerInfo{b(1, "a")}, logs: []string{reg}},
			{advance: ttl, do: "reg", info: b(1, "x"), live: []coordapi.BrokerInfo{b(1, "x")}, logs: []string{reg}},
		}},
		{"the same address, re-registered after expiry, logs again", []step{
			{do: "reg", info: b(1, "a"), live: []coordapi.BrokerInfo{b(1, "a")}, logs: []string{reg}},
			{advance: ttl, do: "reg", info: b(1, "a"), live: []coordapi.BrokerInfo{b(1, "a")}, logs: []string{reg}},
		}},
		{"another port is another address", []step{
			{do: "reg", info: b(1, "a"), live: []coordapi.BrokerInfo{b(1, "a")}, logs: []string{reg}},
			{do: "reg", info: coordapi.BrokerInfo{NodeID: 1, Host: "a", Port: 9093}, code: dup, live: []coordapi.BrokerInfo{b(1, "a")}},
		}},
		{"a restart at the same address replaces the rack", []step{
			{do: "reg", info: b(1, "a"), live: []coordapi.BrokerInfo{b(1, "a")}, logs: []string{reg}},
			{do: "reg", info: rack(b(1, "a"), "az1"), live: []coordapi.BrokerInfo{rack(b(1, "a"), "az1")}, logs: []string{reg}},
		}},
		{"deregister", []step{
			{do: "reg", info: b(1, "a"), logs: []string{reg}, live: []coordapi.BrokerInfo{b(1, "a")}},
			{do: "reg", info: b(2, "b"), logs: []string{reg}, live: []coordapi.BrokerInfo{b(1, "a"), b(2, "b")}},
			{do: "dereg", info: b(1, "a"), logs: []string{dereg}, live: []coordapi.BrokerInfo{b(2, "b")}},
			{do: "reg", info: b(1, "z"), logs: []string{reg}, live: []coordapi.BrokerInfo{b(1, "z"), b(2, "b")}},
		}},
		{"deregister from another address is a no-op", []step{
			{do: "reg", info: b(1, "a"), logs: []string{reg}, live: []coordapi.BrokerInfo{b(1, "a")}},
			{do: "dereg", info: b(1, "x"), live: []coordapi.BrokerInfo{b(1, "a")}},
			{do: "dereg", info: b(2, "a"), live: []coordapi.BrokerInfo{b(1, "a")}},
		}},
		{"deregister matches on the address only", []step{
			{do: "reg", info: rack(b(1, "a"), "az1"), logs: []string{reg}, live: []coordapi.BrokerInfo{rack(b(1, "a"), "az1")}},
			{do: "dereg", info: b(1, "a"), logs: []string{dereg}, live: []coordapi.BrokerInfo{}},
		}},
		{"deregister of an unknown broker", []step{
			{do: "dereg", info: b(7, "a"), live: []coordapi.BrokerInfo{}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			var lines logged
			r := New(ttl, clock.now, slog.New(&lines))
			for i, s := range tc.steps {
				clock.t = clock.t.Add(s.advance)
				var err error
				switch s.do {
				case "reg":
					err = r.Register(s.info)
				case "dereg":
					r.Deregister(s.info)
				}
				if got := coordapi.ErrorCode(err); got != s.code {
					t.Fatalf("step %d: %s %+v: code %d (%v), want %d", i, s.do, s.info, got, err, s.code)
				}
				if live := r.Live(); !slices.Equal(live, s.live) {
					t.Fatalf("step %d: Live = %+v, want %+v", i, live, s.live)
				}
				if got := lines.take(); !slices.Equal(got, s.logs) {
					t.Fatalf("step %d: logged %q, want %q", i, got, s.logs)
				}
			}
		})
	}
}
