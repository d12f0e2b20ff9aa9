package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupSummary is one group in group list.
type groupSummary struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Type         string `json:"type,omitempty"`
	Coordinator  int32  `json:"coordinator"`
}

func groupList(c *cli, args []string) error {
	f := c.flags("[flags]", "List consumer groups, sorted by name.")
	var states listFlag
	f.Var(&states, "state", "only groups in `state` (Stable, Empty...; repeatable)")
	if err := f.parseNoArgs(args); err != nil {
		return err
	}
	groups, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.ListedGroups, error) {
		return adm.ListGroups(ctx, states...)
	})
	if err != nil {
		return err
	}
	out := []groupSummary{}
	for _, name := range groups.Groups() {
		g := groups[name]
		out = append(out, groupSummary{Group: name, State: g.State, ProtocolType: g.ProtocolType, Type: g.GroupType, Coordinator: g.Coordinator})
	}
	return c.report(out, func() {
		tb := newTable(c.stdout, "GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR")
		for _, g := range out {
			tb.row(g.Group, g.State, g.ProtocolType, g.Coordinator)
		}
		tb.flush()
	}, nil)
}

// groupDescription is group describe's answer for one group.
type groupDescription struct {
	Group        string        `json:"group"`
	Coordinator  int32         `json:"coordinator"`
	State        string        `json:"state"`
	ProtocolType string        `json:"protocol_type"`
	Protocol     string        `json:"protocol"`
	Members      []groupMember `json:"members"`
	Offsets      []groupOffset `json:"offsets"`
	TotalLag     int64         `json:"total_lag"`
	Error        string        `json:"error,omitempty"`
}

type groupMember struct {
	MemberID   string  `json:"member_id"`
	InstanceID *string `json:"instance_id,omitempty"`
	ClientID   string  `json:"client_id"`
	Host       string  `json:"host"`
}

type groupOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed_offset"` // -1: none
	LogEnd    int64  `json:"log_end_offset"`
	Lag       int64  `json:"lag"` // -1: unknown
	MemberID  string `json:"member_id,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Host      string `json:"host,omitempty"`
	Error     string `json:"error,omitempty"`
}

func groupDescribe(c *cli, args []string) error {
	f := c.flags("GROUP... [flags]", `
Show consumer groups: state, members, and for every partition the group
consumes or has committed, its committed offset, the log end offset and the
lag between them, as kafka-consumer-groups.sh --describe.`)
	groups, err := f.parseSome(args, "group")
	if err != nil {
		return err
	}
	lags, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.DescribedGroupLags, error) {
		return adm.Lag(ctx, groups...)
	})
	if err != nil {
		return err
	}
	out := []groupDescription{}
	var errs itemErrs
	for _, name := range groups {
		l, ok := lags[name]
		if !ok {
			errs.add(kerr.GroupIDNotFound, "group %s", name)
			continue
		}
		d := groupDescription{Group: name, Coordinator: l.Coordinator.NodeID, State: l.State, ProtocolType: l.ProtocolType,
			Protocol: l.Protocol, Members: []groupMember{}, Offsets: []groupOffset{}}
		d.Error = errs.add(l.Error(), "group %s", name)
		if l.DescribeErr != nil && !c.g.json {
			continue
		}
		for _, m := range l.Members {
			d.Members = append(d.Members, groupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost})
		}
		for _, ml := range l.Lag.Sorted() {
			o := groupOffset{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, LogEnd: ml.End.Offset, Lag: ml.Lag, Error: errString(ml.Err)}
			if ml.Member != nil {
				o.MemberID, o.ClientID, o.Host = ml.Member.MemberID, ml.Member.ClientID, ml.Member.ClientHost
			}
			if ml.Commit.Topic == "" {
				o.Committed = -1
			}
			if ml.Lag > 0 {
				d.TotalLag += ml.Lag
			}
			d.Offsets = append(d.Offsets, o)
		}
		out = append(out, d)
	}
	return c.report(out, func() { c.printGroups(out) }, errs)
}

// printGroups prints group describe's tables.
func (c *cli) printGroups(out []groupDescription) {
	for i, d := range out {
		if i > 0 {
			fmt.Fprintln(c.stdout)
		}
		tb := newTable(c.stdout)
		tb.row("GROUP", d.Group)
		tb.row("COORDINATOR", d.Coordinator)
		tb.row("STATE", d.State)
		tb.row("PROTOCOL", strings.Trim(d.ProtocolType+"/"+d.Protocol, "/"))
		tb.row("MEMBERS", len(d.Members))
		tb.row("TOTAL-LAG", d.TotalLag)
		tb.flush()
		if len(d.Offsets) == 0 {
			continue
		}
		fmt.Fprintln(c.stdout)
		tb = newTable(c.stdout, "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "CLIENT-ID", "HOST")
		for _, o := range d.Offsets {
			tb.row(o.Topic, o.Partition, dashNeg(o.Committed), dashNeg(o.LogEnd), dashNeg(o.Lag), orDash(o.MemberID), orDash(o.ClientID), orDash(o.Host))
		}
		tb.flush()
	}
}

// dashNeg is n for a table cell, "-" when negative (unknown).
func dashNeg(n int64) any {
	if n < 0 {
		return "-"
	}
	return n
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// resetPlan is one partition of group reset-offsets.
type resetPlan struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   int64  `json:"current_offset"` // -1: none committed
	New       int64  `json:"new_offset"`
	Error     string `json:"error,omitempty"`
}

func groupResetOffsets(c *cli, args []string) error {
	f := c.flags("GROUP (--topic T[:P,P...]... | --all-topics) (--to-earliest | --to-latest | --to-offset N | --to-datetime T | --shift-by N) [--execute]", `
