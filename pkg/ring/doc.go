// Package ring is a fixed-size history: it keeps the last N values added,
// newest first on read. It is not safe for concurrent use; owners lock.
package ring
