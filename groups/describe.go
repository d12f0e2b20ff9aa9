package groups

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// lockForDescribe locks group name for a describe request (consumer or
// share): with the group, a release to call when done; without one, the
// code and message to answer: NOT_COORDINATOR while the coordinator is
// closing, GROUP_ID_NOT_FOUND for a group it does not know.
func (gs *Groups) lockForDescribe(name string) (g *group, release func(), code int16, msg *string) {
	if !gs.enter() {
		return nil, nil, kerr.NotCoordinator.Code, nil
	}
	if g, _ = gs.lockGroup(name, false); g == nil {
		gs.leave()
		return nil, nil, kerr.GroupIDNotFound.Code, strPtr(fmt.Sprintf("Group %s not found.", name))
	}
	return g, func() { g.mu.Unlock(); gs.leave() }, 0, nil
}

// cloneNonNil copies ts, an empty slice for none: describe answers carry
// [] rather than null.
func cloneNonNil(ts []string) []string {
	if ts == nil {
		return []string{}
	}
	return slices.Clone(ts)
}
