package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/node"
)

// kvNode starts a node with the key index switched on, on dataDir.
func kvNode(t testing.TB, dataDir string) *node.Node {
	return floetest.StartNode(t, node.Config{DataDir: dataDir, Coordinator: coordinator.Options{KVIndexEnabled: true}})
}

type kvAnswer struct {
	status    int
	value     []byte
	partition int32
	offset    int64
	errorCode int
	message   string
}

func kvGet(t *testing.T, httpAddr, path string) kvAnswer {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	a := kvAnswer{status: resp.StatusCode}
	if resp.StatusCode == http.StatusOK {
		a.value = body
		p, _ := strconv.Atoi(resp.Header.Get("X-Kv-Partition"))
		a.partition = int32(p)
		a.offset, _ = strconv.ParseInt(resp.Header.Get("X-Kv-Offset"), 10, 64)
		if resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("X-Kv-Timestamp") == "" {
			t.Fatalf("GET %s: headers %v", path, resp.Header)
		}
		return a
	}
	var eb kvindex.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil {
		t.Fatalf("GET %s: %d with a body that is not the JSON error: %q", path, resp.StatusCode, body)
	}
	a.errorCode, a.message = eb.ErrorCode, eb.Message
	return a
}

func createKVTopic(t testing.TB, adm *kadm.Client, name string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(context.Background(), partitions, 1, map[string]*string{
		"cleanup.policy": ptr("compact"), "kv.index.enabled": ptr("true")}, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

func produceAll(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestKVLookups covers the key index RFC's cases through real clients: the
// latest value wins, tombstones and unknown keys 404, unindexed and unknown
// topics 404 with a body, every codec, null keys skipped, explicit
// partitions, base64url keys, bad requests, config validation, and the
// index surviving a restart.
func TestKVLookups(t *testing.T) {
	dataDir := t.TempDir()
	n := kvNode(t, dataDir)
	adm := newAdmin(t, n.KafkaAddr())
	ctx := context.Background()
	createKVTopic(t, adm, "kv", 3)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}

	for _, c := range codecs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ProducerBatchCompression(c.codec), kgo.DefaultProduceTopic("kv"))
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range 20 {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "%s-%d", c.name, i), Value: fmt.Appendf(nil, "old-%d", i)})
		}
		for i := range 20 {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "%s-%d", c.name, i), Value: fmt.Appendf(nil, "new-%s-%d", c.name, i)})
		}
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "%s-%d", c.name, 0)}) // tombstone
		produceAll(t, cl, recs...)
		cl.Close()
	}
	// Binary keys and keys with '/' only travel base64url-encoded; a
	// custom partitioner needs ?partition=.
	manual, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer manual.Close()
	binKey := []byte{0xff, 0x00, '/', 0xfe}
	produceAll(t, manual,
		&kgo.Record{Topic: "kv", Partition: kvindex.Partition(binKey, 3), Key: binKey, Value: []byte("binary")},
		&kgo.Record{Topic: "kv", Partition: 0, Key: []byte("placed"), Value: []byte("by hand")},
		&kgo.Record{Topic: "plain", Partition: 0, Key: []byte("k"), Value: []byte("v")},
	)
	b64 := base64.RawURLEncoding.EncodeToString(binKey)
	placedPartition := kvindex.Partition([]byte("placed"), 3)
	if placedPartition == 0 {
		t.Fatal("test key 'placed' hashes to the partition it was placed in; pick another key")
	}

	check := func(t *testing.T, httpAddr string) {
		for _, c := range codecs {
			for i := range 20 {
				path := fmt.Sprintf("/kv/kv/%s-%d", c.name, i)
				a := kvGet(t, httpAddr, path)
				if i == 0 {
					if a.status != 404 {
						t.Fatalf("%s (tombstoned): %d %q", path, a.status, a.value)
					}
					continue
				}
				if a.status != 200 || string(a.value) != fmt.Sprintf("new-%s-%d", c.name, i) {
					t.Fatalf("%s: %d %q, want the latest value", path, a.status, a.value)
				}
				if want := kvindex.Partition(fmt.Appendf(nil, "%s-%d", c.name, i), 3); a.partition != want {
					t.Fatalf("%s: partition %d, want %d (murmur2)", path, a.partition, want)
				}
			}
		}
		tests := []struct {
			path   string
			status int
			value  string
			code   int
		}{
			{"/kv/kv/never-written", 404, "", kvindex.CodeKeyNotFound},
			{"/kv/kv/" + b64 + "?key_encoding=base64url", 200, "binary", 0},
			{"/kv/kv/" + base64.URLEncoding.EncodeToString(binKey) + "?key_encoding=base64url", 200, "binary", 0},
			{"/kv/kv/placed", 404, "", kvindex.CodeKeyNotFound}, // hashed to another partition
			{"/kv/kv/placed?partition=0", 200, "by hand", 0},
			{"/kv/kv/placed?partition=9", 400, "", kvindex.CodeBadPartition},
			{"/kv/kv/placed?partition=x", 400, "", kvindex.CodeBadPartition},
			{"/kv/kv/a*b?key_encoding=base64url", 400, "", kvindex.CodeBadKeyEncoding},
			{"/kv/kv/?partition=0", 400, "", 0},
			{"/kv/kv/abc?key_encoding=rot13", 400, "", kvindex.CodeBadKeyEncoding},
			{"/kv/plain/k", 404, "", kvindex.CodeTopicNotIndexed},
			{"/kv/nope/k", 404, "", kvindex.CodeTopicNotFound},
		}
		for _, tt := range tests {
			a := kvGet(t, httpAddr, tt.path)
			if a.status != tt.status || (tt.value != "" && string(a.value) != tt.value) || (tt.code != 0 && a.errorCode != tt.code) {
				t.Fatalf("GET %s: %d %q code %d (%s), want %d %q code %d", tt.path, a.status, a.value, a.errorCode, a.message, tt.status, tt.value, tt.code)
			}
			if a.status == 404 && tt.code != kvindex.CodeKeyNotFound && a.message == "" {
				t.Fatalf("GET %s: 404 without a message naming the cause", tt.path)
			}
		}
		resp, err := http.Post("http://"+httpAddr+"/kv/kv/placed", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("POST: %d, want 405", resp.StatusCode)
		}
	}
	check(t, n.HTTPAddr())

	bad := []struct {
		name    string
		configs map[string]*string
	}{
		{"index without compaction", map[string]*string{"kv.index.enabled": ptr("true")}},
		{"index with delete policy", map[string]*string{"cleanup.policy": ptr("delete"), "kv.index.enabled": ptr("true")}},
		{"not a boolean", map[string]*string{"cleanup.policy": ptr("compact"), "kv.index.enabled": ptr("yes")}},
	}
	for _, b := range bad {
		resp, err := adm.CreateTopic(ctx, 1, 1, b.configs, "bad-"+fmt.Sprint(len(b.name)))
		if err == nil {
			err = resp.Err
		}
		if !errorsIs(err, kerr.InvalidConfig) {
			t.Fatalf("%s: %v, want INVALID_CONFIG", b.name, err)
		}
	}

	// The index survives a restart of broker and coordinator.
	closeNode(t, n)
	n2 := kvNode(t, dataDir)
	check(t, n2.HTTPAddr())
}

