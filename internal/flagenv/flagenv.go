// Package flagenv lets floe's binaries take every flag from the environment
// too: --ingest-linger is FLOE_INGEST_LINGER. A flag on the command line
// wins, because the environment is applied before parsing.
package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// Name is the environment variable of flag name: FLOE_ and the name in
// upper case with '-' as '_'.
func Name(flagName string) string {
	return "FLOE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Set sets each flag of fs from its environment variable when that is set,
// reporting every bad value at once. Call it before fs.Parse.
func Set(fs *flag.FlagSet) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := Name(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
	})
	return errors.Join(errs...)
}
