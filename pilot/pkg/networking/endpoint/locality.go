package endpoint

import (
	"sort"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
)

// ApplyLocalityLB shapes a load assignment by the proxy's locality, as
// Istio's locality load balancing does: with `distribute` rules the first
// rule whose `from` matches the proxy sets the weight of each locality
// (localities it gives no weight are dropped); otherwise, when failover is
// possible (the cluster has outlier detection), endpoints are prioritised:
// same region/zone/subzone 0, same zone 1, same region 2, a `failover`
// target region 3, the rest after. Priorities are renumbered to be
// contiguous, as Envoy requires.
func ApplyLocalityLB(la *endpointv3.ClusterLoadAssignment, proxy *core.Locality, s *networking.LocalityLoadBalancerSetting, failover bool) {
	if s == nil || (s.Enabled != nil && !s.Enabled.Value) || proxy == nil || len(la.Endpoints) == 0 {
		return
	}
	if len(s.Distribute) > 0 {
		distribute(la, proxy, s.Distribute)
		return
	}
	if failover {
		prioritise(la, proxy, s.Failover)
	}
}

// matchLocality matches "region/zone/subzone" patterns where a part may be
// "*" and missing trailing parts match anything.
func matchLocality(pattern string, l *core.Locality) bool {
	want := strings.Split(pattern, "/")
	have := []string{l.GetRegion(), l.GetZone(), l.GetSubZone()}
	for i, w := range want {
		if i >= len(have) {
			break
		}
		if w == "*" {
			return true
		}
		if w != have[i] {
			return false
		}
	}
	return true
}

func distribute(la *endpointv3.ClusterLoadAssignment, proxy *core.Locality, rules []*networking.LocalityLoadBalancerSetting_Distribute) {
	for _, r := range rules {
		if !matchLocality(r.From, proxy) {
			continue
		}
		var kept []*endpointv3.LocalityLbEndpoints
		for _, lle := range la.Endpoints {
			var w uint32
			for _, to := range sortedTargets(r.To) {
				if matchLocality(to, lle.Locality) {
					w = r.To[to]
					break
				}
			}
			if w == 0 {
				continue
			}
			lle.LoadBalancingWeight = wrapperspb.UInt32(w)
			kept = append(kept, lle)
		}
		la.Endpoints = kept
		return
	}
}

// sortedTargets orders `to` keys most specific first, so "r/z" wins over "r/*".
func sortedTargets(m map[string]uint32) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		si, sj := strings.Count(out[i], "*"), strings.Count(out[j], "*")
		if si != sj {
			return si < sj
		}
		return out[i] < out[j]
	})
	return out
}

func prioritise(la *endpointv3.ClusterLoadAssignment, proxy *core.Locality, failover []*networking.LocalityLoadBalancerSetting_Failover) {
	for _, lle := range la.Endpoints {
		l := lle.Locality
		switch {
		case l.GetRegion() == proxy.GetRegion() && l.GetZone() == proxy.GetZone() && l.GetSubZone() == proxy.GetSubZone():
			lle.Priority = 0
		case l.GetRegion() == proxy.GetRegion() && l.GetZone() == proxy.GetZone():
			lle.Priority = 1
		case l.GetRegion() == proxy.GetRegion():
			lle.Priority = 2
		case failoverTarget(failover, proxy.GetRegion(), l.GetRegion()):
			lle.Priority = 3
		default:
			lle.Priority = 4
		}
	}
	// renumber so that priorities are 0..n-1 without gaps
	used := map[uint32]bool{}
	for _, lle := range la.Endpoints {
		used[lle.Priority] = true
	}
	var levels []uint32
	for p := range used {
		levels = append(levels, p)
	}
	sort.Slice(levels, func(i, j int) bool { return levels[i] < levels[j] })
	remap := map[uint32]uint32{}
	for i, p := range levels {
		remap[p] = uint32(i)
	}
	// the localities keep their order (the builder's, by locality label):
	// Istio's applyLocalityFailover sets priorities in place, so a proxy
	// whose own locality sorts after another's (a remote cluster's
	// sidecar, say) gets its priority-0 group after a priority-1 one
	for _, lle := range la.Endpoints {
		lle.Priority = remap[lle.Priority]
	}
}

func failoverTarget(rules []*networking.LocalityLoadBalancerSetting_Failover, from, to string) bool {
	for _, r := range rules {
		if r.From == from && r.To == to {
			return true
		}
	}
	return false
}
