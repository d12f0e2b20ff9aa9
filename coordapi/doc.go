// Package coordapi is the coordinator service's API as its callers see it:
// the request and response types of the batch coordinator (topics, commits,
// batch coordinates, producer ids, the broker registry, commit notices, ACL
// bindings and filters with their validation), TopicID, the Kafka-facing
// errors (KafkaError), the topic config schema (TopicConfigDefs: names,
// defaults, validation), the object key layout, and the client interfaces
// Coordinator and GroupCoordinator.
//
// It is what kmsg is beside kgo: the contract, with no implementation. It
// imports no Pebble, NATS or AWS code, so a package that only calls the
// coordinator (ingest, broker, and later tiered) depends on this package
// alone and builds without the storage and transport stacks:
//
//	ingest, broker ──> coordapi <── coordinator (Pebble), groups (Pebble)
//	                      ^
//	                      └──────── coordinator/rpc (NATS client and server)
//
// The in-process *coordinator.Coordinator and the NATS client *rpc.Client
// both implement Coordinator; groups.Direct and *rpc.GroupClient implement
// GroupCoordinator. Kafka-level failures are errors wrapping a *kerr.Error,
// usually a *KafkaError carrying the message Apache Kafka would send; any
// other error means the coordinator did not answer.
package coordapi
