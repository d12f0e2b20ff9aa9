package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumedRecord is a record as consume --json prints it, one JSON object
// a line.
type consumedRecord struct {
	Topic     string         `json:"topic"`
	Partition int32          `json:"partition"`
	Offset    int64          `json:"offset"`
	Timestamp int64          `json:"timestamp"`
	Key       *string        `json:"key"`
	Value     *string        `json:"value"`
	Headers   []headerRecord `json:"headers"`
}

type headerRecord struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func consume(c *cli, args []string) error {
	f := c.flags("TOPIC [flags]", `
Consume records and print each with --format, until interrupted, --count
records, or with -e the end of the log as it was when consume started.
Without --group the consumer commits nothing; with --group it joins the
group and commits what it printed (--from-beginning then applies only to
partitions the group has no offset for).

--format is printed for each record, with (as kcat):
  %t topic  %p partition  %o offset  %T timestamp (Unix ms)
  %d delivery count (share consume; 0 here)
  %k key  %v or %s value  %h headers (k=v,k=v)  %K key length  %S value length
  \n newline  \t tab  \\ backslash  %% percent
--json prints one JSON object per record and line instead.`)
	exitAtEnd := f.Bool("exit-at-end", false, "exit at the end of the log")
	f.BoolVar(exitAtEnd, "e", false, "exit at the end of the log (same as --exit-at-end)")
	fromBeginning := f.Bool("from-beginning", true, "start at the log start (false: at its end)")
	group := f.String("group", "", "consume as member of consumer `group`, committing offsets")
	format := f.String("format", `%v\n`, "output `format` of each record")
	count := f.Int("count", 0, "exit after `N` records (0: no limit)")
	f.IntVar(count, "n", 0, "exit after `N` records (same as --count)")
	partition := f.Int("partition", -1, "consume `partition` only (not with --group)")
	topic, err := f.parseOne(args, "topic")
	if err != nil {
		return err
	}
	if *partition >= 0 && *group != "" {
		return usagef("--partition and --group do not go together")
	}
	if *count < 0 {
		return usagef("--count must not be negative")
	}
	fmtr, err := parseFormat(*format)
	if err != nil {
		return usageError{err.Error()}
	}

	start := kgo.NewOffset().AtStart()
	if !*fromBeginning {
		start = kgo.NewOffset().AtEnd()
	}
	// Control records are kept (and not printed) so that -e sees the
	// offsets of transaction markers, which may end a log.
	opts := []kgo.Opt{kgo.KeepControlRecords()}
	switch {
	case *partition >= 0:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(*partition): start}}))
	case *group != "":
		opts = append(opts, kgo.ConsumerGroup(*group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start), kgo.DisableAutoCommit())
	default:
		opts = append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start))
	}
	cl, err := c.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// The log ends (and, for -e, where each partition is done) as of now.
	ctx, cancel := c.reqCtx()
	ends, err := adm.ListEndOffsets(ctx, topic)
	var starts kadm.ListedOffsets
	if err == nil && *exitAtEnd {
		starts, err = adm.ListStartOffsets(ctx, topic)
	}
	var committed kadm.OffsetResponses
	if err == nil && *exitAtEnd && *group != "" {
		committed, err = adm.FetchOffsets(ctx, *group)
	}
	cancel()
	if err != nil {
		return c.reachErr(err)
	}
	if o, ok := ends.Lookup(topic, -1); ok && o.Err != nil {
		return fmt.Errorf("topic %s: %w", topic, o.Err)
	}
	if *partition >= 0 {
		if _, ok := ends.Lookup(topic, int32(*partition)); !ok {
			return fmt.Errorf("topic %s partition %d: %w", topic, *partition, kerr.UnknownTopicOrPartition)
		}
	}
	need := map[int32]int64{} // partition -> end offset still to reach, with -e
	if *exitAtEnd {
		ends.Each(func(o kadm.ListedOffset) {
			if *partition >= 0 && o.Partition != int32(*partition) {
				return
			}
			if o.Err != nil {
				need[o.Partition] = -1 // reported below by the fetch
				return
			}
			s, _ := starts.Lookup(topic, o.Partition)
			from := s.Offset
			if !*fromBeginning {
				from = o.Offset
			}
			if cm, ok := committed.Lookup(topic, o.Partition); ok && cm.Err == nil && cm.At >= 0 {
				from = cm.At
			}
			if from < o.Offset {
				need[o.Partition] = o.Offset
			}
		})
		if len(need) == 0 {
			return nil
		}
	}

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
		var done []*kgo.Record
		stop := false
		fetches.EachRecord(func(r *kgo.Record) {
			if stop {
				return
			}
			done = append(done, r)
			if end, ok := need[r.Partition]; ok && r.Offset+1 >= end {
				delete(need, r.Partition)
			}
			if r.Attrs.IsControl() {
				return
			}
			if c.g.json {
				b, _ := json.Marshal(toConsumed(r))
				w.Write(b)
				w.WriteByte('\n')
			} else {
				fmtr(w, r)
			}
			printed++
			if *count > 0 && printed >= *count {
				stop = true
			}
		})
		if err := w.Flush(); err != nil {
			return err
		}
		if *group != "" && len(done) > 0 {
			if err := cl.CommitRecords(c.ctx, done...); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
		}
		if stop || *exitAtEnd && len(need) == 0 {
			return nil
		}
	}
}

