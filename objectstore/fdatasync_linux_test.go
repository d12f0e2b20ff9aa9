package objectstore

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data and the metadata needed to read it back (not
// its times), as Pebble syncs its WAL on Linux.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
