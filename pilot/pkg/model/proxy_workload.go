package model

import (
	"maps"
	"strings"
)

// WorkloadLabeler gives the labels the registry holds for a proxy's
// workload, topology labels included (nil: the registry does not know the
// workload). Implementations must not modify the proxy; the returned map is
// the caller's to read, not to change.
type WorkloadLabeler interface {
	GetProxyWorkloadLabels(proxy *Proxy) map[string]string
}

// TestVMLabel marks, in a proxy's metadata labels, a VM simulated by a pod
// (Istio's istio.io/test-vm): its labels are the metadata's, never the pod's.
const TestVMLabel = "istio.io/test-vm"

// IsVM reports whether the proxy is a VM: its labels come from its
// metadata, as in Istio.
func (p *Proxy) IsVM() bool { return p.Metadata != nil && p.Metadata.Labels[TestVMLabel] != "" }

// WithWorkloadLabels returns a copy of the proxy whose labels and locality
// follow its workload as Istio computes them on connect and on every
// update of the workload: the registry's labels (registry, nil when it has
// none) over the agent's static labels, else the metadata's labels (always
// for a VM); then the locality from the topology labels (else the
// locality label, else the one the node sent, nodeLocality), and the
// topology labels of the cluster, locality, node and network added. The
// proxy itself is not changed: connections swap the whole proxy.
func (p *Proxy) WithWorkloadLabels(registry map[string]string, nodeLocality string) *Proxy {
	cp := *p
	var meta NodeMetadata
	if p.Metadata != nil {
		meta = *p.Metadata
	}
	switch {
	case p.IsVM() || registry == nil:
		cp.Labels = meta.Labels
	default:
		labels := make(map[string]string, len(registry)+len(meta.StaticLabels))
		maps.Copy(labels, meta.StaticLabels)
		maps.Copy(labels, registry)
		cp.Labels = labels
	}
	cp.Locality = localityOfLabels(cp.Labels)
	if cp.Locality == "" {
		cp.Locality = nodeLocality
	}
	cp.Labels = AugmentLabels(cp.Labels, meta.ClusterID, cp.Locality, meta.NodeName, meta.Network)
	if cp.Labels[NetworkLabel] == "" {
		// Istio adds the network to a proxy's labels only when it has
		// one (the endpoints' labels here always carry it, as Istio's
		// endpoint shards do)
		delete(cp.Labels, NetworkLabel)
	}
	return &cp
}

// localityOfLabels is the locality the topology labels give
// ("region/zone/subzone"), else the locality label's, else "".
func localityOfLabels(labels map[string]string) string {
	region, r := labels[RegionLabel]
	zone, z := labels[ZoneLabel]
	subzone, sz := labels[SubzoneLabel]
	if !r && !z && !sz {
		return LocalityFromLabels(labels)
	}
	return strings.Join([]string{region, zone, subzone}, "/")
}
