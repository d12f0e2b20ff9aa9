package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
)

// These tests run a real librdkafka client, Debian's kcat, against floe.

// kcatBinary returns the kcat binary to run: $FLOE_KCAT_BIN, which must
// then be an executable file, else kcat on PATH. Without one the test is
// skipped, or fails when CI is "true": CI never skips these silently
// (scripts/test.sh installs kcat).
func kcatBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FLOE_KCAT_BIN"); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			t.Fatalf("FLOE_KCAT_BIN=%s is not an executable file", p)
		}
		return p
	}
	p, err := exec.LookPath("kcat")
	if err != nil {
		const msg = "no kcat binary: set FLOE_KCAT_BIN, install it (apt-get install -y kcat), or run ./scripts/test.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// kcatLine is one line kcat printed on stdout, and when it was read.
type kcatLine struct {
	text string
	at   time.Time
}

// kcatProc is a kcat process running for a test: its stdout lines arrive
// on lines, its stderr (librdkafka's logs and kcat's notices) collects in
// stderr. It is killed at cleanup.
type kcatProc struct {
	cmd    *exec.Cmd
	lines  chan kcatLine
	stderr *testkit.Buffer
	stop   chan struct{} // closed at cleanup: lines are dropped after
	done   chan struct{} // closed once kcat has exited and been waited for
}

// startKcat runs kcat with args.
func startKcat(t testing.TB, args ...string) *kcatProc {
	t.Helper()
	p := &kcatProc{
		cmd:    exec.Command(kcatBinary(t), args...),
		lines:  make(chan kcatLine, 1024),
		stderr: new(testkit.Buffer),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start kcat: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case p.lines <- kcatLine{sc.Text(), time.Now()}:
			case <-p.stop:
			}
		}
		io.Copy(io.Discard, out)
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		close(p.stop)
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("kcat %s stderr (its end):\n%s", strings.Join(args, " "), lastBytes(p.stderr.String(), 4096))
		}
	})
	return p
}

// next returns the next stdout line, failing the test after timeout.
func (p *kcatProc) next(t testing.TB, timeout time.Duration) kcatLine {
	t.Helper()
	select {
	case l := <-p.lines:
		return l
	case <-p.done:
		select {
		case l := <-p.lines: // printed just before exiting
			return l
		default:
		}
		t.Fatal("kcat exited before printing a line")
	case <-time.After(timeout):
		t.Fatalf("kcat printed nothing within %s", timeout)
	}
	panic("unreachable")
}

// waitStderr waits until kcat's stderr contains s.
func (p *kcatProc) waitStderr(t testing.TB, s string) {
	t.Helper()
	testkit.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if !strings.Contains(p.stderr.String(), s) {
			return fmt.Errorf("kcat's stderr lacks %q (logged at cleanup)", s)
		}
		return nil
	})
}

// lastBytes returns the last n bytes of s.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// librdkafkaProblem matches what librdkafka logs when it cannot use a
// response: a log line at level warning or worse (%0..%4), a kcat error,
// or a protocol parse failure at any level.
var librdkafkaProblem = regexp.MustCompile(`(?m)^%[0-4]\|.*$|^% ERROR.*$|(?i).*parse failure.*|.*invalid MessageSetSize.*`)

// checkKcatStderr fails the test if kcat's stderr shows a problem.
func checkKcatStderr(t testing.TB, stderr string) {
	t.Helper()
	if bad := librdkafkaProblem.FindAllString(stderr, 5); len(bad) > 0 {
		t.Errorf("librdkafka reported problems:\n%s", strings.Join(bad, "\n"))
	}
}

// runKcat runs kcat to completion with stdin, bounded by timeout, and
// returns its stdout and stderr. It fails the test if kcat does not exit
// cleanly in time.
func runKcat(t testing.TB, timeout time.Duration, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatBinary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kcat %s did not exit within %s; stdout:\n%s\nstderr (its end):\n%s", strings.Join(args, " "), timeout, lastBytes(out.String(), 4096), lastBytes(errOut.String(), 4096))
	}
	if err != nil {
		t.Fatalf("kcat %s: %v; stdout:\n%s\nstderr (its end):\n%s", strings.Join(args, " "), err, lastBytes(out.String(), 4096), lastBytes(errOut.String(), 4096))
	}
	return out.String(), errOut.String()
}

// TestKcatTailCaughtUp: a librdkafka consumer at the end of a partition
// sees a record produced afterwards, and logs no protocol error. Its
// caught-up fetches get empty responses; a null record set there made
// librdkafka fail the response ("invalid MessageSetSize -1"), back off
// 500 ms and never reach the end of the partition.
func TestKcatTailCaughtUp(t *testing.T) {
	kcatBinary(t)
	n := floetest.StartNode(t, node.Config{})
	addr := n.KafkaAddr()
	adm := newAdmin(t, addr)
	ctx := context.Background()
	const topic = "tail"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := newFranzClient(t, addr)
	produceAll(t, prod, &kgo.Record{Topic: topic, Value: []byte("before")})

	k := startKcat(t, "-C", "-b", addr, "-t", topic, "-p", "0", "-o", "end", "-u", "-f", "%o %s\n")
	// kcat says so when a fetch at the end of the partition came back
	// (empty) and was understood.
	k.waitStderr(t, "Reached end of topic tail [0] at offset 1")

	produceAll(t, prod, &kgo.Record{Topic: topic, Value: []byte("after")})
	if l := k.next(t, 30*time.Second); l.text != "1 after" {
		t.Fatalf("kcat printed %q, want %q", l.text, "1 after")
	}
	k.waitStderr(t, "Reached end of topic tail [0] at offset 2")
	checkKcatStderr(t, k.stderr.String())
}

