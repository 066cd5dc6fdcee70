// Package protoconv packs Envoy config messages into Any fields.
//
// Packing is deterministic (map entries in key order), so the same config
// always has the same bytes: resource versions are content hashes, and a
// push that changes nothing must send nothing.
package protoconv
