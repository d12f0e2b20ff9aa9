package fleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/floe-io/floe/loadtest"
)

// Probe observes the coordinator under load. Every field is optional: what
// is not set is left out of the report.
type Probe struct {
	// PID is the leading coordinator's process: its CPU time and RSS are
	// read from /proc (Linux).
	PID int
	// ShardPIDs are the leaders of the other shards of a sharded
	// coordinator: their CPU time and RSS are added to PID's, so that the
	// report's coordinator figures are all the shards' (its peak RSS is
	// then the sum of each process's peak, an upper bound of the total's).
	ShardPIDs []int
	// MetricsURL is the leading coordinator's /metrics, read at the end
	// for its state's size (floe_coordinator_pebble_bytes,
	// floe_coordinator_metadata_bytes). It lists every partition's gauges,
	// so it is read once, after the load.
	MetricsURL string
	// Log reads the coordinator log's stream (JetStreamLog).
	Log func(context.Context) (LogStats, error)
}

// ProcessStats is a coordinator process's resources at one moment.
type ProcessStats struct {
	// CPU is the user and system time it has run so far (10 ms ticks).
	CPU time.Duration
	// RSS is its resident set now, PeakRSS the largest it has had
	// (VmHWM), in bytes.
	RSS, PeakRSS int64
}

// LogStats is the coordinator log's stream at one moment.
type LogStats struct {
	Stream   string
	Bytes    uint64
	Messages uint64
}

// StateStats is the coordinator's state as its /metrics gives it.
type StateStats struct {
	PebbleBytes   float64
	MetadataBytes float64
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times: 100
// on every architecture Go runs Linux on.
const clockTicks = 100

// coordinator reads the coordinator's processes (the leader of every
// shard), summed.
func (p *Probe) coordinator() (ProcessStats, error) {
	var sum ProcessStats
	for _, pid := range append([]int{p.PID}, p.ShardPIDs...) {
		st, err := process(pid)
		if err != nil {
			return sum, err
		}
		sum.CPU += st.CPU
		sum.RSS += st.RSS
		sum.PeakRSS += st.PeakRSS
	}
	return sum, nil
}

// process reads pid's CPU time and memory from /proc.
func process(pid int) (ProcessStats, error) {
	var st ProcessStats
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, fmt.Errorf("coordinator cpu: %w", err)
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return st, fmt.Errorf("coordinator cpu: /proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return st, fmt.Errorf("coordinator cpu: /proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return st, fmt.Errorf("coordinator cpu: /proc/%d/stat: %w", pid, err)
	}
	st.CPU = time.Duration(ut+stime) * time.Second / clockTicks

	fh, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, fmt.Errorf("coordinator rss: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return st, fmt.Errorf("coordinator rss: /proc/%d/status %s: %w", pid, name, err)
		}
		if name == "VmRSS" {
			st.RSS = kb << 10
		} else {
			st.PeakRSS = kb << 10
		}
	}
	return st, sc.Err()
}

// JetStreamLog returns a Probe.Log reading the streams of the coordinator
// logs (<cluster>_coordlog, package coordinator/ha) of clusters (a sharded
// coordinator's shards) on nc, summed.
func JetStreamLog(nc *nats.Conn, clusters ...string) (func(context.Context) (LogStats, error), error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return func(ctx context.Context) (LogStats, error) {
		var sum LogStats
		var names []string
		for _, cluster := range clusters {
			name := cluster + "_coordlog"
			s, err := js.Stream(ctx, name)
			if err != nil {
				return LogStats{}, fmt.Errorf("stream %s: %w", name, err)
			}
			info, err := s.Info(ctx)
			if err != nil {
				return LogStats{}, fmt.Errorf("stream %s info: %w", name, err)
			}
			names = append(names, name)
			sum.Bytes += info.State.Bytes
			sum.Messages += info.State.Msgs
		}
		sum.Stream = strings.Join(names, "+")
		return sum, nil
	}, nil
}

// scrapeState reads the coordinator's state sizes from its /metrics.
func scrapeState(ctx context.Context, url string) (StateStats, error) {
	const pebble, meta = "floe_coordinator_pebble_bytes", "floe_coordinator_metadata_bytes"
	sums, err := loadtest.ScrapeSums(ctx, http.DefaultClient, url, pebble, meta)
	if err != nil {
		return StateStats{}, err
	}
	if len(sums) == 0 {
		return StateStats{}, fmt.Errorf("scrape %s: no %s or %s", url, pebble, meta)
	}
	return StateStats{PebbleBytes: sums[pebble], MetadataBytes: sums[meta]}, nil
}
