package model

import (
	"maps"
	"slices"
)

// WorkloadKind says what a workload instance comes from.
type WorkloadKind int

// Workload kinds.
const (
	PodKind WorkloadKind = iota
	WorkloadEntryKind
)

func (k WorkloadKind) String() string {
	if k == WorkloadEntryKind {
		return "WorkloadEntry"
	}
	return "Pod"
}

// WorkloadInstance is a workload (a pod or a WorkloadEntry) before it is
// bound to a service: what registries select by labels and turn into one
// endpoint per service port. Instances are shared and read-only.
type WorkloadInstance struct {
	Name      string
	Namespace string
	Kind      WorkloadKind
	// Labels are the workload's own labels, the ones selectors match.
	Labels map[string]string
	// Endpoint is the template of the workload's endpoints: addresses,
	// identity, locality, network, topology labels, health; no port.
	Endpoint *IstioEndpoint
	// PortMap maps port names to the ports the workload listens on
	// (named container ports, WorkloadEntry ports).
	PortMap map[string]uint32
	// DNSServiceEntryOnly: the address is not an IP, so only DNS
	// ServiceEntries may use the workload.
	DNSServiceEntryOnly bool
}

// ResourceName is namespace/name.
func (w WorkloadInstance) ResourceName() string { return w.Namespace + "/" + w.Name }

// GetLabels returns the workload's own labels.
func (w WorkloadInstance) GetLabels() map[string]string { return w.Labels }

// GetNamespace returns the workload's namespace.
func (w WorkloadInstance) GetNamespace() string { return w.Namespace }

// Equals compares two instances by content.
func (w WorkloadInstance) Equals(o WorkloadInstance) bool {
	return w.Name == o.Name && w.Namespace == o.Namespace && w.Kind == o.Kind &&
		w.DNSServiceEntryOnly == o.DNSServiceEntryOnly && maps.Equal(w.Labels, o.Labels) &&
		maps.Equal(w.PortMap, o.PortMap) && w.Endpoint.Equals(o.Endpoint)
}

// Addresses returns the addresses of the workload (read-only).
func (w WorkloadInstance) Addresses() []string {
	if w.Endpoint == nil {
		return nil
	}
	return slices.Clip(w.Endpoint.Addresses)
}