// TestKcatExitsAtEnd: kcat -e reads every partition, the empty one too, and
// exits at the end of them.
func TestKcatExitsAtEnd(t *testing.T) {
	kcatBinary(t)
	n := floetest.StartNode(t, node.Config{})
	addr := n.KafkaAddr()
	adm := newAdmin(t, addr)
	const topic = "ends"
	if _, err := adm.CreateTopic(context.Background(), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := newFranzClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var want []string
	for i := range 6 {
		p := int32(i % 2) // partition 2 stays empty
		produceAll(t, prod, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "r%d", i)})
		want = append(want, fmt.Sprintf("%d %d r%d", p, i/2, i))
	}
	stdout, stderr := runKcat(t, time.Minute, "", "-C", "-b", addr, "-t", topic, "-e", "-f", "%p %o %s\n")
	got := strings.Split(strings.TrimSpace(stdout), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("kcat read %q, want %q", got, want)
	}
	for p := range 3 {
		if !strings.Contains(stderr, fmt.Sprintf("Reached end of topic %s [%d]", topic, p)) {
			t.Errorf("kcat did not report the end of partition %d:\n%s", p, stderr)
		}
	}
	checkKcatStderr(t, stderr)
}

// TestKcatAutoCreateTopic: as with Apache Kafka's defaults, a broker started
// without flags creates a topic on first use, so kcat can produce to a new
// topic and read it back; DescribeConfigs shows auto.create.topics.enable
// at its default, true. --auto-create-topics=false turns it off.
func TestKcatAutoCreateTopic(t *testing.T) {
	kcatBinary(t)
	p := floetest.StartBroker(t, nil, "--data-dir", t.TempDir())
	_, stderr := runKcat(t, time.Minute, "hi\n", "-P", "-b", p.KafkaAddr, "-t", "test")
	checkKcatStderr(t, stderr)
	stdout, stderr := runKcat(t, time.Minute, "", "-C", "-b", p.KafkaAddr, "-t", "test", "-e", "-f", "%s\n")
	if stdout != "hi\n" {
		t.Errorf("kcat read %q, want %q", stdout, "hi\n")
	}
	checkKcatStderr(t, stderr)
	checkAutoCreateConfig(t, p.KafkaAddr, "true", true)

	off := floetest.StartBroker(t, nil, "--data-dir", t.TempDir(), "--auto-create-topics=false")
	checkAutoCreateConfig(t, off.KafkaAddr, "false", false)
	cl := newFranzClient(t, off.KafkaAddr)
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("test")}}
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("--auto-create-topics=false: Metadata for a new topic answered %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
}

// checkAutoCreateConfig checks auto.create.topics.enable in the broker's
// DescribeConfigs: its value, and whether that is Kafka's default.
func checkAutoCreateConfig(t *testing.T, addr, value string, isDefault bool) {
	t.Helper()
	rcs, err := newAdmin(t, addr).DescribeBrokerConfigs(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("1", nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rc.Configs, func(c kadm.Config) bool { return c.Key == "auto.create.topics.enable" })
	if i < 0 {
		t.Fatal("DescribeConfigs lacks auto.create.topics.enable")
	}
	c := rc.Configs[i]
	wantSource := kmsg.ConfigSourceStaticBrokerConfig
	if isDefault {
		wantSource = kmsg.ConfigSourceDefaultConfig
	}
	if c.MaybeValue() != value || c.Source != wantSource {
		t.Errorf("auto.create.topics.enable = %q (source %v), want %q (source %v)", c.MaybeValue(), c.Source, value, wantSource)
	}
}

// newFranzClient returns a franz-go client on addr, closed at cleanup.
func newFranzClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// BenchmarkKcatTailLatency measures how long a record takes from the start
// of its produce (franz-go, acks=all) to kcat, tailing the partition with
// librdkafka's defaults (fetch.wait.max.ms 500), printing it. Each record
// is produced once kcat has reported the end of the partition, so that its
// fetch is parked in the broker's long poll. It prints p50/p99 in ms:
//
//	go test -run '^$' -bench KcatTailLatency -benchtime 50x ./e2e/
func BenchmarkKcatTailLatency(b *testing.B) {
	kcatBinary(b)
	n := floetest.StartNode(b, node.Config{})
	addr := n.KafkaAddr()
	const topic = "tail-latency"
	if _, err := kadm.NewClient(newFranzClient(b, addr)).CreateTopic(context.Background(), 1, 1, nil, topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		b.Fatal(err)
	}
	prod := newFranzClient(b, addr)
	k := startKcat(b, "-C", "-b", addr, "-t", topic, "-p", "0", "-o", "end", "-u", "-f", "%o\n")
	k.waitStderr(b, "Reached end of topic tail-latency [0] at offset 0")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		l := k.next(b, 30*time.Second)
		if l.text != fmt.Sprint(i) {
			b.Fatalf("kcat printed offset %q, want %d", l.text, i)
		}
		lat = append(lat, l.at.Sub(start))
		b.StopTimer()
		k.waitStderr(b, fmt.Sprintf("Reached end of topic %s [0] at offset %d", topic, i+1))
		b.StartTimer()
	}
	b.StopTimer()
	checkKcatStderr(b, k.stderr.String())
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.Logf("produce to kcat print, %d records: p50 %.1f ms, p99 %.1f ms, max %.1f ms", len(lat), pct(0.5), pct(0.99), pct(1))
}
