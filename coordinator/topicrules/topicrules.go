// Package topicrules holds Kafka's rules for topics that the coordinator
// applies before it writes anything: a topic's name (ValidateName, and
// the names that collide, CollisionName), a new topic's id (NewID), its
// partition count and replication factor (Partitions, ReplicationFactor)
// and the explicit config set an AlterConfigs or
// IncrementalAlterConfigs request leaves (ApplyConfigOps; the values are
// validated on the whole set by coordapi.ValidateTopicConfigs). It holds
// no state and takes no locks; refusals are Kafka-level errors
// (coordapi.Errorf) with Kafka's messages.
package topicrules

import (
	"maps"
	"strings"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// MaxNameLen is Kafka's limit (249, so that partition directory names
// fit in 255 bytes).
const MaxNameLen = 249

// ValidateName applies Kafka's topic name rules, and also allows '/'
// inside a name (not first or last): floe keeps no partition directories,
// and Kafka tools and clients pass such names through (see
// coordapi/views.go: a '/' means a hierarchical view only when the part
// before it names a topic with hierarchical.enabled).
func ValidateName(name string) error {
	switch {
	case name == "":
		return coordapi.Errorf(kerr.InvalidTopicException, "Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return coordapi.Errorf(kerr.InvalidTopicException, "Topic name cannot be \".\" or \"..\"")
	case len(name) > MaxNameLen:
		return coordapi.Errorf(kerr.InvalidTopicException,
			"Topic name is illegal, it can't be longer than %d characters, topic name: %s", MaxNameLen, name)
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		slash := b == '/' && i > 0 && i < len(name)-1
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-' || slash) {
			return coordapi.Errorf(kerr.InvalidTopicException,
				"Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_', '-' and '/' (not first or last)", name)
		}
	}
	return nil
}

// CollisionName maps '.' to '_': Kafka refuses topics whose names differ
// only there, because metric names would collide.
func CollisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// NewID returns a random topic id that Kafka would also hand out: not
// zero, not the metadata topic's id (1), and not starting with '-' in
// base64 (Kafka's Uuid.randomUuid rules, so tools can parse it).
func NewID() coordapi.TopicID {
	for {
		id := coordapi.TopicID(uuid.New())
		if id.IsZero() || id == (coordapi.TopicID{15: 1}) || id[0]>>2 == 62 {
			continue
		}
		return id
	}
}

// Partitions returns a CreateTopics request's partition count: -1 takes
// def, and a count must be positive and at most limit.
func Partitions(n, def int32, limit int32) (int32, error) {
	switch {
	case n == -1:
		return def, nil
	case n <= 0:
		return 0, coordapi.Errorf(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	case n > limit:
		return 0, coordapi.Errorf(kerr.InvalidPartitions, "Number of partitions %d is above the maximum of %d.", n, limit)
	}
	return n, nil
}

// ReplicationFactor checks a CreateTopics request's replication factor:
// -1 (the default), 1, 2 or 3 (object storage keeps the copies).
func ReplicationFactor(rf int16) error {
	switch {
	case rf == 0 || rf < -1:
		return coordapi.Errorf(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
	case rf > 3:
		return coordapi.Errorf(kerr.InvalidReplicationFactor,
			"Replication factor: %d larger than available brokers: 3 (object storage keeps the copies; use -1, 1, 2 or 3).", rf)
	}
	return nil
}

// ApplyConfigOps returns the explicit config set that results from ops.
// Values are validated afterwards, on the whole set.
func ApplyConfigOps(current map[string]string, ops []coordapi.ConfigOp, incremental bool) (map[string]string, error) {
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return nil, coordapi.Errorf(kerr.InvalidRequest, "Error due to duplicate config keys: %s", op.Name)
		}
		seen[op.Name] = true
	}
	if !incremental {
		next := make(map[string]string, len(ops))
		for _, op := range ops {
			if _, ok := coordapi.LookupTopicConfig(op.Name); !ok {
				return nil, coordapi.Errorf(kerr.InvalidConfig, "Unknown topic config name: %s", op.Name)
			}
			if op.Value != nil {
				next[op.Name] = *op.Value
			}
		}
		return next, nil
	}
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range ops {
		d, ok := coordapi.LookupTopicConfig(op.Name)
		if !ok {
			return nil, coordapi.Errorf(kerr.InvalidConfig, "Unknown topic config name: %s", op.Name)
		}
		if op.Op != coordapi.OpDelete && op.Value == nil {
			return nil, coordapi.Errorf(kerr.InvalidRequest, "Null value not supported for : %s", op.Name)
		}
		switch op.Op {
		case coordapi.OpSet:
			next[op.Name] = *op.Value
		case coordapi.OpDelete:
			delete(next, op.Name)
		case coordapi.OpAppend, coordapi.OpSubtract:
			verb := "append"
			if op.Op == coordapi.OpSubtract {
				verb = "subtract"
			}
			if d.Type != coordapi.ConfigTypeList {
				return nil, coordapi.Errorf(kerr.InvalidConfig, "Config value %s is not allowed for config key: %s", verb, op.Name)
			}
			base, ok := next[op.Name]
			if !ok {
				base = d.Default
			}
			items := coordapi.SplitConfigList(base)
			if op.Op == coordapi.OpAppend {
				for _, v := range coordapi.SplitConfigList(*op.Value) {
					if !containsString(items, v) {
						items = append(items, v)
					}
				}
			} else {
				drop := coordapi.SplitConfigList(*op.Value)
				kept := items[:0]
				for _, v := range items {
					if !containsString(drop, v) {
						kept = append(kept, v)
					}
				}
				items = kept
			}
			next[op.Name] = strings.Join(items, ",")
		default:
			return nil, coordapi.Errorf(kerr.InvalidRequest, "Unknown config op type %d for %s", op.Op, op.Name)
		}
	}
	return next, nil
}

// containsString reports whether list holds s.
func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
