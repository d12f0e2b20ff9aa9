// Package zone shares chunk-cache loads among the brokers of one
// availability zone (their --rack), so that each object chunk is read from
// object storage about once per zone rather than once per broker.
//
// # Ownership
//
// Every chunk (object key, chunk index) has one owning broker in the zone:
// rendezvous (highest random weight) hashing of the chunk over the zone's
// live brokers that have an internal address, by node id. Membership keeps
// that list, refreshed every second from the coordinator's registry. When a
// broker joins or leaves only the chunks it gains or held change owner; the
// others stay where they are, and so do their cached copies.
//
//	chunk ("wal/0190...", 3)           score(node) = mix(hash(key, idx), node id)
//	zone "a": brokers 1, 2, 4          owner = the node with the highest score
//	zone "b": broker 3                 (never asked by zone "a")
//
// # Reading a chunk
//
// The chunk cache loads a missing chunk with one GetRange of the whole
// chunk; Getter sits between it and the object store and sends that load to
// the owner when it is not this broker:
//
//	broker 1 (not the owner)                  broker 2 (the owner)
//	cache miss, chunk 3                        Handler: GET /internal/chunk
//	  -> Getter.GetRange                         -> cache.GetChunk (hit, or
//	       -> GET http://<owner>/internal/chunk       one load, kept resident)
//	          ?key=..&offset=..&length=..              -> Getter.GetRange,
//	             &chunk_bytes=..                          marked "serving a
//	       <- 200, exactly length bytes                   peer": the store
//	  (any failure: the store, counted)
//
// A request served for a peer never goes to another peer: the owner reads
// the object store itself, so a chunk crosses at most one broker-to-broker
// hop. Brokers whose lists of members disagree for a moment (one joined,
// one died) may both think the other owns a chunk; each then waits on the
// other's load until the peer timeout (2s) and reads the store.
//
// Loss of an owner costs no errors: asking a peer that fails (connection
// refused, timeout, a status other than 200, a wrong length) falls back to
// the object store for that chunk, and a peer that could not be reached is
// not asked again for a few seconds. Its chunks move to the others once the
// registry forgets it. Writers still put what they upload in their own
// cache only (cache.Put).
//
// # Security
//
// The handler serves object bytes without authentication, only for keys the
// object store accepts (objectstore.CheckKey) under the prefixes floe writes
// (WAL and segment objects), and only whole chunks. The internal listener
// (the broker's HTTP port, --internal-addr) must be reachable by the other
// brokers and never exposed publicly.
//
// # Metrics
//
//	floe.cache.chunk_loads{source}  chunk loads by where the bytes came from:
//	                                object_store, peer, peer_fallback (a peer
//	                                failed or was backing off, then the store)
//	floe.zone.peer_served           chunks served to peers
//	floe.zone.peer_served.bytes     bytes served to peers
package zone
