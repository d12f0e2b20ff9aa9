package producecheck

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// errMissingKey marks a keyless record on a compacted topic.
var errMissingKey = errors.New("compacted topic requires a key on every record")

// Records checks every record of batch data as Kafka's LogValidator does
// on produce, compressed or not (see record.Records for the rules), in one
// pass that also does what the topic needs: on a compacted topic it rejects
// a keyless record (INVALID_RECORD, as Kafka), and on a kv-indexed topic it
// returns every keyed record's (key, offset delta, tombstone) for the key
// index, counting the keyless ones in nullKeys. On a hierarchical topic
// (and not kv-indexed) it returns each distinct key of the batch once, at
// its first record's offset delta, for the posting index (one posting per
// key per batch); keyless records are counted, not refused, unless the
// topic is compacted. A plain topic's pass only checks. Decompression
// streams: nothing of the records is kept but the keys returned.
func Records(data []byte, rules Rules) (keys []coordapi.KeyEntry, nullKeys int64, err error) {
	compacted, kvIndexed, hierarchical := rules.Compacted, rules.KVIndexed, rules.Hierarchical
	var (
		visit func(*record.Record) error // nil: check only
		arena []byte                     // every key's bytes, back to back
		ends  []int                      // where each key ends in arena
	)
	switch {
	case hierarchical && !kvIndexed:
		arena = make([]byte, 0, 64)
		var seen map[string]struct{} // past a few keys
		visit = func(rec *record.Record) error {
			if rec.Key == nil {
				if compacted {
					return errMissingKey
				}
				nullKeys++
				return nil
			}
			if seenKey(arena, ends, rec.Key, &seen) {
				return nil
			}
			arena = append(arena, rec.Key...)
			ends = append(ends, len(arena))
			keys = append(keys, coordapi.KeyEntry{OffsetDelta: rec.OffsetDelta, Tombstone: rec.Value == nil})
			return nil
		}
	case kvIndexed:
		if h, err := record.ParseHeader(data); err == nil && h.NumRecords > 0 {
			n := min(int(h.NumRecords), len(data)) // a record takes at least a byte
			keys, ends = make([]coordapi.KeyEntry, 0, n), make([]int, 0, n)
		}
		arena = make([]byte, 0, 256) // never nil: an empty key stays empty, not null
		visit = func(rec *record.Record) error {
			if rec.Key == nil {
				if compacted {
					return errMissingKey
				}
				nullKeys++
				return nil
			}
			// rec.Key aliases a decompression buffer valid only in this
			// call: copied into one arena for the batch, sliced below.
			arena = append(arena, rec.Key...)
			ends = append(ends, len(arena))
			keys = append(keys, coordapi.KeyEntry{OffsetDelta: rec.OffsetDelta, Tombstone: rec.Value == nil})
			return nil
		}
	case compacted:
		visit = func(rec *record.Record) error {
			if rec.Key == nil {
				return errMissingKey
			}
			return nil
		}
	}
	err = record.Records(data, visit)
	switch {
	case errors.Is(err, errMissingKey):
		return nil, 0, fmt.Errorf("%w: %v", kerr.InvalidRecord, err)
	case err != nil:
		return nil, 0, batchError(err)
	}
	start := 0
	for i, end := range ends {
		keys[i].Key = arena[start:end:end]
		start = end
	}
	return keys, nullKeys, nil
}

// seenKey reports whether key is one of the keys stored back to back in
// arena (ending at ends), and notes it when not: a scan of the last few keys
// (producers flushing per device write runs of one key), a set past that.
func seenKey(arena []byte, ends []int, key []byte, seen *map[string]struct{}) bool {
	const linear = 8
	if len(ends) <= linear {
		start := 0
		for _, end := range ends {
			if bytes.Equal(arena[start:end], key) {
				return true
			}
			start = end
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(ends))
		start := 0
		for _, end := range ends {
			(*seen)[string(arena[start:end])] = struct{}{}
			start = end
		}
	}
	if _, ok := (*seen)[string(key)]; ok {
		return true
	}
	(*seen)[string(key)] = struct{}{}
	return false
}
