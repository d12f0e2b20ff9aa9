// Package pebblelog sends a Pebble database's logs to slog, for every store
// in floe that opens one (the coordinator's state, the groups' state, the HA
// replica's copies).
package pebblelog

import (
	"context"
	"fmt"
	"log/slog"
)

// Logger is a pebble.Logger. Pebble's chatter (flushes, compactions) goes out
// at debug level and its errors at error level. Fatalf logs and panics:
// Pebble calls it when it cannot go on (a failed WAL write leaves its commit
// pipeline broken), and the process must crash and recover from the WAL on
// restart rather than keep serving.
type Logger struct {
	log *slog.Logger
	who string
}

// New returns a Logger writing to log (nil: nowhere), its messages and its
// panic naming who, the store that owns the database.
func New(log *slog.Logger, who string) Logger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return Logger{log: log, who: who}
}

// Infof logs Pebble's informational messages at debug level, formatting
// them only when that level is on.
func (l Logger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(l.who + ": pebble: " + fmt.Sprintf(format, args...))
	}
}

// Errorf logs Pebble's errors.
func (l Logger) Errorf(format string, args ...any) {
	l.log.Error(l.who + ": pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf logs and panics.
func (l Logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(l.who + ": pebble: fatal: " + msg)
	panic(l.who + ": pebble fatal: " + msg)
}
