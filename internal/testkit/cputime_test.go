package testkit

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// ProcessCPU of this process grows while it computes, and fails for a
// process that does not exist.
func TestProcessCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ProcessCPU reads Linux's /proc")
	}
	start, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if start <= 0 {
		t.Fatalf("ProcessCPU = %v at the start of a running test", start)
	}
	x := 0
	CheckFor(t, 10*time.Second, 0, func() error {
		for i := range 1_000_000 {
			x += i ^ x
		}
		now, err := ProcessCPU(os.Getpid())
		if err == nil && now <= start {
			err = fmt.Errorf("ProcessCPU stayed at %v after computing (from %v)", now, start)
		}
		return err
	})
	_ = x
	if _, err := ProcessCPU(-1); err == nil {
		t.Errorf("ProcessCPU(-1) did not fail")
	}
}