// fetchErr is the first partition error of a poll, naming its partition.
func fetchErr(fetches kgo.Fetches) error {
	var ferr error
	fetches.EachError(func(t string, p int32, err error) {
		if ferr == nil {
			ferr = fmt.Errorf("topic %s partition %d: %w", t, p, err)
		}
	})
	return ferr
}

// toConsumed is r as consume --json prints it.
func toConsumed(r *kgo.Record) consumedRecord {
	str := func(b []byte) *string {
		if b == nil {
			return nil
		}
		s := string(b)
		return &s
	}
	cr := consumedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		Key: str(r.Key), Value: str(r.Value), Headers: []headerRecord{}}
	for _, h := range r.Headers {
		cr.Headers = append(cr.Headers, headerRecord{h.Key, string(h.Value)})
	}
	return cr
}

// parseFormat compiles a --format string into a function printing a
// record.
func parseFormat(format string) (func(w *bufio.Writer, r *kgo.Record), error) {
	var parts []func(w *bufio.Writer, r *kgo.Record)
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			s := lit.String()
			parts = append(parts, func(w *bufio.Writer, _ *kgo.Record) { w.WriteString(s) })
			lit.Reset()
		}
	}
	add := func(fn func(w *bufio.Writer, r *kgo.Record)) { flush(); parts = append(parts, fn) }
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch != '%' && ch != '\\' || i+1 == len(format) {
			if ch == '%' {
				return nil, errors.New("--format: a lone % at the end (write %% for a percent sign)")
			}
			lit.WriteByte(ch)
			continue
		}
		i++
		next := format[i]
		if ch == '\\' {
			switch next {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '\\':
				lit.WriteByte('\\')
			case '0':
				lit.WriteByte(0)
			default:
				lit.WriteByte('\\')
				lit.WriteByte(next)
			}
			continue
		}
		switch next {
		case '%':
			lit.WriteByte('%')
		case 't':
			add(func(w *bufio.Writer, r *kgo.Record) { w.WriteString(r.Topic) })
		case 'p':
			add(func(w *bufio.Writer, r *kgo.Record) { w.WriteString(strconv.Itoa(int(r.Partition))) })
		case 'o':
			add(func(w *bufio.Writer, r *kgo.Record) { w.WriteString(strconv.FormatInt(r.Offset, 10)) })
		case 'T':
			add(func(w *bufio.Writer, r *kgo.Record) { w.WriteString(strconv.FormatInt(r.Timestamp.UnixMilli(), 10)) })
		case 'd':
			add(func(w *bufio.Writer, r *kgo.Record) { w.WriteString(strconv.Itoa(int(r.DeliveryCount()))) })
		case 'k':
			add(func(w *bufio.Writer, r *kgo.Record) { w.Write(r.Key) })
		case 'v', 's':
			add(func(w *bufio.Writer, r *kgo.Record) { w.Write(r.Value) })
		case 'K':
			add(func(w *bufio.Writer, r *kgo.Record) { w.WriteString(nullLen(r.Key)) })
		case 'S':
			add(func(w *bufio.Writer, r *kgo.Record) { w.WriteString(nullLen(r.Value)) })
		case 'h':
			add(func(w *bufio.Writer, r *kgo.Record) {
				for j, h := range r.Headers {
					if j > 0 {
						w.WriteByte(',')
					}
					w.WriteString(h.Key)
					w.WriteByte('=')
					w.Write(h.Value)
				}
			})
		default:
			return nil, fmt.Errorf("--format: unknown %%%c (know %%t %%p %%o %%T %%d %%k %%v %%s %%h %%K %%S %%%%)", next)
		}
	}
	flush()
	return func(w *bufio.Writer, r *kgo.Record) {
		for _, p := range parts {
			p(w, r)
		}
	}, nil
}

// nullLen is a key's or value's length, -1 for null, as kcat's %K and %S.
func nullLen(b []byte) string {
	if b == nil {
		return "-1"
	}
	return strconv.Itoa(len(b))
}