Move a consumer group's committed offsets, as kafka-consumer-groups.sh
--reset-offsets: a dry run that prints the plan unless --execute is given.
The group must be inactive (no members: stop its consumers first) for
--execute. --to-offset, --shift-by and --to-datetime are kept within each
partition's log start and end offsets; --to-datetime past the last record
moves to the end. A datetime is RFC 3339 (2026-01-02T15:04:05Z), or
2026-01-02T15:04:05[.000] or 2026-01-02 in local time, or Unix milliseconds.`)
	var topics listFlag
	f.Var(&topics, "topic", "`topic`, or topic:p,p,... for some of its partitions (repeatable)")
	allTopics := f.Bool("all-topics", false, "every topic the group has committed offsets for")
	earliest := f.Bool("to-earliest", false, "reset to each partition's log start offset")
	latest := f.Bool("to-latest", false, "reset to each partition's log end offset")
	var toOffset, shiftBy optInt
	f.Var(&toOffset, "to-offset", "reset to `offset`")
	f.Var(&shiftBy, "shift-by", "move the committed offsets by `n` (negative: back)")
	datetime := f.String("to-datetime", "", "reset to the first offset at or after `time`")
	dryRun := f.Bool("dry-run", true, "print the plan only (the default)")
	execute := f.Bool("execute", false, "commit the new offsets")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	explicitDry := false
	f.Visit(func(fl *flag.Flag) { explicitDry = explicitDry || fl.Name == "dry-run" && *dryRun })
	if explicitDry && *execute {
		return usagef("--dry-run and --execute do not go together")
	}
	if len(pos) != 1 {
		return usagef("name one group")
	}
	group := pos[0]
	if len(topics) == 0 && !*allTopics || len(topics) > 0 && *allTopics {
		return usagef("give --topic or --all-topics")
	}
	n := 0
	for _, b := range []bool{*earliest, *latest, toOffset.set, shiftBy.set, *datetime != ""} {
		if b {
			n++
		}
	}
	if n != 1 {
		return usagef("give one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
	}
	var millis int64
	if *datetime != "" {
		if millis, err = parseDatetime(*datetime); err != nil {
			return usageError{err.Error()}
		}
	}
	want := map[string][]int32{} // nil: every partition
	var names []string
	for _, t := range topics {
		name, parts, hasParts := strings.Cut(t, ":")
		if name == "" {
			return usagef("--topic %q: no topic name", t)
		}
		if _, seen := want[name]; !seen {
			names = append(names, name)
			want[name] = nil
		}
		if hasParts {
			for _, p := range strings.Split(parts, ",") {
				n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
				if err != nil || n < 0 {
					return usagef("--topic %q: %q is not a partition", t, p)
				}
				want[name] = append(want[name], int32(n))
			}
		}
	}

	var plan []resetPlan
	var errs itemErrs
	err = c.withAdmin(func(ctx context.Context, adm *kadm.Client) error {
		described, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return c.reachErr(err)
		}
		// A group that does not exist yet may be given offsets, as with
		// kafka-consumer-groups.sh: its consumers start from them.
		state := ""
		if d, ok := described[group]; ok {
			if err := kafkaErr(d.Err, d.ErrMessage); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
				return fmt.Errorf("group %s: %w", group, err)
			}
			state = d.State
		}
		if *execute && state != "" && state != "Empty" && state != "Dead" {
			return fmt.Errorf("group %s is %s: offsets can be reset only while it is inactive (stop its consumers first)", group, state)
		}
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return c.reachErr(err)
		}
		if err := committed.Error(); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return fmt.Errorf("group %s: fetch offsets: %w", group, err)
		}
		if *allTopics {
			for _, t := range committed.Partitions().Sorted() {
				names = append(names, t.Topic)
				want[t.Topic] = t.Partitions
			}
		}
		if len(names) == 0 {
			return fmt.Errorf("group %s has no committed offsets", group)
		}
		meta, err := adm.ListTopics(ctx, names...)
		if err != nil {
			return c.reachErr(err)
		}
		for _, t := range names {
			d, ok := meta[t]
			if !ok {
				return fmt.Errorf("topic %s: %w", t, kerr.UnknownTopicOrPartition)
			}
			if d.Err != nil {
				return fmt.Errorf("topic %s: %w", t, d.Err)
			}
			parts := want[t]
			if parts == nil {
				for _, p := range d.Partitions.Sorted() {
					parts = append(parts, p.Partition)
				}
			}
			sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
			for _, p := range parts {
				if _, ok := d.Partitions[p]; !ok {
					return fmt.Errorf("topic %s partition %d: %w", t, p, kerr.UnknownTopicOrPartition)
				}
				cur := int64(-1)
				if o, ok := committed.Lookup(t, p); ok && o.Err == nil {
					cur = o.At
				}
				plan = append(plan, resetPlan{Group: group, Topic: t, Partition: p, Current: cur})
			}
		}
		starts, err := adm.ListStartOffsets(ctx, names...)
		if err != nil {
			return c.reachErr(err)
		}
		ends, err := adm.ListEndOffsets(ctx, names...)
		if err != nil {
			return c.reachErr(err)
		}
		var after kadm.ListedOffsets
		if *datetime != "" {
			if after, err = adm.ListOffsetsAfterMilli(ctx, millis, names...); err != nil {
				return c.reachErr(err)
			}
		}
		for i := range plan {
			p := &plan[i]
			start, ok1 := starts.Lookup(p.Topic, p.Partition)
			end, ok2 := ends.Lookup(p.Topic, p.Partition)
			switch {
			case !ok1 || !ok2:
				return fmt.Errorf("topic %s partition %d: no offsets listed", p.Topic, p.Partition)
			case start.Err != nil:
				return fmt.Errorf("topic %s partition %d: %w", p.Topic, p.Partition, start.Err)
			case end.Err != nil:
				return fmt.Errorf("topic %s partition %d: %w", p.Topic, p.Partition, end.Err)
			}
			clamp := func(o int64) int64 { return max(start.Offset, min(end.Offset, o)) }
			switch {
			case *earliest:
				p.New = start.Offset
			case *latest:
				p.New = end.Offset
			case toOffset.set:
				p.New = clamp(toOffset.v)
			case shiftBy.set:
				if p.Current < 0 {
					return fmt.Errorf("topic %s partition %d: --shift-by needs a committed offset, and the group has none", p.Topic, p.Partition)
				}
				p.New = clamp(p.Current + shiftBy.v)
			default:
				o, ok := after.Lookup(p.Topic, p.Partition)
				switch {
				case !ok:
					return fmt.Errorf("topic %s partition %d: no offset listed for the time", p.Topic, p.Partition)
				case o.Err != nil:
					return fmt.Errorf("topic %s partition %d: %w", p.Topic, p.Partition, o.Err)
				case o.Offset < 0:
					p.New = end.Offset
				default:
					p.New = clamp(o.Offset)
				}
			}
		}

		if !*execute {
			return nil
		}
		offsets := kadm.Offsets{}
		for _, p := range plan {
			offsets.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.New, LeaderEpoch: -1})
		}
		resps, err := adm.CommitOffsets(ctx, group, offsets)
		if err != nil {
			return c.reachErr(err)
		}
		for i := range plan {
			p := &plan[i]
			if r, ok := resps.Lookup(p.Topic, p.Partition); ok {
				p.Error = errs.add(r.Err, "topic %s partition %d", p.Topic, p.Partition)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.report(plan, func() {
		tb := newTable(c.stdout, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET")
		for _, p := range plan {
			cur := any(p.Current)
			if p.Current < 0 {
				cur = "-"
			}
			tb.row(p.Group, p.Topic, p.Partition, cur, p.New)
		}
		tb.flush()
		if !*execute {
			fmt.Fprintln(c.stderr, "dry run: nothing committed; run again with --execute to apply")
		}
	}, errs)
}

// parseDatetime reads --to-datetime: RFC 3339, Kafka's
// yyyy-MM-ddTHH:mm:ss[.SSS] in local time, a date, or Unix milliseconds.
func parseDatetime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("--to-datetime %q: want RFC 3339, yyyy-mm-ddThh:mm:ss[.sss], yyyy-mm-dd or Unix milliseconds", s)
}
