package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups (KIP-932, Kafka's queues): floe share list, describe,
// consume, reset-offsets and delete, as kafka-share-groups.sh and
// kafka-console-share-consumer.sh do.

func shareList(c *cli, args []string) error {
	f := c.flags("[flags]", "List share groups, sorted by name.")
	if err := f.parseNoArgs(args); err != nil {
		return err
	}
	groups, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.ListedGroups, error) {
		return adm.ListGroupsByType(ctx, []string{"share"})
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
		tb := newTable(c.stdout, "GROUP", "STATE", "COORDINATOR")
		for _, g := range out {
			tb.row(g.Group, g.State, g.Coordinator)
		}
		tb.flush()
	}, nil)
}

// shareDescription is share describe's answer for one group.
type shareDescription struct {
	Group       string        `json:"group"`
	Coordinator int32         `json:"coordinator"`
	State       string        `json:"state"`
	GroupEpoch  int32         `json:"group_epoch"`
	Assignor    string        `json:"assignor"`
	Members     []shareMember `json:"members"`
	Offsets     []shareOffset `json:"offsets"`
	TotalLag    int64         `json:"total_lag"`
	Error       string        `json:"error,omitempty"`
}

type shareMember struct {
	MemberID   string   `json:"member_id"`
	ClientID   string   `json:"client_id"`
	Host       string   `json:"host"`
	Epoch      int32    `json:"member_epoch"`
	Subscribed []string `json:"subscribed_topics"`
	Assigned   []string `json:"assigned_partitions"` // topic:p,p,...
}

type shareOffset struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	StartOffset int64  `json:"start_offset"` // -1: no state yet
	Lag         int64  `json:"lag"`          // -1: unknown
	Error       string `json:"error,omitempty"`
}

func shareDescribe(c *cli, args []string) error {
	f := c.flags("GROUP... [flags]", `
Show share groups: state, members and their assigned partitions, and for
every share-partition its start offset (the first record not yet accepted,
rejected or archived) and its lag (the records after it not yet done with),
as kafka-share-groups.sh --describe.`)
	groups, err := f.parseSome(args, "group")
	if err != nil {
		return err
	}
	type answers struct {
		groups  kadm.DescribedShareGroups
		offsets kadm.DescribedShareGroupsOffsets
	}
	a, err := request(c, func(ctx context.Context, adm *kadm.Client) (answers, error) {
		gs, err := adm.DescribeShareGroups(ctx, groups...)
		if err != nil {
			return answers{}, err
		}
		os, err := adm.DescribeShareGroupOffsets(ctx, groups...)
		return answers{gs, os}, err
	})
	if err != nil {
		return err
	}
	out := []shareDescription{}
	var errs itemErrs
	for _, name := range groups {
		g, ok := a.groups[name]
		if !ok {
			errs.add(kerr.GroupIDNotFound, "group %s", name)
			continue
		}
		d := shareDescription{Group: name, Coordinator: g.Coordinator.NodeID, State: g.GroupState, GroupEpoch: g.GroupEpoch,
			Assignor: g.Assignor, Members: []shareMember{}, Offsets: []shareOffset{}}
		d.Error = errs.add(g.Err, "group %s", name)
		for _, m := range g.Members {
			sm := shareMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Epoch: m.MemberEpoch,
				Subscribed: append([]string{}, m.SubscribedTopicNames...), Assigned: []string{}}
			for _, t := range m.Assignment.Sorted() {
				sm.Assigned = append(sm.Assigned, t.Topic+":"+joinInts(t.Partitions))
			}
			d.Members = append(d.Members, sm)
		}
		if o, ok := a.offsets[name]; ok {
			if d.Error == "" {
				d.Error = errs.add(o.Err, "group %s", name)
			}
			o.Offsets.Each(func(so kadm.ShareOffset) {
				d.Offsets = append(d.Offsets, shareOffset{Topic: so.Topic, Partition: so.Partition, StartOffset: so.StartOffset,
					Lag: so.Lag, Error: errs.add(so.Err, "group %s topic %s partition %d", name, so.Topic, so.Partition)})
				if so.Lag > 0 {
					d.TotalLag += so.Lag
				}
			})
		}
		slices.SortFunc(d.Offsets, func(x, y shareOffset) int {
			if c := strings.Compare(x.Topic, y.Topic); c != 0 {
				return c
			}
			return int(x.Partition - y.Partition)
		})
		out = append(out, d)
	}
	return c.report(out, func() { c.printShares(out) }, errs)
}

