package main

import (
	"testing"

	"github.com/floe-io/floe/internal/docgen"
)

// TestConfigurationDoc checks docs/configuration.md's table of the
// broker's flags against newFlagSet.
func TestConfigurationDoc(t *testing.T) {
	fs, _ := newFlagSet()
	docgen.Check(t, "../../docs/configuration.md", "broker-flags", docgen.FlagTable(fs))
}
