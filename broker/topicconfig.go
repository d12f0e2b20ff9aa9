package broker

import (
	"strconv"

	"github.com/floe-io/floe/coordapi"
)

// configInt returns an integer topic config, explicit or default.
func configInt(t coordapi.Topic, name string) int64 {
	v, err := strconv.ParseInt(t.Config(name), 10, 64)
	if err != nil {
		return 0
	}
	return v
}
