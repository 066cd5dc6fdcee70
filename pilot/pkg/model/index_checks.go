package model

import (
	"fmt"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config/host"
)

// checkIndex holds nothing but the problems a cross-index check found. The
// checks are indexes of their own so that they rerun only when what they
// read changes.
//
//   - routeChecks (depends on services, virtualServices): a VirtualService
//     routes to a host no registry knows.
//   - subsetChecks (depends on services, destinationRules): a
//     DestinationRule subset selects none of the endpoints its service has.
//     Endpoints are read from the environment's EndpointIndex when there is
//     one; the check is skipped otherwise, and endpoint-only pushes do not
//     rerun it.
type checkIndex struct {
	indexBase
}

func buildRouteChecks(bc *buildContext) *checkIndex {
	x := &checkIndex{}
	services := bc.push.services
	for _, cfg := range bc.push.virtualServices.all {
		forEachDestination(cfg.Spec.(*networking.VirtualService), func(d *networking.Destination) {
			if d == nil || d.Host == "" || host.IsWildcard(d.Host) || len(services.byHost[d.Host]) > 0 {
				return
			}
			// Repeats of a host collapse on the problem key.
			x.addProblem(MetricMissingRouteHost, nameOf(cfg).String()+"/"+d.Host,
				"virtual service %s routes to host %s, which no service registry knows", nameOf(cfg), d.Host)
		})
	}
	return x
}

func buildSubsetChecks(bc *buildContext) *checkIndex {
	x := &checkIndex{}
	eps := bc.env.EndpointIndex()
	if eps == nil {
		return x
	}
	for _, cfg := range bc.push.destinationRules.all {
		dr := cfg.Spec.(*networking.DestinationRule)
		if len(dr.Subsets) == 0 || host.IsWildcard(dr.Host) {
			continue
		}
		for _, svc := range bc.push.services.byHost[dr.Host] {
			shards, ok := eps.ShardsFor(svc.Hostname, svc.Attributes.Namespace)
			if !ok {
				continue
			}
			view := shards.View()
			if !hasEndpoints(view) {
				continue
			}
			for _, ss := range dr.Subsets {
				if subsetSelectsEndpoint(view, ss.Labels) {
					continue
				}
				for _, port := range svc.Ports {
					cluster := fmt.Sprintf("outbound|%d|%s|%s", port.Port, ss.Name, svc.Hostname)
					x.addProblem(MetricClusterNoInstances, cluster,
						"subset %s of destination rule %s selects none of the endpoints of %s/%s", ss.Name, nameOf(cfg),
						svc.Attributes.Namespace, svc.Hostname)
				}
			}
		}
	}
	return x
}

func hasEndpoints(v ShardsView) bool {
	for _, eps := range v.Shards {
		if len(eps) > 0 {
			return true
		}
	}
	return false
}

func subsetSelectsEndpoint(v ShardsView, labels map[string]string) bool {
	for _, eps := range v.Shards {
		for _, ep := range eps {
			if selectorMatches(labels, ep.Labels) {
				return true
			}
		}
	}
	return false
}
