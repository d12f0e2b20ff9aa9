package e2e

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/internal/testkit/certtest"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/miniotest"
	"github.com/floe-io/floe/internal/testkit/natstest"
	"github.com/floe-io/floe/tlsconfig"
)

// TestSecureLinks: the cluster's own links secured, with real processes:
// MinIO over HTTPS with a private CA (--s3-ca-file), and a NATS server
// that requires TLS and an nkey (--nats-nkey, --nats-tls-ca), used by a
// coordinator and a broker that produce and consume through them.
func TestSecureLinks(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "links")
	srv := ca.Server("server")
	minio := miniotest.StartTLS(t, miniotest.TLSFiles{CertFile: srv.CertFile, KeyFile: srv.KeyFile, CAFile: ca.File})

	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(dir, "floe.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(srv.CertFile, srv.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ns := natstest.StartWith(t, &server.Options{
		TLSConfig:  &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		TLSTimeout: 5,
		Nkeys:      []*server.NkeyUser{{Nkey: pub}},
	})
	natsURL := "tls://" + ns.Addr().String()

	env := []string{"AWS_ACCESS_KEY_ID=" + minio.AccessKey, "AWS_SECRET_ACCESS_KEY=" + minio.SecretKey}
	links := []string{"--nats-url", natsURL, "--cluster", floetest.ClusterName, "--nats-nkey", seedFile, "--nats-tls-ca", ca.File,
		"--s3-bucket", minio.Bucket, "--s3-endpoint", minio.Endpoint, "--s3-region", minio.Region, "--s3-path-style", "--s3-ca-file", ca.File}
	floetest.StartCoordinator(t, env, append([]string{"--data-dir", t.TempDir()}, links...)...)
	b := floetest.StartBroker(t, env, append([]string{"--node-id", "1", "--data-dir", t.TempDir(), "--auto-create-topics"}, links...)...)

	cl := newFranzClient(t, b.KafkaAddr, kgo.DefaultProduceTopic("links"), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("links"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			t.Fatalf("produce through TLS links: %v", err)
		}
	}
	got := 0
	for got < 10 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		got += len(fs.Records())
	}
	objects, err := minio.Store(t).List(ctx, "")
	if err != nil || len(objects) == 0 {
		t.Fatalf("objects on the HTTPS MinIO: %d, %v", len(objects), err)
	}

	// The same links without the nkey, or without the CA, are refused.
	for name, sec := range map[string]rpc.Security{
		"no nkey": {TLS: tlsconfig.ClientFiles{CAFile: ca.File}},
		"no CA":   {NKeyFile: seedFile},
	} {
		opts, err := sec.Options()
		if err != nil {
			t.Fatal(err)
		}
		if nc, err := nats.Connect(natsURL, append(opts, nats.Timeout(5*time.Second))...); err == nil {
			nc.Close()
			t.Errorf("%s: connected to the secured NATS server", name)
		}
	}
}
