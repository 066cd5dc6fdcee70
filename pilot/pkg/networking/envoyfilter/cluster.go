package envoyfilter

import (
	"slices"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	networking "istio.io/api/networking/v1alpha3"
)

// inboundPassthrough names the cluster of inbound traffic to ports no
// service declares (and the per-family names of older Istio releases).
var inboundPassthrough = map[string]bool{
	"InboundPassthroughCluster": true, "InboundPassthroughClusterIpv4": true, "InboundPassthroughClusterIpv6": true,
}

// PatchClusters applies the CLUSTER patches to a proxy's clusters, each in
// its context: GATEWAY for a router proxy; for a sidecar SIDECAR_INBOUND
// for inbound clusters (inbound|..., and the inbound passthrough cluster),
// SIDECAR_OUTBOUND for the others. Removed clusters are left out; added
// ones come last (outbound or gateway ones, then inbound ones). The input
// is not modified; see the package's consistency contract.
func PatchClusters(ps *Patches, pc PatchContext, clusters []*clusterv3.Cluster) ([]*clusterv3.Cluster, []Problem) {
	if ps.Empty() {
		return clusters, nil
	}
	s := &session{ps: ps, pc: pc}
	out := make([]*clusterv3.Cluster, 0, len(clusters))
	names := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		if c == nil {
			continue
		}
		if nc := s.patchCluster(s.clusterContext(c), c); nc != nil {
			out = append(out, nc)
			names[nc.GetName()] = true
		}
	}
	if !pc.SkipAdds {
		out = append(out, s.addedClusters(func(n string) bool { return names[n] })...)
	}
	return out, s.result()
}

// AddedClusters returns the clusters the CLUSTER ADD patches define, for a
// caller that patches a proxy's clusters in several calls (with
// PatchContext.SkipAdds): the outbound (or gateway) ones, then the inbound
// ones. One whose name exists (exists) or was added already is left out
// and reported. The messages are shared: read-only.
func AddedClusters(ps *Patches, exists func(name string) bool) ([]*clusterv3.Cluster, []Problem) {
	if ps.Empty() {
		return nil, nil
	}
	s := &session{ps: ps}
	return s.addedClusters(exists), s.result()
}

func (s *session) clusterContext(c *clusterv3.Cluster) networking.EnvoyFilter_PatchContext {
	switch {
	case s.ps.gateway:
		return networking.EnvoyFilter_GATEWAY
	case strings.HasPrefix(c.GetName(), "inbound|") || strings.HasPrefix(c.GetName(), "inbound_.") || inboundPassthrough[c.GetName()]:
		return networking.EnvoyFilter_SIDECAR_INBOUND
	}
	return networking.EnvoyFilter_SIDECAR_OUTBOUND
}

// addedClusters are the clusters ADD patches add. One whose name is
// taken is left out (beyond Istio, which sends both).
func (s *session) addedClusters(exists func(string) bool) []*clusterv3.Cluster {
	var out []*clusterv3.Cluster
	added := map[string]bool{}
	for _, p := range s.ps.adds(networking.EnvoyFilter_CLUSTER) {
		c := p.value.(*clusterv3.Cluster)
		if added[c.GetName()] || (exists != nil && exists(c.GetName())) {
			s.drop(p, "cluster "+c.GetName(), "a cluster of that name exists already")
			continue
		}
		added[c.GetName()] = true
		out = append(out, c)
	}
	return out
}

// patchCluster applies the REMOVE and MERGE patches to one cluster in
// order; nil when removed.
func (s *session) patchCluster(ctx networking.EnvoyFilter_PatchContext, c *clusterv3.Cluster) *clusterv3.Cluster {
	hosts := s.pc.InboundClusterHosts[c.GetName()]
	cur := c
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_CLUSTER) {
		if p.op == networking.EnvoyFilter_Patch_ADD || !clusterMatch(cur, p, hosts) {
			continue
		}
		if p.op == networking.EnvoyFilter_Patch_REMOVE {
			return nil
		}
		if next, ok := s.mergeCluster(p, cur); ok {
			cur = next
		}
	}
	return cur
}

