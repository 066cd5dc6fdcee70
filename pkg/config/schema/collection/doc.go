// Package collection holds Schemas, an ordered set of kinds with the lookups
// every input path needs. Iteration follows add order, so output built by
// walking a Schemas (e.g. /debug/configz) is stable.
package collection
