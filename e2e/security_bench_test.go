package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/node"
)

// BenchmarkACLProduceLatency measures what the authorizer costs a produce:
// the p50 and p99 of 500 one-record produces (acks=all, one at a time) by a
// SASL user on a broker with --acls-enabled and 10,000 ACLs (plus the
// user's own grant), against the same broker with ACLs off, both in one
// run on the embedded default.
//
//	go test -run '^$' -bench BenchmarkACLProduceLatency -benchtime 1x ./e2e/
func BenchmarkACLProduceLatency(b *testing.B) {
	measure := func(b *testing.B, acls bool) (p50, p99 time.Duration) {
		n := saslNode(b, func(c *node.Config) {
			if acls {
				c.Broker.ACLsEnabled = true
				c.Broker.SuperUsers = []string{"User:admin"}
			}
		})
		ctx := context.Background()
		admin := newFranzClient(b, n.KafkaAddr(), kgo.SASL(mechanism("SCRAM-SHA-512", "admin", "admin-secret")))
		adm := kadm.NewClient(admin)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, "lat"); err != nil {
			b.Fatal(err)
		}
		if acls {
			// 10,000 bindings: 5,000 literal and 5,000 prefixed, over 1,000
			// other principals, and alice's own.
			for chunk := 0; chunk < 10; chunk++ {
				builder := kadm.NewACLs()
				var users []string
				for u := chunk * 100; u < (chunk+1)*100; u++ {
					users = append(users, fmt.Sprintf("User:u%d", u))
				}
				var topics []string
				for k := range 5 {
					topics = append(topics, fmt.Sprintf("t-%d-%d", chunk, k))
				}
				builder = builder.Allow(users...).Topics(topics...).Operations(kadm.OpRead, kadm.OpWrite)
				if chunk >= 5 {
					builder = builder.ResourcePatternType(kadm.ACLPatternPrefixed)
				}
				if _, err := adm.CreateACLs(ctx, builder); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("lat").Operations(kadm.OpWrite, kadm.OpDescribe)); err != nil {
				b.Fatal(err)
			}
			if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpIdempotentWrite)); err != nil {
				b.Fatal(err)
			}
			got, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
			if err != nil {
				b.Fatal(err)
			}
			count := 0
			for _, r := range got {
				count += len(r.Described)
			}
			b.Logf("ACLs stored: %d", count)
		}
		cl := newFranzClient(b, n.KafkaAddr(), kgo.SASL(mechanism("SCRAM-SHA-512", "alice", "alice-secret")), kgo.DefaultProduceTopic("lat"))
		var lat []time.Duration
		for i := range 550 {
			t0 := time.Now()
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			if i >= 50 { // warmed up
				lat = append(lat, time.Since(t0))
			}
		}
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100]
	}
	for i := range b.N {
		// Alternating which runs first, so that neither gets the quieter
		// machine.
		var offP50, offP99, onP50, onP99 time.Duration
		if i%2 == 0 {
			offP50, offP99 = measure(b, false)
			onP50, onP99 = measure(b, true)
		} else {
			onP50, onP99 = measure(b, true)
			offP50, offP99 = measure(b, false)
		}
		b.ReportMetric(float64(offP50.Microseconds())/1000, "off_p50_ms")
		b.ReportMetric(float64(onP50.Microseconds())/1000, "acl10k_p50_ms")
		b.Logf("produce latency, ACLs off: p50 %s p99 %s; 10,000 ACLs: p50 %s p99 %s", offP50, offP99, onP50, onP99)
	}
}
