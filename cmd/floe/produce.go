package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producedRange is what produce wrote to one partition.
type producedRange struct {
	Partition   int32 `json:"partition"`
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
	Records     int   `json:"records"`
}

// produceResult is produce's answer.
type produceResult struct {
	Topic      string          `json:"topic"`
	Records    int             `json:"records"`
	Partitions []producedRange `json:"partitions"`
}

func produce(c *cli, args []string) error {
	f := c.flags("TOPIC [flags]", `
Produce one record per line of stdin (or --file), in order, and wait until
every record is acknowledged (acks=all, idempotent). With --key-separator
each line is split at its first separator into key and value (a line
without it is a value with no key). Records without --partition go where
the Java client would put them: by the key's murmur2 hash, else spread.
Prints, per partition, the offsets written.`)
	file := f.String("file", "", "read records from `path` instead of stdin")
	sep := f.String("key-separator", "", "split each line into key and value at the first `separator`")
	var headers pairsFlag
	f.Var(&headers, "H", "record header `key=value` (repeatable)")
	f.Var(&headers, "header", "record header `key=value` (repeatable; same as -H)")
	partition := f.Int("partition", -1, "produce to `partition` (default: the partitioner's pick)")
	tombstone := f.Bool("null-empty", false, "an empty value is a null value: a tombstone on compacted topics")
	topic, err := f.parseOne(args, "topic")
	if err != nil {
		return err
	}
	in := c.stdin
	if *file != "" {
		fh, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer fh.Close()
		in = fh
	}
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.RecordRetries(10)}
	if *partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := c.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	var (
		mu     sync.Mutex
		ranges = map[int32]*producedRange{}
		first  error
		count  int
	)
	done := func(r *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if first == nil {
				first = err
			}
			return
		}
		pr := ranges[r.Partition]
		if pr == nil {
			pr = &producedRange{Partition: r.Partition, FirstOffset: r.Offset, LastOffset: r.Offset}
			ranges[r.Partition] = pr
		}
		pr.FirstOffset, pr.LastOffset = min(pr.FirstOffset, r.Offset), max(pr.LastOffset, r.Offset)
		pr.Records++
		count++
	}
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
	var hdrs []kgo.RecordHeader
	for _, h := range headers {
		hdrs = append(hdrs, kgo.RecordHeader{Key: h.k, Value: []byte(h.v)})
	}
	br := bufio.NewReaderSize(in, 1<<20)
	var readErr error
	for {
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			readErr = err
			break
		}
		if line == "" && err == io.EOF {
			break
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		r := &kgo.Record{Headers: hdrs}
		value := line
		if *sep != "" {
			if k, v, ok := strings.Cut(line, *sep); ok {
				r.Key, value = []byte(k), v
			}
		}
		if value != "" || !*tombstone {
			r.Value = []byte(value)
		}
		if *partition >= 0 {
			r.Partition = int32(*partition)
		}
		if e := failed(); e != nil {
			break
		}
		cl.Produce(c.ctx, r, done)
		if err == io.EOF {
			break
		}
	}
	ctx, cancel := c.reqCtx()
	defer cancel()
	if err := cl.Flush(ctx); err != nil {
		return c.reachErr(err)
	}
	if readErr != nil {
		return fmt.Errorf("read records: %w", readErr)
	}
	if err := failed(); err != nil {
		return c.reachErr(fmt.Errorf("produce to %s: %w", topic, err))
	}
	out := produceResult{Topic: topic, Records: count, Partitions: []producedRange{}}
	for _, r := range ranges {
		out.Partitions = append(out.Partitions, *r)
	}
	sort.Slice(out.Partitions, func(i, j int) bool { return out.Partitions[i].Partition < out.Partitions[j].Partition })
	if c.g.json {
		return printJSON(c.stdout, out)
	}
	tb := newTable(c.stdout, "TOPIC", "PARTITION", "FIRST-OFFSET", "LAST-OFFSET", "RECORDS")
	for _, r := range out.Partitions {
		tb.row(topic, r.Partition, r.FirstOffset, r.LastOffset, r.Records)
	}
	tb.flush()
	if count == 0 {
		fmt.Fprintln(c.stderr, "no records read")
	}
	return nil
}
