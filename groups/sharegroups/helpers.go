package sharegroups

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// groupAuthorizedOperations is the bit field of the ACL operations on a
// group (READ, DELETE, DESCRIBE), as package groups answers it: floe has
// no ACLs, so all are allowed.
const groupAuthorizedOperations int32 = 1<<3 | 1<<6 | 1<<8

// heartbeatError is a Kafka error with the message Kafka puts with it.
type heartbeatError struct {
	code *kerr.Error
	msg  string
}

func invalid(format string, args ...any) *heartbeatError {
	return &heartbeatError{kerr.InvalidRequest, fmt.Sprintf(format, args...)}
}

// cloneNonNil copies ts, an empty slice for none: describe answers carry
// [] rather than null.
func cloneNonNil(ts []string) []string {
	if ts == nil {
		return []string{}
	}
	return slices.Clone(ts)
}

func cloneStrPtr(s *string) *string {
	if s == nil {
		return nil
	}
	c := strings.Clone(*s)
	return &c
}
