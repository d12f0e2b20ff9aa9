package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/groups"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
)

// aclAdmin is the super user of the ACL tests' brokers.
const aclAdmin = "admin"

// principalByClientID is the tests' stand-in for authentication: a client
// whose client.id is "as-NAME" is the principal User:NAME, any other
// User:ANONYMOUS.
func principalByClientID(id string) string {
	if name, ok := strings.CutPrefix(id, "as-"); ok {
		return "User:" + name
	}
	return AnonymousPrincipal
}

// aclEnv is a broker with ACLs on, serving real Kafka clients over TCP on
// 127.0.0.1 with a real coordinator, group coordinator, ingest and object
// store, all in memory.
type aclEnv struct {
	t     *testing.T
	coord *coordinator.Coordinator
	store objectstore.Store
	g     *groups.Groups
	b     *Broker
	addr  string
}

func newACLEnv(t *testing.T, mods ...func(*Options)) *aclEnv {
	t.Helper()
	e := &aclEnv{t: t, coord: newTestCoordinator(t), store: objectstore.NewMemory()}
	e.g = newTestGroups(t, e.coord)
	e.b, e.addr = e.startBroker(1, e.coord, mods...)
	return e
}

// startBroker starts another broker on coord (the env's, or a wrapper of
// it), serving on a free port until the test ends.
func (e *aclEnv) startBroker(nodeID int32, coord coordapi.Coordinator, mods ...func(*Options)) (*Broker, string) {
	t := e.t
	t.Helper()
	in, err := ingest.New(ingest.Options{Linger: 5 * time.Millisecond, BrokerID: nodeID, Logger: testkit.Logger()}, e.store, coord, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = in.Close(ctx)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := newTestBroker(t, Deps{Coordinator: coord, Groups: groups.Direct(e.g), Appender: in, Reader: storeReader{e.store}}, func(o *Options) {
		o.NodeID = nodeID
		o.AdvertisedAddr = ln.Addr().String()
		o.ACLsEnabled = true
		o.SuperUsers = []string{"User:" + aclAdmin}
		o.ACLRefreshInterval = 50 * time.Millisecond
		o.Logger = testkit.Logger()
		for _, m := range mods {
			m(o)
		}
	})
	b.testPrincipal = principalByClientID
	go func() { _ = b.Serve(ln) }()
	return b, ln.Addr().String()
}

// client returns a client of the env's broker that authenticates (in the
// tests' way) as User:name, closed when the test ends.
func (e *aclEnv) client(name string, opts ...kgo.Opt) *kgo.Client {
	return e.clientOf(e.addr, name, opts...)
}

func (e *aclEnv) clientOf(addr, name string, opts ...kgo.Opt) *kgo.Client {
	e.t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("as-" + name), kgo.RetryTimeout(5 * time.Second)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return cl
}

// admin returns a kadm client of the super user.
func (e *aclEnv) admin() *kadm.Client { return kadm.NewClient(e.client(aclAdmin)) }

// waitACLs waits until broker b authorizes with the coordinator's current
// ACL version.
func (e *aclEnv) waitACLs(b *Broker) {
	e.t.Helper()
	testkit.CheckFor(e.t, 10*time.Second, 5*time.Millisecond, func() error {
		want, err := e.coord.ACLVersion(context.Background())
		if err != nil {
			return err
		}
		if got, loaded := b.aclState(); !loaded || got != want {
			return fmt.Errorf("broker %d authorizes with acl version %d (loaded %v), the coordinator has %d", b.opts.NodeID, got, loaded, want)
		}
		return nil
	})
}

// grant creates the ACLs of builder as the super user and waits until the
// env's broker applies them.
func (e *aclEnv) grant(builder *kadm.ACLBuilder) {
	e.t.Helper()
	results, err := e.admin().CreateACLs(e.t.Context(), builder)
	if err != nil {
		e.t.Fatalf("create acls: %v", err)
	}
	for _, r := range results {
		if r.Err != nil {
			e.t.Fatalf("create acl %+v: %v", r, r.Err)
		}
	}
	e.waitACLs(e.b)
}

// revoke deletes the ACLs builder matches, as the super user.
func (e *aclEnv) revoke(builder *kadm.ACLBuilder) {
	e.t.Helper()
	results, err := e.admin().DeleteACLs(e.t.Context(), builder)
	if err != nil {
		e.t.Fatalf("delete acls: %v", err)
	}
	for _, r := range results {
		if r.Err != nil {
			e.t.Fatalf("delete acls %+v: %v", r, r.Err)
		}
	}
	e.waitACLs(e.b)
}

// topic creates a topic as the super user.
func (e *aclEnv) topic(name string, partitions int32, configs map[string]*string) {
	e.t.Helper()
	resp, err := e.admin().CreateTopic(e.t.Context(), partitions, -1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		e.t.Fatalf("create topic %s: %v", name, err)
	}
}

// send sends req with cl straight to the seed broker (no coordinator
// lookup or retries by the client) and returns its response, failing the
// test if the request got none.
func send[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.SeedBrokers()[0].Request(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// wantCode fails unless code is want's.
func wantCode(t *testing.T, what string, code int16, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if code != 0 {
			t.Fatalf("%s: %v, want no error", what, kerr.ErrorForCode(code))
		}
		return
	}
	if code != want.Code {
		t.Fatalf("%s: error code %d (%v), want %s", what, code, kerr.ErrorForCode(code), want.Message)
	}
}

// wantErr fails unless err wraps want.
func wantErr(t *testing.T, what string, err error, want *kerr.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %s", what, err, want.Message)
	}
}

// produceOne produces one record to topic with cl, returning its error.
func produceOne(t *testing.T, cl *kgo.Client, topic, value string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

// fetchCode fetches partition 0 of topic from offset 0 as User:name (Fetch
// v12, by name) and returns the partition's error code.
func (e *aclEnv) fetchCode(name, topic string) int16 {
	t := e.t
	t.Helper()
	cl := e.client(name, kgo.MaxVersions(kversion.V3_0_0()))
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12 // by name
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 1<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := send[*kmsg.FetchResponse](t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch %s: %+v", topic, resp)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// errorsIs is errors.Is for table checks.
func errorsIs(err, target error) bool { return errors.Is(err, target) }

// orFirst returns err, or else the result's error: kadm answers a single
// resource's failure either way.
func orFirst(err error, result func() error) error {
	if err != nil {
		return err
	}
	return result()
}