// mergeCluster merges a CLUSTER MERGE into a copy of c. A value with a
// transport socket changes the cluster's transport socket only, as Istio
// does: the socket of that name (in transport_socket_matches when the
// cluster has some; without one of that name there, the patch does
// nothing) has its typed_config merged; a cluster without a socket of that
// name gets the value's socket.
func (s *session) mergeCluster(p *patch, c *clusterv3.Cluster) (*clusterv3.Cluster, bool) {
	res := "cluster " + c.GetName()
	pts := p.value.(*clusterv3.Cluster).GetTransportSocket()
	if pts == nil {
		return mergeWhole(s, p, res, c)
	}
	next := shallow(c)
	if matches := c.GetTransportSocketMatches(); len(matches) > 0 {
		i := slices.IndexFunc(matches, func(m *clusterv3.Cluster_TransportSocketMatch) bool {
			return m.GetTransportSocket() != nil && m.GetTransportSocket().GetName() == pts.GetName()
		})
		if i < 0 {
			s.warn(p, res, "patch not applied: the cluster has transport_socket_matches and none names transport socket %q "+
				"(Istio ignores the patch)", pts.GetName())
			return c, false
		}
		ts, ok := s.mergeSocket(p, res, matches[i].GetTransportSocket())
		if !ok {
			return c, false
		}
		matches = slices.Clone(matches)
		m := shallow(matches[i])
		m.TransportSocket = ts
		matches[i] = m
		next.TransportSocketMatches = matches
		return next, true
	}
	if ts := c.GetTransportSocket(); ts != nil && ts.GetName() == pts.GetName() {
		merged, ok := s.mergeSocket(p, res, ts)
		if !ok {
			return c, false
		}
		next.TransportSocket = merged
		return next, true
	}
	if !s.wholeSocket(p, res) {
		return c, false
	}
	next.TransportSocket = pts
	if err := next.ValidateAll(); err != nil {
		s.drop(p, res, "the result is not a valid %s: %v", next.ProtoReflect().Descriptor().FullName(), err)
		return c, false
	}
	return next, true
}

// mergeSocket merges the typed_config of a MERGE value's transport socket
// into a copy of ts (when both have one).
func (s *session) mergeSocket(p *patch, res string, ts *core.TransportSocket) (*core.TransportSocket, bool) {
	if ts.GetTypedConfig() == nil || p.merged == nil {
		return ts, true
	}
	merged, m, err := mergeTyped(ts.GetTypedConfig(), p.merged)
	if err != nil {
		// Istio skips the patch (or panics, on a type mismatch)
		s.drop(p, res, "transport socket not merged: %v", err)
		return nil, false
	}
	if err := validateShallow(m); err != nil {
		s.drop(p, res, "the merged transport socket is not a valid %s: %v", m.ProtoReflect().Descriptor().FullName(), err)
		return nil, false
	}
	out := shallow(ts)
	out.ConfigType = &core.TransportSocket_TypedConfig{TypedConfig: merged}
	return out, true
}

// clusterMatch checks the cluster part of a match: the name alone when
// set, else subset, service and port of the name (direction|port|subset|
// host); an inbound cluster's service is one of hosts when given.
func clusterMatch(c *clusterv3.Cluster, p *patch, hosts []string) bool {
	m := p.match.GetCluster()
	if m == nil {
		return true
	}
	if m.GetName() != "" {
		return m.GetName() == c.GetName()
	}
	direction, subset, host, port := parseSubsetKey(c.GetName())
	candidates := []string{host}
	if direction == "inbound" && len(hosts) > 0 {
		candidates = hosts
	}
	if m.GetSubset() != "" && m.GetSubset() != subset {
		return false
	}
	if m.GetService() != "" && !slices.Contains(candidates, m.GetService()) {
		return false
	}
	return m.GetPortNumber() == 0 || int(m.GetPortNumber()) == port
}

// parseSubsetKey splits a cluster name as Istio does, keeping what parses:
// "direction|port|subset|host", or the DNS SRV form
// "outbound_.port_.subset_.host" (and inbound_.).
func parseSubsetKey(s string) (direction, subset, host string, port int) {
	sep := "|"
	if strings.HasPrefix(s, "outbound_") || strings.HasPrefix(s, "inbound_") {
		sep = "_."
	}
	dir, rest, ok := strings.Cut(s, sep)
	if !ok {
		return "", "", "", 0
	}
	p, rest, ok := strings.Cut(rest, sep)
	if !ok {
		return dir, "", "", 0
	}
	port, _ = strconv.Atoi(p)
	ss, rest, ok := strings.Cut(rest, sep)
	if !ok {
		return dir, "", "", port
	}
	if strings.Contains(rest, sep) {
		return dir, ss, "", port
	}
	return dir, ss, rest, port
}
