package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicResult is one topic's outcome in create, alter and delete.
type topicResult struct {
	Topic      string `json:"topic"`
	ID         string `json:"id,omitempty"`
	Partitions int32  `json:"partitions,omitempty"`
	Error      string `json:"error,omitempty"`
}

func topicCreate(c *cli, args []string) error {
	f := c.flags("TOPIC... [flags]", `
Create topics. Without --partitions the broker's default (--num-partitions)
applies. Configs are topic configs, as retention.ms=86400000,
cleanup.policy=compact or kv.index.enabled=true.`)
	partitions := f.Int("partitions", -1, "partition `count` (default: the broker's)")
	rf := f.Int("replication-factor", -1, "replication `factor` (floe keeps data in object storage and accepts only -1 or 1)")
	var configs pairsFlag
	f.Var(&configs, "config", "topic config `key=value` (repeatable)")
	dry := f.Bool("dry-run", false, "validate only: ask the broker whether it would create the topics")
	topics, err := f.parseSome(args, "topic")
	if err != nil {
		return err
	}
	cfg := map[string]*string{}
	for _, kv := range configs {
		cfg[kv.k] = &kv.v
	}
	resps, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.CreateTopicResponses, error) {
		create := adm.CreateTopics
		if *dry {
			create = adm.ValidateCreateTopics
		}
		return create(ctx, int32(*partitions), int16(*rf), cfg, topics...)
	})
	if err != nil {
		return err
	}
	var out []topicResult
	var errs itemErrs
	for _, t := range topics {
		r := resps[t]
		err := kafkaErr(r.Err, r.ErrMessage)
		out = append(out, topicResult{Topic: t, ID: topicID(r.ID), Partitions: r.NumPartitions, Error: errs.add(err, "topic %s", t)})
	}
	verb := "created"
	if *dry {
		verb = "valid"
	}
	return c.reportTopics(out, verb, true, errs)
}

// reportTopics prints the outcome of topic create, alter or delete: each
// topic's status, verb or failed, and with ids its id and partitions.
func (c *cli) reportTopics(out []topicResult, verb string, ids bool, errs []error) error {
	return c.report(out, func() {
		if ids {
			tb := newTable(c.stdout, "TOPIC", "ID", "PARTITIONS", "STATUS")
			for _, r := range out {
				tb.row(r.Topic, r.ID, r.Partitions, status(verb, r.Error))
			}
			tb.flush()
			return
		}
		tb := newTable(c.stdout, "TOPIC", "STATUS")
		for _, r := range out {
			tb.row(r.Topic, status(verb, r.Error))
		}
		tb.flush()
	}, errs)
}

// topicID prints a topic id, "" when the broker sent none.
func topicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	return id.String()
}

// topicSummary is one topic in topic list.
type topicSummary struct {
	Topic             string `json:"topic"`
	ID                string `json:"id,omitempty"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal,omitempty"`
	Error             string `json:"error,omitempty"`
}

func topicList(c *cli, args []string) error {
	f := c.flags("[TOPIC...] [flags]", "List topics (all of them, or those named), sorted by name.")
	internal := f.Bool("internal", false, "include internal topics (__consumer_offsets...)")
	topics, err := f.parse(args)
	if err != nil {
		return err
	}
	details, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.TopicDetails, error) {
		list := adm.ListTopics
		if *internal {
			list = adm.ListTopicsWithInternal
		}
		return list(ctx, topics...)
	})
	if err != nil {
		return err
	}
	out := []topicSummary{}
	var errs itemErrs
	for _, name := range details.Names() {
		d := details[name]
		out = append(out, topicSummary{Topic: name, ID: topicID(d.ID), Partitions: len(d.Partitions), ReplicationFactor: d.Partitions.NumReplicas(),
			Internal: d.IsInternal, Error: errs.add(d.Err, "topic %s", name)})
	}
	return c.report(out, func() {
		tb := newTable(c.stdout, "TOPIC", "PARTITIONS", "REPLICAS", "ID")
		for _, s := range out {
			if s.Error == "" {
				tb.row(s.Topic, s.Partitions, s.ReplicationFactor, s.ID)
			}
		}
		tb.flush()
	}, errs)
}

