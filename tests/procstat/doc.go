// Package procstat reads the memory of a process from /proc, for the
// benchmarks and the load test that report istiod's resident memory.
package procstat