// TestKVConfigNeedsClusterSwitch: without --kv-index-enabled no topic may
// turn the index on.
func TestKVConfigNeedsClusterSwitch(t *testing.T) {
	n := floetest.StartNode(t, node.Config{})
	adm := newAdmin(t, n.KafkaAddr())
	resp, err := adm.CreateTopic(context.Background(), 1, 1, map[string]*string{
		"cleanup.policy": ptr("compact"), "kv.index.enabled": ptr("true")}, "kv")
	if err == nil {
		err = resp.Err
	}
	if !errorsIs(err, kerr.InvalidConfig) {
		t.Fatalf("create with kv.index.enabled and the switch off: %v, want INVALID_CONFIG", err)
	}
}

// TestKVBackfill: turning the index on for a topic with data builds it
// from the log; lookups answer 503 until then and 200 after.
func TestKVBackfill(t *testing.T) {
	n := kvNode(t, t.TempDir())
	adm := newAdmin(t, n.KafkaAddr())
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"cleanup.policy": ptr("compact")}, "late"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("late"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 2000 {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k-%d", i%500), Value: fmt.Appendf(nil, "v-%d", i)})
	}
	produceAll(t, cl, recs...)
	if a := kvGet(t, n.HTTPAddr(), "/kv/late/k-1"); a.status != 404 || a.errorCode != kvindex.CodeTopicNotIndexed {
		t.Fatalf("before enabling: %d %d", a.status, a.errorCode)
	}
	alterTopicConfigs(t, ctx, adm, "late", "kv.index.enabled", "true")
	var saw503 bool
	testkit.CheckFor(t, 30*time.Second, 5*time.Millisecond, func() error {
		a := kvGet(t, n.HTTPAddr(), "/kv/late/k-1")
		if a.status == 503 {
			saw503 = true
		}
		if a.status != 200 {
			return fmt.Errorf("status %d", a.status)
		}
		return nil
	})
	t.Logf("503 seen while building: %v", saw503)
	for i := range 500 {
		want := fmt.Sprintf("v-%d", 1500+i)
		if a := kvGet(t, n.HTTPAddr(), fmt.Sprintf("/kv/late/k-%d", i)); a.status != 200 || string(a.value) != want {
			t.Fatalf("k-%d: %d %q, want %q", i, a.status, a.value, want)
		}
	}
	// Writes after the build are indexed as they commit.
	produceAll(t, cl, &kgo.Record{Key: []byte("k-1"), Value: []byte("after")})
	if a := kvGet(t, n.HTTPAddr(), "/kv/late/k-1"); string(a.value) != "after" {
		t.Fatalf("k-1 after the build: %q", a.value)
	}
	// The rebuild command drops and rebuilds it: same answers.
	if err := n.Coordinator().RebuildKVIndex(ctx, "late"); err != nil {
		t.Fatal(err)
	}
	if a := kvGet(t, n.HTTPAddr(), "/kv/late/k-1"); string(a.value) != "after" {
		t.Fatalf("k-1 after a rebuild: %q", a.value)
	}
}

