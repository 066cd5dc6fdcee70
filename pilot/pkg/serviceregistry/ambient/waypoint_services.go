package ambient

import (
	"net/netip"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pkg/workloadapi"
)

// WaypointService is a service whose traffic a waypoint takes (its
// workload API Service names the waypoint).
type WaypointService struct {
	// Namespace and Hostname name the service (a Kubernetes Service or a
	// ServiceEntry host).
	Namespace, Hostname string
	// Created is the source object's creation time (Istio orders a
	// waypoint's services by it).
	Created time.Time
}

// ServicesForWaypoint lists the services that use the waypoint
// namespace/name, oldest first (then by namespace and hostname). The
// result is the caller's.
func (x *Index) ServicesForWaypoint(namespace, name string) []WaypointService {
	key := namespace + "/" + name
	var out []WaypointService
	for _, s := range x.services.List() {
		if s.Waypoint != key {
			continue
		}
		out = append(out, WaypointService{Namespace: s.Service.GetNamespace(), Hostname: s.Service.GetHostname(),
			Created: s.Created})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Hostname < b.Hostname
	})
	return out
}

// WorkloadsForWaypoint lists the workloads that send through the waypoint
// namespace/name (a waypoint of workload or all traffic), by UID. The
// workloads are the index's: shared and immutable.
func (x *Index) WorkloadsForWaypoint(namespace, name string) []*workloadapi.Workload {
	w := x.waypoints.GetKey(namespace + "/" + name)
	if w == nil || w.Address == nil {
		return nil
	}
	var out []*workloadapi.Workload
	for _, a := range x.addresses.List() {
		wl := a.Proto.GetWorkload()
		if wl == nil || wl.Waypoint == nil || !proto.Equal(wl.Waypoint, w.Address) {
			continue
		}
		out = append(out, wl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Uid < out[j].Uid })
	return out
}

// HBONEAddresses are the addresses of the workloads that take HBONE
// (their tunnel protocol is HBONE), as "<network>/<ip>" keys. The map is
// the caller's.
func (x *Index) HBONEAddresses() map[string]bool {
	out := map[string]bool{}
	for _, a := range x.addresses.List() {
		wl := a.Proto.GetWorkload()
		if wl == nil || wl.TunnelProtocol != workloadapi.TunnelProtocol_HBONE {
			continue
		}
		for _, ip := range wl.Addresses {
			if addr, ok := netip.AddrFromSlice(ip); ok {
				out[wl.Network+"/"+addr.String()] = true
			}
		}
	}
	return out
}
