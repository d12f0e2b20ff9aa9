// Package users keeps the cluster's SASL/SCRAM users (sasl/doc.go): what a
// broker checks a SCRAM exchange against, and Kafka's
// DescribeUserScramCredentials and AlterUserScramCredentials with Apache
// Kafka's checks and error codes. The users are cluster-wide: with the
// topics, ACLs and producer ids they are the coordinator state that every
// shard of a sharded coordinator shares, not state per partition.
//
// A user's credential for one mechanism is one row of Rows (the batch
// coordinator's family 'u', which prefixes its byte); no password, nor
// salted password, is ever stored:
//
//	<mechanism(1)> <user name> -> version 1, iterations (uvarint), salt,
//	                              stored key, server key (each uvarint
//	                              length, bytes)
//
// The format is the one the batch coordinator wrote before this package
// existed. All rows are loaded at Open and kept in memory;
// AlterUserScramCredentials writes its changes in one durable write before
// it installs them. Store's lock is taken alone.
package users
