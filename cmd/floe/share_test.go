package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
)

// TestShare drives a share group with floe share: consume from the start
// accepting, release records and see them again with delivery count 2,
// list and describe the group (start offset, lag), move its start offset
// back (a dry run first) and read the records again, and delete it.
func TestShare(t *testing.T) {
	n := startNode(t)
	b := "--brokers=" + n.KafkaAddr()
	ok(t, "", "topic", "create", "jobs", "--partitions", "1", b)
	var lines []string
	for i := range 10 {
		lines = append(lines, fmt.Sprintf("job-%d", i))
	}
	ok(t, strings.Join(lines, "\n"), "produce", "jobs", b)

	fails(t, 2, "--group is required", "", "share", "consume", "jobs", b)
	fails(t, 2, "--ack", "", "share", "consume", "jobs", "--group", "w", "--ack", "maybe", b)

	// Release the first three: they come back, delivered a second time.
	out := ok(t, "", "share", "consume", "jobs", "--group", "workers", "--from-beginning", "--ack", "release", "-n", "3", "--format", `%o:%d\n`, b)
	if out != "0:1\n1:1\n2:1\n" {
		t.Fatalf("released records:\n%s", out)
	}
	var got []sharedRecord
	seen := map[int64]int32{}
	testkit.CheckFor(t, 30*time.Second, time.Millisecond, func() error {
		got = nil
		for _, l := range strings.Split(strings.TrimSpace(ok(t, "", "share", "consume", "jobs", "--group", "workers", "-n", "10", "--json", b)), "\n") {
			var r sharedRecord
			decode(t, l, &r)
			got = append(got, r)
			seen[r.Offset] = r.DeliveryCount
		}
		if len(seen) < 10 {
			return fmt.Errorf("%d of 10 records accepted so far", len(seen))
		}
		return nil
	})
	for o := range int64(10) {
		want := int32(1)
		if o < 3 {
			want = 2
		}
		if seen[o] != want {
			t.Fatalf("offset %d delivered with count %d, want %d (%+v)", o, seen[o], want, got)
		}
	}

	var listed []groupSummary
	decode(t, ok(t, "", "share", "list", "--json", b), &listed)
	if len(listed) != 1 || listed[0].Group != "workers" {
		t.Fatalf("share list: %+v", listed)
	}
	describe := func() shareDescription {
		t.Helper()
		var d []shareDescription
		decode(t, ok(t, "", "share", "describe", "workers", "--json", b), &d)
		if len(d) != 1 {
			t.Fatalf("share describe: %+v", d)
		}
		return d[0]
	}
	testkit.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		d := describe()
		if d.State != "Empty" || len(d.Offsets) != 1 || d.Offsets[0].StartOffset != 10 || d.Offsets[0].Lag != 0 {
			return fmt.Errorf("describe: %+v, want Empty, start offset 10, lag 0", d)
		}
		return nil
	})
	if out := ok(t, "", "share", "describe", "workers", b); !strings.Contains(out, "jobs   0          10            0") {
		t.Fatalf("share describe:\n%s", out)
	}

	// Back to the start: a dry run changes nothing, --execute does.
	var plan []resetPlan
	decode(t, ok(t, "", "share", "reset-offsets", "workers", "--topic", "jobs", "--to-earliest", "--json", b), &plan)
	if len(plan) != 1 || plan[0].Current != 10 || plan[0].New != 0 {
		t.Fatalf("reset plan: %+v", plan)
	}
	if d := describe(); d.Offsets[0].StartOffset != 10 {
		t.Fatalf("a dry run moved the start offset: %+v", d)
	}
	ok(t, "", "share", "reset-offsets", "workers", "--topic", "jobs", "--to-offset", "7", "--execute", b)
	if d := describe(); d.Offsets[0].StartOffset != 7 || d.Offsets[0].Lag != 3 {
		t.Fatalf("after the reset: %+v, want start offset 7, lag 3", d)
	}
	if out := ok(t, "", "share", "consume", "jobs", "--group", "workers", "-n", "3", "--format", `%o %v\n`, b); out != "7 job-7\n8 job-8\n9 job-9\n" {
		t.Fatalf("after the reset:\n%s", out)
	}

	fails(t, 2, "one of --to-earliest", "", "share", "reset-offsets", "workers", "--topic", "jobs", b)
	fails(t, 1, "UNKNOWN_TOPIC_OR_PARTITION", "", "share", "reset-offsets", "workers", "--topic", "nope", "--to-earliest", b)

	testkit.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if d := describe(); d.State != "Empty" {
			return fmt.Errorf("group is %s", d.State)
		}
		return nil
	})
	ok(t, "", "share", "delete", "workers", b)
	decode(t, ok(t, "", "share", "list", "--json", b), &listed)
	if len(listed) != 0 {
		t.Fatalf("share list after delete: %+v", listed)
	}
}
