package bootstrap

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/meshplane/istiod/pilot/pkg/ipallocate"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
)

// ipAllocateElection is Istio's election of its IP autoallocate
// controller (one for all revisions): a prioritized ConfigMap lock, as
// Istio's NewLeaderElection makes it.
const ipAllocateElection = "istio-ip-autoallocate"

// IPAllocateOptions configure the addresses given to ServiceEntries
// without one (Istio's environment variables, read once by the command).
type IPAllocateOptions struct {
	// Enabled is PILOT_ENABLE_IP_AUTOALLOCATE (default true).
	Enabled bool
	// IPv4 and IPv6 are PILOT_IP_AUTOALLOCATE_IPV4_PREFIX (240.240.0.0/16)
	// and PILOT_IP_AUTOALLOCATE_IPV6_PREFIX (2001:2::/48).
	IPv4, IPv6 netip.Prefix
}

// DefaultIPAllocateOptions are Istio's defaults.
func DefaultIPAllocateOptions() IPAllocateOptions {
	return IPAllocateOptions{Enabled: true, IPv4: ipallocate.DefaultIPv4Prefix, IPv6: ipallocate.DefaultIPv6Prefix}
}

// IPAllocateFromEnv reads the options' variables with getenv; unset ones
// keep their value. A prefix that does not parse, or of the wrong family,
// is an error naming the variable (Istio's istiod does not start either).
func IPAllocateFromEnv(getenv func(string) string, o *IPAllocateOptions) error {
	if v := getenv("PILOT_ENABLE_IP_AUTOALLOCATE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("PILOT_ENABLE_IP_AUTOALLOCATE=%q: %v", v, err)
		}
		o.Enabled = b
	}
	for _, p := range []struct {
		name string
		dst  *netip.Prefix
		v4   bool
	}{{"PILOT_IP_AUTOALLOCATE_IPV4_PREFIX", &o.IPv4, true}, {"PILOT_IP_AUTOALLOCATE_IPV6_PREFIX", &o.IPv6, false}} {
		v := getenv(p.name)
		if v == "" {
			continue
		}
		pr, err := netip.ParsePrefix(v)
		if err != nil {
			return fmt.Errorf("%s=%q: %v", p.name, v, err)
		}
		if pr.Addr().Is4() != p.v4 {
			return fmt.Errorf("%s=%q: not an IPv%s prefix", p.name, v, map[bool]string{true: "4", false: "6"}[p.v4])
		}
		*p.dst = pr
	}
	return nil
}

// initIPAllocate makes the leader of Istio's istio-ip-autoallocate
// election write addresses into the status of ServiceEntries that declare
// none (Kubernetes mode: with a directory of files there is no status to
// write, and none is read).
func (s *Server) initIPAllocate() {
	o := s.args.IPAllocate
	if !o.Enabled || s.kubeClient == nil || s.args.ConfigDir != "" || s.store == nil {
		return
	}
	c := ipallocate.New(ipallocate.Options{Store: s.store, IPv4: o.IPv4, IPv6: o.IPv6})
	s.ipAllocate = leaderelection.NewPrioritized(s.kubeClient.Kube(), leaderelection.PrioritizedOptions{
		Namespace: s.args.Namespace, Name: ipAllocateElection, Identity: s.identity(), Revision: s.args.Revision,
		DefaultRevision: s.defaultRevisions().Get, Timing: s.args.Security.LeaderElection})
	s.ipAllocate.AddRunFunction(c.Run)
}

// startIPAllocate contends for the election.
func (s *Server) startIPAllocate() {
	if s.ipAllocate == nil {
		return
	}
	s.startDefaultRevisions()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.ipAllocate.Run(s.internalStop)
	}()
}
