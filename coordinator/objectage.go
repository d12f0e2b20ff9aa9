package coordinator

import (
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/commitcheck"
)

// checkObjectAge refuses the commit of an object older than MaxObjectAge
// with REQUEST_TIMED_OUT (commitcheck.Age): the producer's retry writes a
// new object.
func (c *Coordinator) checkObjectAge(req *coordapi.CommitRequest) error {
	age, err := commitcheck.Age(req.ObjectKey, c.now(), c.opts.MaxObjectAge)
	if err != nil {
		c.log.Warn("commit refused: object too old", "key", req.ObjectKey, "age", age, "max", c.opts.MaxObjectAge, "broker", req.BrokerID)
	}
	return err
}
