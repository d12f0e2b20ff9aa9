package coordinator

import "github.com/cockroachdb/pebble"

// familyRows is one key family of the coordinator's state lent to a part
// that owns its rows (the transaction coordinator's 'x', the SCRAM users'
// 'u'): keys are the part's own, the family byte prefixed here, and every
// write goes through the coordinator's log (write), synced, like the
// coordinator's own. It implements txn.Rows and users.Rows.
type familyRows struct {
	c      *Coordinator
	prefix byte
}

func (r familyRows) key(k []byte) []byte { return append([]byte{r.prefix}, k...) }

// Apply sets sets' key-value pairs and deletes deletes, in one synced
// write.
func (r familyRows) Apply(sets [][2][]byte, deletes [][]byte) error {
	return r.apply(sets, deletes, nil, nil)
}

// apply is Apply also setting the row metaKey (a whole key, outside the
// family) to metaValue when metaKey is set, in the same write.
func (r familyRows) apply(sets [][2][]byte, deletes [][]byte, metaKey, metaValue []byte) error {
	b := r.c.db.NewBatch()
	defer b.Close()
	for _, kv := range sets {
		_ = b.Set(r.key(kv[0]), kv[1], nil)
	}
	for _, k := range deletes {
		_ = b.Delete(r.key(k), nil)
	}
	if metaKey != nil {
		_ = b.Set(metaKey, metaValue, nil)
	}
	return r.c.write(b, pebble.Sync)
}

// Scan calls fn with every row of the family in key order, its key without
// the family byte; key and value are valid during the call only.
func (r familyRows) Scan(fn func(key, value []byte) error) error {
	return r.c.scan(r.prefix, func(k, v []byte) error { return fn(k[1:], v) })
}