// printShares prints share describe's tables.
func (c *cli) printShares(out []shareDescription) {
	for i, d := range out {
		if i > 0 {
			fmt.Fprintln(c.stdout)
		}
		tb := newTable(c.stdout)
		tb.row("GROUP", d.Group)
		tb.row("COORDINATOR", d.Coordinator)
		tb.row("STATE", d.State)
		tb.row("ASSIGNOR", orDash(d.Assignor))
		tb.row("MEMBERS", len(d.Members))
		tb.row("TOTAL-LAG", d.TotalLag)
		tb.flush()
		if len(d.Members) > 0 {
			fmt.Fprintln(c.stdout)
			tb = newTable(c.stdout, "MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT")
			for _, m := range d.Members {
				tb.row(m.MemberID, orDash(m.ClientID), orDash(m.Host), m.Epoch, orDash(strings.Join(m.Assigned, " ")))
			}
			tb.flush()
		}
		if len(d.Offsets) > 0 {
			fmt.Fprintln(c.stdout)
			tb = newTable(c.stdout, "TOPIC", "PARTITION", "START-OFFSET", "LAG")
			for _, o := range d.Offsets {
				tb.row(o.Topic, o.Partition, dashNeg(o.StartOffset), dashNeg(o.Lag))
			}
			tb.flush()
		}
	}
}

// sharedRecord is a record as share consume --json prints it.
type sharedRecord struct {
	consumedRecord
	DeliveryCount int32 `json:"delivery_count"`
}

func shareConsume(c *cli, args []string) error {
	f := c.flags("TOPIC --group GROUP [flags]", `
Consume records as a member of share group GROUP and print each with
--format: the group's members share the topic's partitions record by record.
Each record printed is acknowledged with --ack: accept (done with), release
(back to the group, delivered again, to this or another member, until the
delivery count limit) or reject (never delivered again). Runs until
interrupted or --count records. A new group starts at the log's end unless
its share.auto.offset.reset config says earliest (--from-beginning sets it
for a group with no state yet).

--format is as consume's, plus %d: the record's delivery count.
--json prints one JSON object per record and line instead.`)
	group := f.String("group", "", "share `group` to consume as a member of (required)")
	ack := f.String("ack", "accept", "how to acknowledge each record printed: `accept`, release or reject")
	format := f.String("format", `%v\n`, "output `format` of each record")
	count := f.Int("count", 0, "exit after `N` records (0: no limit)")
	f.IntVar(count, "n", 0, "exit after `N` records (same as --count)")
	fromBeginning := f.Bool("from-beginning", false, "set the group's share.auto.offset.reset to earliest first")
	topic, err := f.parseOne(args, "topic")
	if err != nil {
		return err
	}
	if *group == "" {
		return usagef("--group is required")
	}
	if *count < 0 {
		return usagef("--count must not be negative")
	}
	status, ok := map[string]kgo.AckStatus{"accept": kgo.AckAccept, "release": kgo.AckRelease, "reject": kgo.AckReject}[*ack]
	if !ok {
		return usagef("--ack %q: want accept, release or reject", *ack)
	}
	fmtr, err := parseFormat(*format)
	if err != nil {
		return usageError{err.Error()}
	}
	if *fromBeginning {
		if err := c.setGroupConfig(*group, "share.auto.offset.reset", "earliest"); err != nil {
			return err
		}
	}
	opts := []kgo.Opt{kgo.ShareGroup(*group), kgo.ConsumeTopics(topic)}
	if *count > 0 {
		// Acquire no more than is printed, and fetch no further ahead:
		// every record acquired counts a delivery, and one not printed
		// would go back to the group one delivery closer to its limit.
		opts = append(opts, kgo.ShareMaxRecords(int32(min(*count, 500))), kgo.ShareMaxRecordsStrict())
	}
	cl, err := c.client(opts...)
	if err != nil {
		return err
	}
	defer func() {
		// Closing sends the acknowledgements still pending.
		cl.Close()
	}()

	w := bufio.NewWriter(c.stdout)
	defer w.Flush()
	printed := 0
	for {
		fetches := cl.PollFetches(c.ctx)
		if fetches.IsClientClosed() || c.ctx.Err() != nil {
			return nil
		}
		if err := fetchErr(fetches); err != nil {
			return c.reachErr(err)
		}
		stop := false
		for _, r := range fetches.Records() {
			if stop {
				// Not printed: back to the group for another member.
				r.Ack(kgo.AckRelease)
				continue
			}
			if c.g.json {
				b, _ := json.Marshal(sharedRecord{toConsumed(r), r.DeliveryCount()})
				w.Write(b)
				w.WriteByte('\n')
			} else {
				fmtr(w, r)
			}
			r.Ack(status)
			printed++
			stop = *count > 0 && printed >= *count
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if err := cl.FlushAcks(c.ctx); err != nil && c.ctx.Err() == nil {
			return fmt.Errorf("acknowledge: %w", err)
		}
		if stop {
			return nil
		}
	}
}

func shareResetOffsets(c *cli, args []string) error {
	f := c.flags("GROUP --topic T... (--to-earliest | --to-latest | --to-offset N) [--execute]", `
Move a share group's start offsets, as kafka-share-groups.sh
--reset-offsets: records before the new start offset are never delivered,
those after it are delivered again. A dry run that prints the plan unless
--execute is given; the group must have no members for --execute.`)
	var topics listFlag
	f.Var(&topics, "topic", "`topic` whose every partition to reset (repeatable)")
	earliest := f.Bool("to-earliest", false, "reset to each partition's log start offset")
	latest := f.Bool("to-latest", false, "reset to each partition's log end offset")
	var toOffset optInt
	f.Var(&toOffset, "to-offset", "reset to `offset` (kept within the log)")
	execute := f.Bool("execute", false, "apply the plan (without it: a dry run)")
	group, err := f.parseOne(args, "group")
	if err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{*earliest, *latest, toOffset.set} {
		if set {
			n++
		}
	}
	if n != 1 {
		return usagef("one of --to-earliest, --to-latest and --to-offset is required")
	}
	if len(topics) == 0 {
		return usagef("--topic is required")
	}
	var plan []resetPlan
	var errs itemErrs
	_, err = request(c, func(ctx context.Context, adm *kadm.Client) (struct{}, error) {
		starts, err := adm.ListStartOffsets(ctx, topics...)
		if err != nil {
			return struct{}{}, err
		}
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return struct{}{}, err
		}
		current, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			return struct{}{}, err
		}
		var listed []kadm.ListedOffset
		ends.Each(func(o kadm.ListedOffset) { listed = append(listed, o) })
		slices.SortFunc(listed, func(x, y kadm.ListedOffset) int {
			if c := strings.Compare(x.Topic, y.Topic); c != 0 {
				return c
			}
			return int(x.Partition - y.Partition)
		})
		for _, t := range topics {
			found := false
			for _, end := range listed {
				if end.Topic != t {
					continue
				}
				found = true
				if end.Err != nil {
					return struct{}{}, fmt.Errorf("topic %s partition %d: %w", t, end.Partition, end.Err)
				}
				start, _ := starts.Lookup(t, end.Partition)
				p := resetPlan{Group: group, Topic: t, Partition: end.Partition, Current: -1}
				if so, ok := current[group].Offsets.Lookup(t, end.Partition); ok && so.Err == nil {
					p.Current = so.StartOffset
				}
				switch {
				case *earliest:
					p.New = start.Offset
				case *latest:
					p.New = end.Offset
				default:
					p.New = max(start.Offset, min(end.Offset, toOffset.v))
				}
				plan = append(plan, p)
			}
			if !found {
				return struct{}{}, fmt.Errorf("topic %s: %w", t, kerr.UnknownTopicOrPartition)
			}
		}
		if !*execute {
			return struct{}{}, nil
		}
		offsets := kadm.Offsets{}
		for _, p := range plan {
			offsets.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.New, LeaderEpoch: -1})
		}
		resps, err := adm.AlterShareGroupOffsets(ctx, group, offsets)
		if err != nil {
			return struct{}{}, err
		}
		for i := range plan {
			p := &plan[i]
			if rerr, ok := resps.Lookup(p.Topic, p.Partition); ok {
				p.Error = errs.add(rerr, "topic %s partition %d", p.Topic, p.Partition)
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		return err
	}
	return c.report(plan, func() {
		tb := newTable(c.stdout, "GROUP", "TOPIC", "PARTITION", "START-OFFSET", "NEW-START-OFFSET")
		for _, p := range plan {
			cur := any(p.Current)
			if p.Current < 0 {
				cur = "-"
			}
			tb.row(p.Group, p.Topic, p.Partition, cur, p.New)
		}
		tb.flush()
		if !*execute {
			fmt.Fprintln(c.stderr, "dry run: nothing changed; run again with --execute to apply")
		}
	}, errs)
}