// TestKVCompactionContract: 100 keys, 3 rounds of 1,500 overwrites, 15
// tombstones and 400 filler records of 512 B, restart between rounds;
// every live key answers its latest value and every tombstoned key 404.
func TestKVCompactionContract(t *testing.T) {
	dataDir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	latest := map[string]string{} // "" = tombstoned
	filler := make([]byte, 512)
	for round := range 3 {
		n := kvNode(t, dataDir)
		adm := newAdmin(t, n.KafkaAddr())
		if round == 0 {
			createKVTopic(t, adm, "contract", 4)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("contract"))
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range 1500 {
			k := fmt.Sprintf("key-%03d", rng.IntN(100))
			v := fmt.Sprintf("r%d-%d", round, i)
			latest[k] = v
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte(v)})
			if i%4 == 0 && i/4 < 400 {
				recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "filler-%d-%d", round, i), Value: filler})
			}
		}
		for range 15 {
			k := fmt.Sprintf("key-%03d", rng.IntN(100))
			latest[k] = ""
			recs = append(recs, &kgo.Record{Key: []byte(k)})
		}
		produceAll(t, cl, recs...)
		cl.Close()
		closeNode(t, n)

		n = kvNode(t, dataDir) // restart between rounds
		live, dead := 0, 0
		for k, v := range latest {
			a := kvGet(t, n.HTTPAddr(), "/kv/contract/"+k)
			if v == "" {
				dead++
				if a.status != 404 {
					t.Fatalf("round %d: tombstoned %s answered %d %q", round, k, a.status, a.value)
				}
				continue
			}
			live++
			if a.status != 200 || string(a.value) != v {
				t.Fatalf("round %d: %s answered %d %q, want %q", round, k, a.status, a.value, v)
			}
		}
		t.Logf("round %d: %d live keys, %d tombstoned", round, live, dead)
		closeNode(t, n)
	}
}

