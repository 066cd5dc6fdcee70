package bootstrap

import (
	"fmt"
	"strconv"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/autoregistration"
)

// AutoRegistrationOptions configure the WorkloadEntries of VMs (Istio's
// environment variables, read once by the command; see docs/vms.md).
type AutoRegistrationOptions struct {
	// Enabled is PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION (default
	// true): a proxy naming a WorkloadGroup gets a WorkloadEntry.
	Enabled bool
	// HealthChecks is PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS (default
	// true): the agent's probe results become the entry's Healthy
	// condition.
	HealthChecks bool
	// ValidateIdentity is ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY (default
	// true): the proxy must have proved the entry's namespace and service
	// account.
	ValidateIdentity bool
	// GracePeriod is PILOT_WORKLOAD_ENTRY_GRACE_PERIOD (default 10s).
	GracePeriod time.Duration
}

// DefaultAutoRegistrationOptions are Istio's defaults.
func DefaultAutoRegistrationOptions() AutoRegistrationOptions {
	return AutoRegistrationOptions{Enabled: true, HealthChecks: true, ValidateIdentity: true, GracePeriod: autoregistration.DefaultGracePeriod}
}

// AutoRegistrationFromEnv reads the options' variables with getenv (the
// command passes os.Getenv); unset or empty ones keep their value. A value
// that does not parse is an error naming the variable.
func AutoRegistrationFromEnv(getenv func(string) string, o *AutoRegistrationOptions) error {
	for _, b := range []struct {
		name string
		dst  *bool
	}{
		{"PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION", &o.Enabled},
		{"PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS", &o.HealthChecks},
		{"ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY", &o.ValidateIdentity},
	} {
		if v := getenv(b.name); v != "" {
			p, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%s=%q: %v", b.name, v, err)
			}
			*b.dst = p
		}
	}
	if v := getenv("PILOT_WORKLOAD_ENTRY_GRACE_PERIOD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("PILOT_WORKLOAD_ENTRY_GRACE_PERIOD=%q: want a positive duration", v)
		}
		o.GracePeriod = d
	}
	return nil
}

// initAutoRegistration makes the WorkloadEntry controller the xDS
// server's connection observer. Kubernetes mode only: the entries are
// written to the cluster (the CRD client is the store's writer). Every
// replica runs it for its own streams; the entries' controller annotation,
// not a Lease, says which replica writes an entry.
func (s *Server) initAutoRegistration() {
	o := s.args.AutoRegistration
	if s.kubeClient == nil || s.args.ConfigDir != "" {
		return
	}
	id := s.identity()
	s.workloadEntries = autoregistration.New(s.store, autoregistration.Options{
		InstanceID:       id,
		AutoRegistration: o.Enabled,
		HealthChecks:     o.HealthChecks,
		ValidateIdentity: o.ValidateIdentity,
		GracePeriod:      o.GracePeriod,
		MaxConnectionAge: s.args.Keepalive.MaxServerConnectionAge,
		Problems:         s.problems,
		Synced:           s.store.HasSynced,
	})
	if s.workloadEntries != nil {
		s.discovery.server.SetConnectionObserver(s.workloadEntries)
	}
}

// startAutoRegistration runs the controller until shutdown.
func (s *Server) startAutoRegistration() {
	if s.workloadEntries == nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.workloadEntries.Run(s.internalStop)
	}()
}
