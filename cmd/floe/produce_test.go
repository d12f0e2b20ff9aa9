package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit"
)

// TestProduceConsume: keyed records with headers from stdin and from a
// file, consumed back with -e in several formats, as JSON, with --count,
// from one partition, and as a group that commits what it printed.
func TestProduceConsume(t *testing.T) {
	n := startNode(t)
	b := "--brokers=" + n.KafkaAddr()
	ok(t, "", "topic", "create", "events", "--partitions", "1", b)

	out := ok(t, "user-1:signed up\nuser-2:paid: 10 EUR\r\nno separator here\n:empty key\nuser-1:", "produce", "events",
		"--key-separator", ":", "-H", "source=cli", "--header", "trace=abc", b)
	if !strings.Contains(out, "FIRST-OFFSET") || !strings.Contains(out, "events  0          0             4            5") {
		t.Fatalf("produce:\n%s", out)
	}
	var pr produceResult
	file := filepath.Join(t.TempDir(), "records")
	os.WriteFile(file, []byte("late one\n"), 0o600)
	decode(t, ok(t, "", "produce", "events", "--file", file, "--json", b), &pr)
	if pr.Records != 1 || len(pr.Partitions) != 1 || pr.Partitions[0].FirstOffset != 5 {
		t.Fatalf("produce --json: %+v", pr)
	}

	// Every record, with its key, headers, partition and offset.
	out = ok(t, "", "consume", "events", "-e", "--format", `%o %k=%v [%h]\n`, b)
	want := `0 user-1=signed up [source=cli,trace=abc]
1 user-2=paid: 10 EUR [source=cli,trace=abc]
2 =no separator here [source=cli,trace=abc]
3 =empty key [source=cli,trace=abc]
4 user-1= [source=cli,trace=abc]
5 =late one []
`
	if out != want {
		t.Fatalf("consume -e:\n%s\nwant:\n%s", out, want)
	}
	// The default format is the value and a newline.
	if out = ok(t, "", "consume", "events", "--exit-at-end", "--count", "2", b); out != "signed up\npaid: 10 EUR\n" {
		t.Fatalf("consume --count 2: %q", out)
	}
	// JSON, one object per line; null keys stay null.
	out = ok(t, "", "consume", "events", "-e", "--json", "--partition", "0", b)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 {
		t.Fatalf("consume --json: %d lines:\n%s", len(lines), out)
	}
	var recs []consumedRecord
	for _, l := range lines {
		var r consumedRecord
		decode(t, l, &r)
		recs = append(recs, r)
	}
	if r := recs[1]; r.Topic != "events" || *r.Key != "user-2" || *r.Value != "paid: 10 EUR" || len(r.Headers) != 2 || r.Headers[1] != (headerRecord{"trace", "abc"}) || r.Timestamp == 0 {
		t.Fatalf("record 1: %+v", r)
	}
	if recs[2].Key != nil || *recs[3].Key != "" {
		t.Fatalf("keys: no separator %v, empty %q", recs[2].Key, *recs[3].Key)
	}

	// --null-empty makes tombstones; --partition targets a partition.
	ok(t, "", "topic", "create", "two", "--partitions", "2", b)
	ok(t, "k:\n", "produce", "two", "--key-separator", ":", "--null-empty", "--partition", "1", b)
	out = ok(t, "", "consume", "two", "-e", "--format", `%p %k %S\n`, b)
	if out != "1 k -1\n" {
		t.Fatalf("tombstone on partition 1: %q", out)
	}

	// Without -e consume waits for records; --count ends it.
	done := make(chan result, 1)
	go func() {
		var o, e strings.Builder
		code := run([]string{"consume", "two", "--from-beginning=false", "--count", "1", "--format", `%v\n`, b}, strings.NewReader(""), &o, &e)
		done <- result{o.String(), e.String(), code}
	}()
	cl := franz(t, n, kgo.DefaultProduceTopic("two"))
	deadline := time.After(30 * time.Second)
	for got := false; !got; {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("live")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if r.code != 0 || r.stdout != "live\n" {
				t.Fatalf("tailing consume: %+v", r)
			}
			got = true
		case <-time.After(200 * time.Millisecond): // it may have started after the record: produce another
		case <-deadline:
			t.Fatal("tailing consume never printed")
		}
	}

	// A group consumer commits what it printed, so the next run goes on.
	if out = ok(t, "", "consume", "events", "--group", "readers", "--count", "4", b); out != "signed up\npaid: 10 EUR\nno separator here\nempty key\n" {
		t.Fatalf("group consume: %q", out)
	}
	if out = ok(t, "", "consume", "events", "--group", "readers", "-e", b); out != "\nlate one\n" {
		t.Fatalf("group consume, second run: %q", out)
	}
	var gd []groupDescription
	decode(t, ok(t, "", "group", "describe", "readers", "--json", b), &gd)
	if len(gd) != 1 || len(gd[0].Offsets) != 1 || gd[0].Offsets[0].Committed != 6 || gd[0].TotalLag != 0 {
		t.Fatalf("group describe after consuming: %+v", gd)
	}
	// -e as a group that is already at the end exits at once.
	if out = ok(t, "", "consume", "events", "--group", "readers", "-e", b); out != "" {
		t.Fatalf("group at the end: %q", out)
	}
	// A log that ends in a transaction marker: -e still ends, and prints
	// no control record.
	ok(t, "", "topic", "create", "txns", b)
	tx := franz(t, n, kgo.TransactionalID("cli-test"), kgo.DefaultProduceTopic("txns"))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(context.Background(), &kgo.Record{Value: []byte("in a txn")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tx.EndTransaction(context.Background(), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if out = ok(t, "", "consume", "txns", "-e", "--format", `%o %v\n`, b); out != "0 in a txn\n" {
		t.Fatalf("consume -e of a transactional log: %q", out)
	}

	fails(t, 1, "UNKNOWN_TOPIC_OR_PARTITION", "", "consume", "missing", "-e", b)
	fails(t, 1, "UNKNOWN_TOPIC_OR_PARTITION", "x\n", "produce", "missing", b, "--timeout", "10s")
}

// TestGroups: group list and describe, and reset-offsets: a dry run by
// default, --execute for each target, and a refusal while the group has
// members.
func TestGroups(t *testing.T) {
	n := startNode(t)
	b := "--brokers=" + n.KafkaAddr()
	ok(t, "", "topic", "create", "clicks", "--partitions", "2", b)
	var lines []string
	for i := range 10 {
		lines = append(lines, fmt.Sprintf("v%d", i))
	}
	ok(t, strings.Join(lines, "\n"), "produce", "clicks", "--partition", "0", b)
	ok(t, "a\nb\n", "produce", "clicks", "--partition", "1", b)
	// The next millisecond boundary: a and b were stamped before it, and c
	// is stamped with it (kgo keeps a record's own timestamp), so no
	// waiting for the clock.
	before := time.Now().Truncate(time.Millisecond).Add(time.Millisecond)
	if err := franz(t, n, kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(context.Background(),
		&kgo.Record{Topic: "clicks", Partition: 1, Value: []byte("c"), Timestamp: before}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A kgo group member consumes everything and commits.
	ctx := context.Background()
	member := franz(t, n, kgo.ConsumerGroup("web"), kgo.ConsumeTopics("clicks"), kgo.DisableAutoCommit(), kgo.ClientID("kgo-member"))
	seen := 0
	for seen < 13 {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := member.PollFetches(fctx)
		cancel()
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		seen += fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	out := ok(t, "", "group", "list", b)
	if !strings.Contains(out, "web") || !strings.Contains(out, "Stable") {
		t.Fatalf("group list:\n%s", out)
	}
	var listed []groupSummary
	decode(t, ok(t, "", "group", "list", "--json", b), &listed)
	if len(listed) != 1 || listed[0].Group != "web" || listed[0].ProtocolType != "consumer" {
		t.Fatalf("group list --json: %+v", listed)
	}
	out = ok(t, "", "group", "describe", "web", b)
	for _, want := range []string{"Stable", "MEMBERS      1", "clicks  0          10              10              0    ", "kgo-member"} {
		if !strings.Contains(out, want) {
			t.Fatalf("group describe lacks %q:\n%s", want, out)
		}
	}
	// Resetting a group with members is refused.
	fails(t, 1, "is Stable", "", "group", "reset-offsets", "web", "--topic", "clicks", "--to-earliest", "--execute", b)
	member.Close()
	testkit.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		var gd []groupDescription
		decode(t, ok(t, "", "group", "describe", "web", "--json", b), &gd)
		if gd[0].State != "Empty" {
			return fmt.Errorf("group is %s", gd[0].State)
		}
		return nil
	})

	committed := func() map[int32]int64 {
		t.Helper()
		adm := kadm.NewClient(franz(t, n))
		os, err := adm.FetchOffsets(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		m := map[int32]int64{}
		os.Each(func(o kadm.OffsetResponse) { m[o.Partition] = o.At })
		return m
	}
	reset := func(args ...string) []resetPlan {
		t.Helper()
		var plan []resetPlan
		decode(t, ok(t, "", append([]string{"group", "reset-offsets", "web", "--json", b}, args...)...), &plan)
		return plan
	}
	news := func(plan []resetPlan) string {
		var s []string
		for _, p := range plan {
			s = append(s, fmt.Sprintf("%d:%d->%d", p.Partition, p.Current, p.New))
		}
		return strings.Join(s, " ")
	}

	// A dry run changes nothing, and says so.
	r := floe(t, "", "group", "reset-offsets", "web", "--topic", "clicks", "--to-earliest", b)
	if r.code != 0 || !strings.Contains(r.stdout, "web    clicks  0          10              0") || !strings.Contains(r.stderr, "dry run") {
		t.Fatalf("dry run: %+v", r)
	}
	if c := committed(); c[0] != 10 || c[1] != 3 {
		t.Fatalf("a dry run committed: %v", c)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--topic", "clicks", "--to-earliest"}, "0:10->0 1:3->0"},
		{[]string{"--topic", "clicks", "--to-latest"}, "0:0->10 1:0->3"},
		{[]string{"--topic", "clicks:0", "--to-offset", "4"}, "0:10->4"},
		{[]string{"--topic", "clicks:1", "--to-offset", "99"}, "1:3->3"}, // kept within the log
		{[]string{"--all-topics", "--shift-by", "-2"}, "0:4->2 1:3->1"},
		{[]string{"--topic", "clicks", "--to-datetime", before.Format(time.RFC3339Nano)}, "0:2->10 1:1->2"},
		{[]string{"--topic", "clicks", "--to-datetime", "2000-01-01"}, "0:10->0 1:2->0"},
	} {
		plan := reset(append(tc.args, "--execute")...)
		if got := news(plan); got != tc.want {
			t.Fatalf("reset %v: %s, want %s", tc.args, got, tc.want)
		}
		c := committed()
		for _, p := range plan {
			if c[p.Partition] != p.New {
				t.Fatalf("reset %v: committed %v, want %+v", tc.args, c, plan)
			}
		}
	}
	fails(t, 1, "UNKNOWN_TOPIC_OR_PARTITION", "", "group", "reset-offsets", "web", "--topic", "nope", "--to-earliest", b)
	fails(t, 1, "UNKNOWN_TOPIC_OR_PARTITION", "", "group", "reset-offsets", "web", "--topic", "clicks:7", "--to-earliest", b)

	// A group that does not exist: describe says so; reset-offsets gives
	// it offsets to start from.
	fails(t, 1, "GROUP_ID_NOT_FOUND", "", "group", "describe", "fresh", b)
	var plan []resetPlan
	decode(t, ok(t, "", "group", "reset-offsets", "fresh", "--topic", "clicks:0", "--to-offset", "7", "--execute", "--json", b), &plan)
	if len(plan) != 1 || plan[0].Current != -1 || plan[0].New != 7 {
		t.Fatalf("reset of a new group: %+v", plan)
	}
	got := strings.Split(strings.TrimSpace(ok(t, "", "consume", "clicks", "--group", "fresh", "-e", "--format", `%p:%v\n`, b)), "\n")
	sort.Strings(got)
	if strings.Join(got, " ") != "0:v7 0:v8 0:v9 1:a 1:b 1:c" {
		t.Fatalf("the new group consumed %v", got)
	}
}
