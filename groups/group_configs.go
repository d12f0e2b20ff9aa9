package groups

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/groups/sharegroups"
	"github.com/floe-io/floe/internal/keyspan"
	"github.com/floe-io/floe/internal/valenc"
)

// Group configs (ConfigResource type GROUP, 32): per-group overrides that
// DescribeConfigs and IncrementalAlterConfigs read and write, stored in
// the 'f' family even before the group exists, as Kafka keeps them in its
// metadata. floe knows the three share group configs below; any other
// name is INVALID_CONFIG ("Unknown group config name"), as Kafka answers a
// name it does not know.
const (
	cfgShareAutoOffsetReset    = "share.auto.offset.reset"
	cfgShareIsolationLevel     = "share.isolation.level"
	cfgShareRecordLockDuration = "share.record.lock.duration.ms"
	cfgShareDeliveryCountLimit = "share.delivery.count.limit"
)

// The bounds of share.delivery.count.limit: Kafka's ConfigDef minimum, and
// group.share.min/max.delivery.count.limit (KIP-1240) at their defaults.
const (
	shareDeliveryCountAtLeast = 2
	minShareDeliveryCount     = 2
	maxShareDeliveryCount     = 10
)

// The bounds of share.record.lock.duration.ms: Kafka's ConfigDef minimum,
// and group.share.min/max.record.lock.duration.ms (KIP-1240) at their
// defaults.
const (
	shareRecordLockAtLeast = time.Second
	minShareRecordLock     = 15 * time.Second
	maxShareRecordLock     = 60 * time.Second
)

// famConfig is the key family of group configs: 'f' group.
const famConfig byte = 'f'

func configKey(group string) []byte { return append([]byte{famConfig}, group...) }

// groupConfigDef is one group config: its type, documentation, the broker
// setting it overrides (if any) and its check.
type groupConfigDef struct {
	typ      kmsg.ConfigType
	doc      string
	synonym  string                         // the broker config it overrides; "" if none
	def      func(o *Options) string        // the value when the group sets none
	validate func(name, value string) error // nil: any value
}

var groupConfigDefs = map[string]groupConfigDef{
	cfgShareAutoOffsetReset: {
		typ: kmsg.ConfigTypeString,
		doc: "The strategy to initialize the share-partition start offset: earliest, latest, or by_duration:<ISO-8601 duration> (PnDTnHnMn.nS), reset to that long before now.",
		def: func(*Options) string { return "latest" },
		validate: func(name, v string) error {
			if _, err := parseAutoOffsetReset(v); err != nil {
				return err
			}
			return nil
		},
	},
	cfgShareIsolationLevel: {
		typ: kmsg.ConfigTypeString,
		doc: `Controls how to read records written transactionally: "read_committed" delivers only committed transactional records, "read_uncommitted" every record. floe's default is read_committed (issue 42), where Apache Kafka's is read_uncommitted: no aborted record reaches a queue consumer unless the group asks for them.`,
		def: func(*Options) string { return "read_committed" },
		validate: func(name, v string) error {
			if v != "read_committed" && v != "read_uncommitted" {
				return fmt.Errorf("Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted", v, name)
			}
			return nil
		},
	},
	cfgShareRecordLockDuration: {
		typ:     kmsg.ConfigTypeInt,
		doc:     "The record acquisition lock duration in milliseconds for share groups.",
		synonym: "group.share.record.lock.duration.ms",
		def:     func(o *Options) string { return strconv.FormatInt(o.ShareRecordLockDuration.Milliseconds(), 10) },
		validate: func(name, v string) error {
			n, err := parseLockDurationMs(v)
			switch {
			case err != nil:
				return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, name)
			case n < shareRecordLockAtLeast.Milliseconds():
				return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least %d", v, name, shareRecordLockAtLeast.Milliseconds())
			case n < minShareRecordLock.Milliseconds() || n > maxShareRecordLock.Milliseconds():
				return fmt.Errorf("%s must be in the range %d to %d inclusive.", name, minShareRecordLock.Milliseconds(), maxShareRecordLock.Milliseconds())
			}
			return nil
		},
	},
	cfgShareDeliveryCountLimit: {
		typ:     kmsg.ConfigTypeInt,
		doc:     "The maximum number of delivery attempts for a record delivered to a share group.",
		synonym: "group.share.delivery.count.limit",
		def:     func(o *Options) string { return strconv.Itoa(o.ShareDeliveryCountLimit) },
		validate: func(name, v string) error {
			n, err := parseDeliveryCountLimit(v)
			switch {
			case err != nil:
				return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, name)
			case n < shareDeliveryCountAtLeast:
				return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least %d", v, name, shareDeliveryCountAtLeast)
			case n < minShareDeliveryCount || n > maxShareDeliveryCount:
				return fmt.Errorf("%s must be in the range %d to %d inclusive.", name, minShareDeliveryCount, maxShareDeliveryCount)
			}
			return nil
		},
	},
}

// parseDeliveryCountLimit reads a share.delivery.count.limit value.
func parseDeliveryCountLimit(v string) (int64, error) {
	return strconv.ParseInt(strings.TrimSpace(v), 10, 32)
}

