package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU returns the CPU time the threads of process pid have run so
// far: the sum of Linux's /proc/PID/task/*/schedstat, in nanoseconds
// (/proc/PID/stat counts 10 ms ticks, too coarse for one request). A
// thread that has exited is no longer counted; Go's runtime keeps its
// threads. Benchmarks use it to report what a server they started (MinIO,
// a broker) spent on an operation. It fails where /proc has no schedstat
// (not Linux, or a kernel without schedstats).
func ProcessCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("cpu time of pid %d: no /proc/%d/task/*/schedstat", pid, pid)
	}
	var total time.Duration
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue // the thread exited after the glob
		}
		if err != nil {
			return 0, fmt.Errorf("cpu time of pid %d: %w", pid, err)
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("cpu time of pid %d: empty %s", pid, p)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu time of pid %d: %s: %w", pid, p, err)
		}
		total += time.Duration(ns)
	}
	return total, nil
}
