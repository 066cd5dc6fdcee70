// Package autoregistration owns the lifecycle of the WorkloadEntries of
// VMs, driven by their xDS streams as Istio's istiod drives them.
//
// A proxy whose node metadata names a WorkloadGroup (AUTO_REGISTER_GROUP)
// gets a WorkloadEntry made from the group's template and its own metadata
// when it connects, named <group>-<ip>[-<network>]; a proxy that names an
// existing entry (WORKLOAD_ENTRY) takes it over for health reports. The
// entry's annotations say which replica controls it (istio.io/
// workloadController) and when it connected or disconnected; the replica
// named there is the only one that writes it, so a VM that moves to
// another replica within the grace period is simply taken over. When the
// last stream of a proxy ends, its entry is marked disconnected, and
// deleted (an auto-registered one) or stripped of its Healthy condition (a
// health-checked one) once the grace period has passed without a
// reconnection; deletions are rate-limited, and a periodic sweep removes
// what a replica that went away left behind. A replica that stops marks
// the entries of the streams it still holds disconnected before it exits,
// and one that starts again under the same name takes up the grace period
// of the entries its previous run controlled (shutdown.go, cleanup.go). A
// WorkloadGroup created again gets the entries of its connected proxies
// back (late.go). Health reports of the agent's readiness probe become
// the entry's Healthy condition.
//
// The Controller is the xDS server's ConnectionObserver: its OnConnect
// runs on the stream's goroutine and may refuse the stream; everything
// else is queued and done by Run's goroutines. The package reads and
// writes through a model.ConfigStore (the CRD client in istiod), never
// the environment, and takes its time from an injected clock.
package autoregistration