// parseLockDurationMs reads a share.record.lock.duration.ms value, as its
// validation and the share-partitions' configuration both do.
func parseLockDurationMs(v string) (int64, error) {
	return strconv.ParseInt(strings.TrimSpace(v), 10, 32)
}

// isoDuration is java.time.Duration's text form, PnDTnHnMn.nS, each part
// optional (at least one present), case-insensitive.
var isoDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(?:T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseAutoOffsetReset reads share.auto.offset.reset as Kafka's
// ShareGroupAutoOffsetResetStrategy: earliest, latest or
// by_duration:<duration>, not negative.
func parseAutoOffsetReset(v string) (sharegroups.OffsetReset, error) {
	s := strings.ToLower(v)
	switch {
	case s == "earliest":
		return sharegroups.OffsetReset{Earliest: true}, nil
	case s == "latest":
		return sharegroups.OffsetReset{}, nil
	case strings.HasPrefix(s, "by_duration:"):
		d, ok := parseISODuration(v[len("by_duration:"):])
		if !ok {
			return sharegroups.OffsetReset{}, fmt.Errorf("Invalid value %s for configuration %s: Unable to parse the given duration.", v, cfgShareAutoOffsetReset)
		}
		if d < 0 {
			return sharegroups.OffsetReset{}, fmt.Errorf("Invalid value %s for configuration %s: Negative duration is not supported.", v, cfgShareAutoOffsetReset)
		}
		return sharegroups.OffsetReset{ByDuration: true, By: d}, nil
	}
	return sharegroups.OffsetReset{}, fmt.Errorf("Invalid value `%s` for configuration %s. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", v, cfgShareAutoOffsetReset)
}

func parseISODuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || (m[2] == "" && m[3] == "" && m[4] == "" && m[5] == "") || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, false
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[2+i] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[2+i], 10, 64)
		if err != nil {
			return 0, false
		}
		d += time.Duration(n) * unit
	}
	if frac := m[6]; frac != "" {
		ns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if strings.HasPrefix(m[5], "-") {
			ns = -ns
		}
		d += time.Duration(ns)
	}
	if m[1] == "-" {
		d = -d
	}
	return d, true
}

// groupConfigLocked returns group's value of config name, or its default.
// gs.cfg.mu must be held.
func (gs *Groups) groupConfigLocked(group, name string) (string, bool) {
	if v, ok := gs.cfg.m[group][name]; ok {
		return v, true
	}
	return groupConfigDefs[name].def(&gs.opts), false
}

// groupConfig is groupConfigLocked taking gs.cfg.mu.
func (gs *Groups) groupConfig(group, name string) string {
	gs.cfg.mu.Lock()
	defer gs.cfg.mu.Unlock()
	v, _ := gs.groupConfigLocked(group, name)
	return v
}