// topicDescription is topic describe's answer for one topic.
type topicDescription struct {
	Topic      string            `json:"topic"`
	ID         string            `json:"id,omitempty"`
	Internal   bool              `json:"internal"`
	Configs    []configEntry     `json:"configs"`
	Partitions []partitionDetail `json:"partitions"`
}

type configEntry struct {
	Key       string  `json:"key"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive,omitempty"`
}

type partitionDetail struct {
	Partition     int32   `json:"partition"`
	Leader        int32   `json:"leader"`
	Replicas      []int32 `json:"replicas"`
	LogStart      int64   `json:"log_start_offset"`
	HighWatermark int64   `json:"high_watermark"`
	Error         string  `json:"error,omitempty"`
}

func topicDescribe(c *cli, args []string) error {
	f := c.flags("TOPIC... [flags]", `
Show topics: id, configs (every config with its source: DYNAMIC_TOPIC_CONFIG
for one set on the topic, DEFAULT_CONFIG otherwise) and partitions with
their log start offsets and high watermarks.`)
	nonDefault := f.Bool("non-default", false, "show only the configs set on the topic")
	topics, err := f.parseSome(args, "topic")
	if err != nil {
		return err
	}
	var out []topicDescription
	var errs itemErrs
	err = c.withAdmin(func(ctx context.Context, adm *kadm.Client) error {
		details, err := adm.ListTopicsWithInternal(ctx, topics...)
		if err != nil {
			return c.reachErr(err)
		}
		var found []string
		for _, t := range topics {
			d, ok := details[t]
			switch {
			case !ok:
				errs.add(kerr.UnknownTopicOrPartition, "topic %s", t)
			case d.Err != nil:
				errs.add(d.Err, "topic %s", t)
			default:
				found = append(found, t)
			}
		}
		if len(found) == 0 {
			return errors.Join(errs...)
		}
		configs, err := adm.DescribeTopicConfigs(ctx, found...)
		if err != nil {
			return c.reachErr(err)
		}
		starts, err := adm.ListStartOffsets(ctx, found...)
		if err != nil {
			return c.reachErr(err)
		}
		ends, err := adm.ListEndOffsets(ctx, found...)
		if err != nil {
			return c.reachErr(err)
		}
		for _, t := range found {
			d := details[t]
			td := topicDescription{Topic: t, ID: topicID(d.ID), Internal: d.IsInternal, Configs: []configEntry{}}
			if rc, err := configs.On(t, nil); err != nil || rc.Err != nil {
				if err == nil {
					err = kafkaErr(rc.Err, rc.ErrMessage)
				}
				errs.add(err, "topic %s configs", t)
			} else {
				for _, cf := range rc.Configs {
					if *nonDefault && cf.Source != kmsg.ConfigSourceDynamicTopicConfig {
						continue
					}
					td.Configs = append(td.Configs, configEntry{Key: cf.Key, Value: cf.Value, Source: cf.Source.String(), Sensitive: cf.Sensitive})
				}
				sort.Slice(td.Configs, func(i, j int) bool { return td.Configs[i].Key < td.Configs[j].Key })
			}
			for _, p := range d.Partitions.Sorted() {
				pd := partitionDetail{Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, LogStart: -1, HighWatermark: -1, Error: errString(p.Err)}
				if o, ok := starts.Lookup(t, p.Partition); ok && o.Err == nil {
					pd.LogStart = o.Offset
				}
				if o, ok := ends.Lookup(t, p.Partition); ok && o.Err == nil {
					pd.HighWatermark = o.Offset
				}
				td.Partitions = append(td.Partitions, pd)
			}
			out = append(out, td)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.report(out, func() {
		for i, td := range out {
			if i > 0 {
				fmt.Fprintln(c.stdout)
			}
			tb := newTable(c.stdout)
			tb.row("NAME", td.Topic)
			tb.row("ID", td.ID)
			tb.row("PARTITIONS", len(td.Partitions))
			if td.Internal {
				tb.row("INTERNAL", true)
			}
			tb.flush()
			fmt.Fprintln(c.stdout, "\nCONFIGS")
			tb = newTable(c.stdout, "KEY", "VALUE", "SOURCE")
			for _, cf := range td.Configs {
				v := "<null>"
				if cf.Sensitive {
					v = "<sensitive>"
				} else if cf.Value != nil {
					v = *cf.Value
				}
				tb.row(cf.Key, v, cf.Source)
			}
			tb.flush()
			fmt.Fprintln(c.stdout, "\nPARTITIONS")
			tb = newTable(c.stdout, "PARTITION", "LEADER", "REPLICAS", "LOG-START-OFFSET", "HIGH-WATERMARK")
			for _, p := range td.Partitions {
				tb.row(p.Partition, p.Leader, joinInts(p.Replicas), p.LogStart, p.HighWatermark)
			}
			tb.flush()
		}
	}, errs)
}

func topicAlter(c *cli, args []string) error {
	f := c.flags("TOPIC... [flags]", `
Change topics: set configs (--config, incrementally: other configs keep
their values), remove them back to their defaults (--delete-config), or
raise the partition count (--partitions, the new total; partitions can only
be added).`)
	var set pairsFlag
	var del listFlag
	f.Var(&set, "config", "set topic config `key=value` (repeatable)")
	f.Var(&del, "delete-config", "remove topic config `key`, back to its default (repeatable)")
	partitions := f.Int("partitions", 0, "raise the partition count to `N` (CreatePartitions)")
	dry := f.Bool("dry-run", false, "validate only")
	topics, err := f.parseSome(args, "topic")
	if err != nil {
		return err
	}
	if len(set) == 0 && len(del) == 0 && *partitions == 0 {
		return usagef("nothing to change: give --config, --delete-config or --partitions")
	}
	if *partitions < 0 {
		return usagef("--partitions must be positive")
	}
	failed := map[string]error{}
	err = c.withAdmin(func(ctx context.Context, adm *kadm.Client) error {
		if len(set)+len(del) > 0 {
			var alters []kadm.AlterConfig
			for _, kv := range set {
				alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv.k, Value: &kv.v})
			}
			for _, k := range del {
				alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
			alter := adm.AlterTopicConfigs
			if *dry {
				alter = adm.ValidateAlterTopicConfigs
			}
			resps, err := alter(ctx, alters, topics...)
			if err != nil {
				return c.reachErr(err)
			}
			for _, r := range resps {
				if err := kafkaErr(r.Err, r.ErrMessage); err != nil {
					failed[r.Name] = fmt.Errorf("topic %s configs: %w", r.Name, err)
				}
			}
		}
		if *partitions > 0 {
			var todo []string
			for _, t := range topics {
				if failed[t] == nil {
					todo = append(todo, t)
				}
			}
			if len(todo) > 0 {
				update := adm.UpdatePartitions
				if *dry {
					update = adm.ValidateUpdatePartitions
				}
				resps, err := update(ctx, *partitions, todo...)
				if err != nil {
					if errors.Is(err, kerr.UnsupportedVersion) || strings.Contains(err.Error(), "too old") {
						return fmt.Errorf("add partitions: the broker does not serve CreatePartitions: %w", err)
					}
					return c.reachErr(err)
				}
				for _, r := range resps {
					if err := kafkaErr(r.Err, r.ErrMessage); err != nil {
						failed[r.Topic] = fmt.Errorf("topic %s partitions: %w", r.Topic, err)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var out []topicResult
	var errs []error
	for _, t := range topics {
		out = append(out, topicResult{Topic: t, Error: errString(failed[t])})
		if failed[t] != nil {
			errs = append(errs, failed[t])
		}
	}
	verb := "altered"
	if *dry {
		verb = "valid"
	}
	return c.reportTopics(out, verb, false, errs)
}

func topicDelete(c *cli, args []string) error {
	f := c.flags("TOPIC... [flags]", "Delete topics and all their records.")
	topics, err := f.parseSome(args, "topic")
	if err != nil {
		return err
	}
	resps, err := request(c, func(ctx context.Context, adm *kadm.Client) (kadm.DeleteTopicResponses, error) {
		return adm.DeleteTopics(ctx, topics...)
	})
	if err != nil {
		return err
	}
	var out []topicResult
	var errs itemErrs
	for _, t := range topics {
		r, ok := resps[t]
		err := kafkaErr(r.Err, r.ErrMessage)
		if !ok {
			err = kerr.UnknownTopicOrPartition
		}
		out = append(out, topicResult{Topic: t, ID: topicID(r.ID), Error: errs.add(err, "topic %s", t)})
	}
	return c.reportTopics(out, "deleted", false, errs)
}
