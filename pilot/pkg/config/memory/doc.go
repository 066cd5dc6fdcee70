// Package memory is an in-memory, writable config store: the writer in tests
// and the home of configs the control plane synthesises itself.
package memory