func shareDelete(c *cli, args []string) error {
	f := c.flags("GROUP... [flags]", "Delete share groups (they must have no members), with their share-partitions' state.")
	groups, err := f.parseSome(args, "group")
	if err != nil {
		return err
	}
	resps, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.DeleteGroupResponses, error) {
		return adm.DeleteGroups(ctx, groups...)
	})
	if err != nil {
		return err
	}
	type deleted struct {
		Group string `json:"group"`
		Error string `json:"error,omitempty"`
	}
	out := []deleted{}
	var errs itemErrs
	for _, g := range groups {
		r, ok := resps[g]
		if !ok {
			continue
		}
		out = append(out, deleted{Group: g, Error: errs.add(r.Err, "group %s", g)})
	}
	return c.report(out, func() {
		tb := newTable(c.stdout, "GROUP", "STATUS")
		for _, d := range out {
			tb.row(d.Group, status("deleted", d.Error))
		}
		tb.flush()
	}, errs)
}

// setGroupConfig sets one config of group (IncrementalAlterConfigs of a
// GROUP resource, KIP-848 and KIP-932), which kadm has no call for.
func (c *cli) setGroupConfig(group, name, value string) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := c.reqCtx()
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return c.reachErr(err)
	}
	if len(resp.Resources) != 1 {
		return fmt.Errorf("%s of group %s: %d resources answered", name, group, len(resp.Resources))
	}
	r := resp.Resources[0]
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	if err := kafkaErr(kerr.ErrorForCode(r.ErrorCode), msg); err != nil {
		return fmt.Errorf("%s of group %s: %w", name, group, err)
	}
	return nil
}