func closeNode(t *testing.T, n *node.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestKVRebuildCommand runs cmd/kv-rebuild on a stopped broker's data and
// checks the rebuilt index answers as before.
func TestKVRebuildCommand(t *testing.T) {
	dataDir := t.TempDir()
	n := kvNode(t, dataDir)
	adm := newAdmin(t, n.KafkaAddr())
	createKVTopic(t, adm, "rb", 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("rb"))
	if err != nil {
		t.Fatal(err)
	}
	produceAll(t, cl, &kgo.Record{Key: []byte("a"), Value: []byte("1")}, &kgo.Record{Key: []byte("a"), Value: []byte("2")},
		&kgo.Record{Key: []byte("b"), Value: []byte("3")}, &kgo.Record{Key: []byte("b")})
	cl.Close()
	closeNode(t, n)

	out, err := exec.Command(floetest.Binary(t, "kv-rebuild"), "--data-dir", dataDir, "--topic", "rb").CombinedOutput()
	if err != nil {
		t.Fatalf("kv-rebuild: %v\n%s", err, out)
	}
	n = kvNode(t, dataDir)
	if a := kvGet(t, n.HTTPAddr(), "/kv/rb/a"); a.status != 200 || string(a.value) != "2" {
		t.Fatalf("a after rebuild: %d %q", a.status, a.value)
	}
	if a := kvGet(t, n.HTTPAddr(), "/kv/rb/b"); a.status != 404 {
		t.Fatalf("tombstoned b after rebuild: %d", a.status)
	}
}

// TestKVOverCluster serves /kv from a broker of a cluster, whose coordinator
// is another process reached over NATS (kv_get; an embedded coordinator
// answers /kv lookups in process), for batches of every codec, read and
// then from the batch cache.
func TestKVOverCluster(t *testing.T) {
	c := floetest.RunClusterWith(t, 1, floetest.ClusterOptions{CoordinatorArgs: []string{"--kv-index-enabled"}})
	b := c.Brokers[0]
	adm := newAdmin(t, b.KafkaAddr)
	createKVTopic(t, adm, "kv", 2)
	for _, cc := range codecs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.KafkaAddr), kgo.ProducerBatchCompression(cc.codec), kgo.DefaultProduceTopic("kv"))
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range 50 {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "%s-%d", cc.name, i), Value: fmt.Appendf(nil, "v-%s-%d", cc.name, i)})
		}
		produceAll(t, cl, recs...)
		cl.Close()
	}
	for round := range 2 { // the second round from the batch cache
		for _, cc := range codecs {
			for i := range 50 {
				path := fmt.Sprintf("/kv/kv/%s-%d", cc.name, i)
				if a := kvGet(t, b.HTTPAddr, path); a.status != 200 || string(a.value) != fmt.Sprintf("v-%s-%d", cc.name, i) {
					t.Fatalf("round %d, %s: %d %q (%s)", round, path, a.status, a.value, a.message)
				}
			}
		}
	}
	if a := kvGet(t, b.HTTPAddr, "/kv/kv/never"); a.status != 404 || a.errorCode != kvindex.CodeKeyNotFound {
		t.Fatalf("missing key: %+v", a)
	}
	if a := kvGet(t, b.HTTPAddr, "/kv/kv/x?partition=2"); a.status != 400 {
		t.Fatalf("partition out of range: %+v", a)
	}
}