// DescribeGroupConfigs serves the GROUP resources of a DescribeConfigs
// request (v0-v4): every group config floe knows (or those named), with
// the group's value (source GROUP_CONFIG) or the default (DEFAULT_CONFIG;
// the broker setting it overrides as its synonym). A group need not
// exist. An empty group name is INVALID_REQUEST; a resource of another
// type is answered INVALID_REQUEST too.
func (gs *Groups) DescribeGroupConfigs(_ context.Context, req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	if !gs.enter() {
		for _, rr := range req.Resources {
			sr := kmsg.NewDescribeConfigsResponseResource()
			sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, kerr.NotCoordinator.Code
			resp.Resources = append(resp.Resources, sr)
		}
		return resp
	}
	defer gs.leave()
	gs.cfg.mu.Lock()
	defer gs.cfg.mu.Unlock()
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		sr.ErrorMessage = kmsg.StringPtr("")
		switch {
		case rr.ResourceType != kmsg.ConfigResourceTypeGroupConfig:
			sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(fmt.Sprintf("Unsupported resource type %d", rr.ResourceType))
		case rr.ResourceName == "":
			sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Group name must not be empty")
		default:
			for _, name := range slices.Sorted(maps.Keys(groupConfigDefs)) {
				if len(rr.ConfigNames) > 0 && !slices.Contains(rr.ConfigNames, name) {
					continue
				}
				def := groupConfigDefs[name]
				v, set := gs.groupConfigLocked(rr.ResourceName, name)
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				c.Name, c.Value, c.ConfigType = name, kmsg.StringPtr(v), def.typ
				c.Source, c.IsDefault = kmsg.ConfigSourceDefaultConfig, true
				if set {
					c.Source, c.IsDefault = kmsg.ConfigSourceGroupConfig, false
				}
				if req.IncludeDocumentation {
					c.Documentation = kmsg.StringPtr(def.doc)
				}
				if req.IncludeSynonyms {
					c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
					if set {
						s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
						s.Name, s.Value, s.Source = name, kmsg.StringPtr(v), kmsg.ConfigSourceGroupConfig
						c.ConfigSynonyms = append(c.ConfigSynonyms, s)
					}
					if def.synonym != "" {
						s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
						s.Name, s.Value, s.Source = def.synonym, kmsg.StringPtr(def.def(&gs.opts)), kmsg.ConfigSourceDefaultConfig
						c.ConfigSynonyms = append(c.ConfigSynonyms, s)
					}
				}
				sr.Configs = append(sr.Configs, c)
			}
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// AlterGroupConfigs serves the GROUP resources of an
// IncrementalAlterConfigs request (v0-v1): SET and DELETE of the group
// configs floe knows, checked as Kafka's GroupConfig.validate (an unknown
// name or a bad value is INVALID_CONFIG; APPEND and SUBTRACT, for list
// configs only, are INVALID_CONFIG too; a name twice is INVALID_REQUEST).
// All of a resource's changes apply or none; ValidateOnly writes nothing.
// The new values apply to the group's share-partitions at once (a new
// lock duration to the next acquisitions).
func (gs *Groups) AlterGroupConfigs(_ context.Context, req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	if !gs.enter() {
		for _, rr := range req.Resources {
			sr := kmsg.NewIncrementalAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, kerr.NotCoordinator.Code
			resp.Resources = append(resp.Resources, sr)
		}
		return resp
	}
	defer gs.leave()
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if code, msg := gs.alterGroupConfigs(rr, req.ValidateOnly); code != nil {
			sr.ErrorCode, sr.ErrorMessage = code.Code, kmsg.StringPtr(msg)
		} else if !req.ValidateOnly {
			gs.shares.ApplyConfig(rr.ResourceName)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func (gs *Groups) alterGroupConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (*kerr.Error, string) {
	if rr.ResourceType != kmsg.ConfigResourceTypeGroupConfig {
		return kerr.InvalidRequest, fmt.Sprintf("Unsupported resource type %d", rr.ResourceType)
	}
	if rr.ResourceName == "" {
		return kerr.InvalidRequest, "Group name must not be empty"
	}
	seen := map[string]bool{}
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return kerr.InvalidRequest, "Error due to duplicate config keys"
		}
		seen[c.Name] = true
	}
	gs.cfg.mu.Lock()
	defer gs.cfg.mu.Unlock()
	next := maps.Clone(gs.cfg.m[rr.ResourceName])
	if next == nil {
		next = map[string]string{}
	}
	for _, c := range rr.Configs {
		def, ok := groupConfigDefs[c.Name]
		if !ok {
			return kerr.InvalidConfig, "Unknown group config name: " + c.Name
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			v := ""
			if c.Value != nil {
				v = *c.Value
			}
			if def.validate != nil {
				if err := def.validate(c.Name, v); err != nil {
					return kerr.InvalidConfig, err.Error()
				}
			}
			next[c.Name] = strings.Clone(v)
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend:
			return kerr.InvalidConfig, "Config value append is not allowed for config key: " + c.Name
		case kmsg.IncrementalAlterConfigOpSubtract:
			return kerr.InvalidConfig, "Config value subtract is not allowed for config key: " + c.Name
		default:
			return kerr.InvalidRequest, fmt.Sprintf("Unknown alter config operation %d", c.Op)
		}
	}
	if validateOnly {
		return nil, ""
	}
	b := gs.newBatch()
	if len(next) == 0 {
		b.b.Delete(configKey(rr.ResourceName), nil)
	} else {
		b.b.Set(configKey(rr.ResourceName), encodeGroupConfigs(next), nil)
	}
	if err := b.commit(); err != nil {
		gs.log.Error("write group configs", "group", rr.ResourceName, "err", err)
		return kerr.CoordinatorNotAvailable, ""
	}
	if len(next) == 0 {
		delete(gs.cfg.m, rr.ResourceName)
	} else {
		gs.cfg.m[strings.Clone(rr.ResourceName)] = next
	}
	gs.log.Info("altered group configs", "group", rr.ResourceName, "configs", next)
	return nil, ""
}

// encodeGroupConfigs writes a group's configs: n × (name str, value str),
// by name.
func encodeGroupConfigs(m map[string]string) []byte {
	v := []byte{valueV1}
	v = binary.AppendUvarint(v, uint64(len(m)))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		v = valenc.AppendString(v, name)
		v = valenc.AppendString(v, m[name])
	}
	return v
}

func decodeGroupConfigs(b []byte) (map[string]string, error) {
	d := valenc.New("group configs", b)
	n := d.Uvarint()
	if n > uint64(len(b)) {
		return nil, fmt.Errorf("decode group configs: count %d with %d bytes", n, len(b))
	}
	m := make(map[string]string, n)
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		name := d.String()
		m[name] = d.String()
	}
	if err := d.Done("group configs"); err != nil {
		return nil, err
	}
	return m, nil
}

// loadGroupConfigs reads the 'f' family.
func loadGroupConfigs(db *pebble.DB) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	err := keyspan.ScanFamily(db, famConfig, func(k, v []byte) error {
		m, err := decodeGroupConfigs(v)
		if err != nil {
			return fmt.Errorf("group configs of %q: %w", k[1:], err)
		}
		out[string(k[1:])] = m
		return nil
	})
	return out, err
}
