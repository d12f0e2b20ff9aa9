//go:build notables

package node

import "github.com/floe-io/floe/tiered"

// tableRunner is nil in a build without the table writer: the broker
// claims no table job (another broker's writer takes them), and still
// serves the REST catalog.
func (n *Node) tableRunner() (tiered.TableJobRunner, error) { return nil, nil }
