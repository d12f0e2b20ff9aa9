package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit"
)

// BenchmarkAuthorizedProduce is what ACLs add to a Produce of one topic
// with 10,000 bindings in the coordinator: one authorized check, through
// the broker's helper (off: the nil test alone).
func BenchmarkAuthorizedProduce(b *testing.B) {
	c, err := coordinator.Open(coordinator.Options{Dir: "coord", FS: vfs.NewMem()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	var bindings []coordapi.ACLBinding
	for p := range 1000 {
		principal := fmt.Sprintf("User:user-%d", p)
		if p == 500 {
			principal = AnonymousPrincipal // the principal of a request without a connection
		}
		for i := range 10 {
			bindings = append(bindings, coordapi.ACLBinding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: fmt.Sprintf("topic-%d-%d", p, i),
				PatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: principal, Host: "*",
				Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAllow})
		}
	}
	if err := c.CreateACLs(b.Context(), bindings); err != nil {
		b.Fatal(err)
	}
	r := &request{key: int16(kmsg.Produce)}
	for _, on := range []bool{false, true} {
		br := New(Options{ACLsEnabled: on, Logger: testkit.Logger()}, Deps{Coordinator: c})
		b.Cleanup(func() { _ = br.Close(context.Background()) })
		if on {
			testkit.CheckFor(b, 10*time.Second, time.Millisecond, func() error {
				if _, loaded := br.aclState(); !loaded || br.acls.current().Len() != len(bindings) {
					return fmt.Errorf("acls not loaded")
				}
				return nil
			})
		}
		b.Run(fmt.Sprintf("acls=%v", on), func(b *testing.B) {
			for b.Loop() {
				if !br.authorizedTopic(r, kmsg.ACLOperationWrite, "topic-500-7") {
					b.Fatal("denied")
				}
			}
		})
	}
}
