package share

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the scripts under testdata/partition: acquisitions,
// the four acknowledgement types and renew, lock expiry, the delivery
// count limit, the record lock window, members leaving, the log start and
// resets. Each step prints its answer, then the share-partition; every
// step also checks the invariants and that its rows, applied to a store,
// read back as the same state. Time starts at 0 ms and moves only with
// advance. Commands:
//
//	new [offset=N] [locks=N] [limit=N] [lock=DURATION] [norenew]
//	config [locks=N] [limit=N] [lock=DURATION] [norenew]
//	acquire member=M [via=B] max=N [bound=N] [batch=N]
//	                            bound defaults to 1000; batch=N acquires
//	                            whole log batches of N records (mode 0)
//	ack member=M [via=B]        input: a batch a line, "FIRST[-LAST] TYPE[,TYPE...]"
//	                            with types gap, accept, release, reject, renew
//	                            or their numbers
//	advance d=DURATION
//	expire
//	release member=M [via=B]    via defaults to any broker
//	log-start offset=N
//	skip first=N last=N
//	reset offset=N
//	lag bound=N
//	rows                        the rows the last step wrote
//	state
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/partition", func(t *testing.T, path string) {
		var e *env
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if e == nil && d.Cmd != "new" {
				d.Fatalf(t, "the script must start with new")
			}
			if e != nil {
				e.t = t
			}
			var out strings.Builder
			report := func(res Result) {
				if res.Acquired != nil || d.Cmd == "acquire" {
					fmt.Fprintf(&out, "acquired:%s\n", formatAcquired(res.Acquired))
				}
				if s := formatStats(res.Stats); s != "" {
					fmt.Fprintf(&out, "stats: %s\n", s)
				}
				if res.Wake {
					out.WriteString("wake\n")
				}
			}
			switch d.Cmd {
			case "new":
				var offset int64
				d.MaybeScanArgs(t, "offset", &offset)
				e = newEnv(t, scanConfig(t, d, Config{}), offset)
			case "config":
				e.p.SetConfig(scanConfig(t, d, e.p.Config()))
			case "acquire":
				req := AcquireRequest{Via: 1, Bound: 1000}
				d.ScanArgs(t, "member", &req.Member)
				d.ScanArgs(t, "max", &req.MaxRecords)
				d.MaybeScanArgs(t, "bound", &req.Bound)
				if d.HasArg("via") {
					var via int
					d.ScanArgs(t, "via", &via)
					req.Via = int32(via)
				}
				if d.HasArg("batch") {
					var n int64
					d.ScanArgs(t, "batch", &n)
					req.BatchLast = batchesOf(n)
				}
				report(e.acquire(req))
			case "ack":
				var member string
				via := 1
				d.ScanArgs(t, "member", &member)
				d.MaybeScanArgs(t, "via", &via)
				batches, err := parseAcks(d.Input)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				if err := e.ack(member, int32(via), batches...); err != nil {
					fmt.Fprintf(&out, "%s\n", errString(err))
				} else {
					out.WriteString("ok\n")
					report(e.last)
				}
			case "advance":
				var s string
				d.ScanArgs(t, "d", &s)
				dur, err := time.ParseDuration(s)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				e.nowMs += dur.Milliseconds()
				return fmt.Sprintf("now=%d\n", e.nowMs)
			case "expire":
				report(e.after(e.p.ExpireLocks(e.nowMs)))
			case "release":
				var member string
				via := int(AnyBroker)
				d.ScanArgs(t, "member", &member)
				d.MaybeScanArgs(t, "via", &via)
				report(e.after(e.p.ReleaseMember(member, int32(via))))
			case "log-start":
				var offset int64
				d.ScanArgs(t, "offset", &offset)
				report(e.after(e.p.AdvanceLogStart(offset)))
			case "skip":
				var first, last int64
				d.ScanArgs(t, "first", &first)
				d.ScanArgs(t, "last", &last)
				report(e.after(e.p.Skip(first, last)))
			case "reset":
				var offset int64
				d.ScanArgs(t, "offset", &offset)
				report(e.after(e.p.Reset(offset)))
			case "lag":
				var bound int64
				d.ScanArgs(t, "bound", &bound)
				return fmt.Sprintf("lag=%d\n", e.p.Lag(bound))
			case "rows":
				for _, m := range e.last.Rows {
					fmt.Fprintf(&out, "%v\n", m)
				}
				return out.String()
			case "state":
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			out.WriteString(format(e.p))
			return out.String()
		})
	})
}

func scanConfig(t *testing.T, d *datadriven.TestData, c Config) Config {
	d.MaybeScanArgs(t, "locks", &c.MaxRecordLocks)
	d.MaybeScanArgs(t, "limit", &c.DeliveryCountLimit)
	if d.HasArg("lock") {
		var s string
		d.ScanArgs(t, "lock", &s)
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		c.LockDuration = dur
	}
	if d.HasArg("norenew") {
		c.NoRenew = true
	}
	return c
}

var ackNames = map[string]AckType{"gap": AckGap, "accept": AckAccept, "release": AckRelease, "reject": AckReject, "renew": AckRenew}

// parseAcks reads "FIRST[-LAST] TYPE[,TYPE...]" lines.
func parseAcks(input string) ([]AckBatch, error) {
	var bs []AckBatch
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		span, types, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			return nil, fmt.Errorf("bad ack line %q", line)
		}
		var b AckBatch
		first, last, ranged := strings.Cut(span, "-")
		var err error
		if b.First, err = strconv.ParseInt(first, 10, 64); err != nil {
			return nil, err
		}
		b.Last = b.First
		if ranged {
			if b.Last, err = strconv.ParseInt(last, 10, 64); err != nil {
				return nil, err
			}
		}
		for _, s := range strings.Split(types, ",") {
			typ, ok := ackNames[s]
			if !ok {
				n, err := strconv.Atoi(s)
				if err != nil {
					return nil, fmt.Errorf("bad ack type %q", s)
				}
				typ = AckType(n)
			}
			b.Types = append(b.Types, typ)
		}
		bs = append(bs, b)
	}
	return bs, nil
}

func formatAcquired(as []AcquiredRecords) string {
	if len(as) == 0 {
		return " none"
	}
	var b strings.Builder
	for _, a := range as {
		fmt.Fprintf(&b, " %d-%d(%d)", a.First, a.Last, a.DeliveryCount)
	}
	return b.String()
}

func formatStats(s Stats) string {
	var parts []string
	for _, f := range []struct {
		name string
		n    int64
	}{
		{"acquired", s.Acquired}, {"redelivered", s.Redelivered}, {"acknowledged", s.Acknowledged},
		{"released", s.Released}, {"rejected", s.Rejected}, {"gap", s.Gap}, {"renewed", s.Renewed},
		{"expired", s.Expired}, {"archived_limit", s.ArchivedLimit}, {"archived_log_start", s.ArchivedLogStart},
		{"skipped", s.Skipped},
	} {
		if f.n != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", f.name, f.n))
		}
	}
	return strings.Join(parts, " ")
}
