package ambient_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// The reference's service waypoint takes the booking Service's traffic and
// no workload's; the HBONE addresses are those of the redirected pods.
func TestWaypointServicesOfReference(t *testing.T) {
	x := newMesh(referenceObjects(t)).index(t)
	var got []string
	for _, s := range x.ServicesForWaypoint("travel", "booking-waypoint") {
		got = append(got, s.Namespace+"/"+s.Hostname)
	}
	if want := []string{"travel/booking.travel.svc.cluster.local"}; !slices.Equal(got, want) {
		t.Errorf("services of travel/booking-waypoint %v, want %v", got, want)
	}
	if ws := x.ServicesForWaypoint("travel", "other"); len(ws) != 0 {
		t.Errorf("services of a waypoint that does not exist: %v", ws)
	}
	if ws := x.WorkloadsForWaypoint("travel", "booking-waypoint"); len(ws) != 0 {
		t.Errorf("a service waypoint has workloads %v", ws)
	}
	hbone := x.HBONEAddresses()
	for ip, want := range map[string]bool{"10.244.5.1": true, "10.244.6.2": true, "10.244.6.7": true,
		"10.244.5.20": false, "10.244.5.9": false} {
		if hbone["/"+ip] != want {
			t.Errorf("HBONE %s: %v, want %v", ip, hbone["/"+ip], want)
		}
	}
}

// A waypoint for all traffic lists the workloads that use it, and the
// services; relabelling the Service off the waypoint removes it.
func TestWaypointWorkloadsAndChanges(t *testing.T) {
	objs := referenceObjects(t)
	for i, o := range objs {
		if c, ok := o.(config.Config); ok && c.GroupVersionKind == gvk.KubernetesGateway {
			c.Labels = map[string]string{"istio.io/waypoint-for": "all"}
			objs[i] = c
		}
		if p, ok := o.(*corev1.Pod); ok && p.Name == "flights-7b9c4-q1w2e" {
			p.Labels["istio.io/use-waypoint"] = "booking-waypoint"
		}
	}
	m := newMesh(objs)
	x := m.index(t)
	eventually(t, "workloads of the waypoint", func() bool {
		ws := x.WorkloadsForWaypoint("travel", "booking-waypoint")
		return len(ws) == 1 && ws[0].Name == "flights-7b9c4-q1w2e"
	})
	for _, o := range objs {
		if s, ok := o.(*corev1.Service); ok && s.Name == "booking" {
			cp := s.DeepCopy()
			delete(cp.Labels, "istio.io/use-waypoint")
			m.set(cp)
		}
	}
	eventually(t, "booking off the waypoint", func() bool { return len(x.ServicesForWaypoint("travel", "booking-waypoint")) == 0 })
}
