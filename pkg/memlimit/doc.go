// Package memlimit sets the Go soft memory limit from the container's
// cgroup memory limit, so that a process under a limit collects garbage
// harder as it nears the limit instead of being killed by it. An explicit
// GOMEMLIMIT always wins.
package memlimit
