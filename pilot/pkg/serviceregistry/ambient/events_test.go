package ambient_test

import (
	"net/netip"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	securityapi "istio.io/api/security/v1beta1"
	typeapi "istio.io/api/type/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/workloadapi"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
)

const (
	flightsUID = "Kubernetes//Pod/travel/flights-7b9c4-q1w2e"
	bookingUID = "Kubernetes//Pod/travel/booking-5d6e7-r3t4y"
	roomsUID   = "Kubernetes//Pod/hotels/rooms-1a2b3-p7a8s"
	legacyUID  = "Kubernetes//Pod/hotels/legacy-4c5d6-d9f0g"
	strictName = "istio-system/istio_converted_static_strict"
)

// referenceMesh is the reference inputs in static collections, and the
// index built on them.
func referenceMesh(t *testing.T) (*mesh, *ambient.Index) {
	t.Helper()
	m := newMesh(referenceObjects(t))
	return m, m.index(t)
}

func workload(x *ambient.Index, uid string) *workloadapi.Workload {
	a := x.Addresses().GetKey(uid)
	if a == nil {
		return nil
	}
	return a.Proto.GetWorkload()
}

func service(x *ambient.Index, name string) *workloadapi.Service {
	a := x.Addresses().GetKey(name)
	if a == nil {
		return nil
	}
	return a.Proto.GetService()
}

func pod(m *mesh, ns, name string) *corev1.Pod {
	return (*m.pods.GetKey(ns + "/" + name)).DeepCopy()
}

func cfg(m *mesh, k config.GroupVersionKind, ns, name string) config.Config {
	return m.configs[k].GetKey(ns + "/" + name).DeepCopy()
}

// TestEnrolment: Istio's index reads no istio.io/dataplane-mode: every pod
// with an IP is a workload, HBONE comes only from istio-cni's redirection
// annotation, and policies apply whether the pod is enrolled or not.
func TestEnrolment(t *testing.T) {
	m, x := referenceMesh(t)
	if w := workload(x, legacyUID); w == nil || w.TunnelProtocol != workloadapi.TunnelProtocol_NONE {
		t.Fatalf("legacy (not enrolled) = %v; want a workload without tunnel", w)
	}
	// istio-cni redirects legacy once its namespace is enrolled.
	p := pod(m, "hotels", "legacy-4c5d6-d9f0g")
	p.Annotations = map[string]string{"ambient.istio.io/redirection": "enabled"}
	m.pods.Set(p)
	eventually(t, "legacy on HBONE", func() bool {
		return workload(x, legacyUID).GetTunnelProtocol() == workloadapi.TunnelProtocol_HBONE
	})
	// The label alone changes nothing: redirection is what counts.
	p = pod(m, "hotels", "rooms-1a2b3-p7a8s")
	p.Labels["istio.io/dataplane-mode"] = "none"
	m.pods.Set(p)
	p = pod(m, "hotels", "rooms-1a2b3-p7a8s")
	delete(p.Annotations, "ambient.istio.io/redirection")
	m.pods.Set(p)
	eventually(t, "rooms off HBONE", func() bool {
		w := workload(x, roomsUID)
		return w != nil && w.TunnelProtocol == workloadapi.TunnelProtocol_NONE
	})
	// A STRICT namespace PeerAuthentication applies to enrolled and
	// unenrolled pods alike.
	m.set(config.Config{Meta: config.Meta{GroupVersionKind: gvk.PeerAuthentication, Namespace: "hotels", Name: "default"},
		Spec: &securityapi.PeerAuthentication{Mtls: &securityapi.PeerAuthentication_MutualTLS{
			Mode: securityapi.PeerAuthentication_MutualTLS_STRICT}}})
	eventually(t, "hotels strict", func() bool {
		return slices.Equal(workload(x, roomsUID).GetAuthorizationPolicies(), []string{strictName}) &&
			slices.Equal(workload(x, legacyUID).GetAuthorizationPolicies(), []string{strictName})
	})
}

// TestPodDeletion: the pod's Address goes, nothing else changes.
func TestPodDeletion(t *testing.T) {
	m, x := referenceMesh(t)
	before := len(x.Addresses().List())
	m.pods.Delete("travel/flights-7b9c4-q1w2e")
	eventually(t, "flights gone", func() bool { return x.Addresses().GetKey(flightsUID) == nil })
	if n := len(x.Addresses().List()); n != before-1 {
		t.Errorf("%d addresses after the deletion, want %d", n, before-1)
	}
	if service(x, "travel/flights.travel.svc.cluster.local") == nil {
		t.Error("the flights Service went with its pod")
	}
	// A pod that stops (Succeeded) or loses its IP is no workload either.
	p := pod(m, "travel", "booking-5d6e7-r3t4y")
	p.Status.Phase = corev1.PodSucceeded
	m.pods.Set(p)
	eventually(t, "booking gone", func() bool { return x.Addresses().GetKey(bookingUID) == nil })
}

// TestLabelChange: relabelling a pod changes the services that select it
// and the policies that apply to it.
func TestLabelChange(t *testing.T) {
	m, x := referenceMesh(t)
	p := pod(m, "travel", "booking-5d6e7-r3t4y")
	p.Labels = map[string]string{"app": "flights"}
	m.pods.Set(p)
	// Until kube-controller-manager drops the pod from booking's
	// EndpointSlice, Istio keeps booking on it (the slice names the pod);
	// so do we. Play KCM.
	m.slices.Delete("travel/booking-a1")
	eventually(t, "booking relabelled", func() bool {
		w := workload(x, bookingUID)
		_, flights := w.GetServices()["travel/flights.travel.svc.cluster.local"]
		_, booking := w.GetServices()["travel/booking.travel.svc.cluster.local"]
		return flights && !booking && w.GetCanonicalName() == "flights" &&
			slices.Equal(w.GetAuthorizationPolicies(), []string{"travel/flights-l4", strictName})
	})
	// Readiness is the workload's status.
	p = pod(m, "travel", "booking-5d6e7-r3t4y")
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	m.pods.Set(p)
	eventually(t, "booking unhealthy", func() bool {
		return workload(x, bookingUID).GetStatus() == workloadapi.WorkloadStatus_UNHEALTHY
	})
}

// TestPolicyEdit: editing an AuthorizationPolicy changes its Authorization
// and the workloads that list it.
func TestPolicyEdit(t *testing.T) {
	m, x := referenceMesh(t)
	c := cfg(m, gvk.AuthorizationPolicy, "travel", "flights-l4")
	spec := c.Spec.(*securityapi.AuthorizationPolicy)
	spec.Selector.MatchLabels = map[string]string{"app": "booking"}
	spec.Action = securityapi.AuthorizationPolicy_DENY
	spec.Rules[0].To[0].Operation.Ports = []string{"9080"}
	m.set(c)
	eventually(t, "policy edited", func() bool {
		a := x.Authorizations().GetKey("travel/flights-l4")
		return a != nil && a.Proto.Action == security.Action_DENY &&
			slices.Equal(a.Proto.Groups[0].Rules[0].Matches[0].DestinationPorts, []uint32{9080}) &&
			slices.Equal(workload(x, bookingUID).GetAuthorizationPolicies(), []string{"travel/flights-l4", strictName}) &&
			slices.Equal(workload(x, flightsUID).GetAuthorizationPolicies(), []string{strictName})
	})
	// An ALLOW rule with HTTP attributes never matches in ztunnel: it is
	// dropped, the policy stays (denying all but what other rules allow).
	c = cfg(m, gvk.AuthorizationPolicy, "travel", "flights-l4")
	spec = c.Spec.(*securityapi.AuthorizationPolicy)
	spec.Action = securityapi.AuthorizationPolicy_ALLOW
	spec.Rules[0].To[0].Operation.Methods = []string{"GET"}
	m.set(c)
	eventually(t, "L7 rule dropped", func() bool {
		a := x.Authorizations().GetKey("travel/flights-l4")
		return a != nil && a.Proto.Action == security.Action_ALLOW && len(a.Proto.Groups) == 0
	})
	// Removing the last PeerAuthentication removes the static policy.
	m.configs[gvk.PeerAuthentication].Delete("travel/default")
	eventually(t, "static strict gone", func() bool {
		return x.Authorizations().GetKey(strictName) == nil &&
			len(workload(x, flightsUID).GetAuthorizationPolicies()) == 0
	})
	// Deleting the policy removes it everywhere.
	m.configs[gvk.AuthorizationPolicy].Delete("travel/flights-l4")
	eventually(t, "policy deleted", func() bool {
		return x.Authorizations().GetKey("travel/flights-l4") == nil &&
			len(workload(x, bookingUID).GetAuthorizationPolicies()) == 0
	})
}

// TestPortLevelPeerAuthentication: a workload PERMISSIVE port under a
// STRICT namespace becomes Istio's converted policy, merged with STRICT,
// and replaces the static policy on the workloads it selects.
func TestPortLevelPeerAuthentication(t *testing.T) {
	m, x := referenceMesh(t)
	m.set(config.Config{Meta: config.Meta{GroupVersionKind: gvk.PeerAuthentication, Namespace: "travel", Name: "flights"},
		Spec: &securityapi.PeerAuthentication{
			Selector: &typeapi.WorkloadSelector{MatchLabels: map[string]string{"app": "flights"}},
			PortLevelMtls: map[uint32]*securityapi.PeerAuthentication_MutualTLS{
				8000: {Mode: securityapi.PeerAuthentication_MutualTLS_PERMISSIVE}}}})
	presence := &security.StringMatch{MatchType: &security.StringMatch_Presence{Presence: &emptypb.Empty{}}}
	want := &security.Authorization{Name: "converted_peer_authentication_flights", Namespace: "travel",
		Scope: security.Scope_WORKLOAD_SELECTOR, Action: security.Action_DENY,
		Groups: []*security.Group{{Rules: []*security.Rules{
			{Matches: []*security.Match{{NotDestinationPorts: []uint32{8000}}}},
			{Matches: []*security.Match{{NotPrincipals: []*security.StringMatch{presence}}}},
		}}}}
	eventually(t, "converted policy", func() bool {
		a := x.Authorizations().GetKey("travel/converted_peer_authentication_flights")
		return a != nil && proto.Equal(a.Proto, want) &&
			slices.Equal(workload(x, flightsUID).GetAuthorizationPolicies(),
				[]string{"travel/flights-l4", "travel/converted_peer_authentication_flights"}) &&
			slices.Equal(workload(x, bookingUID).GetAuthorizationPolicies(), []string{strictName})
	})
}

// TestWaypointBinding: use-waypoint on a namespace binds its services to a
// service waypoint, "none" opts a service out, and a waypoint that is gone
// binds nothing.
func TestWaypointBinding(t *testing.T) {
	m, x := referenceMesh(t)
	ns := (*m.namespaces.GetKey("travel")).DeepCopy()
	ns.Labels["istio.io/use-waypoint"] = "booking-waypoint"
	m.namespaces.Set(ns)
	svc := (*m.services.GetKey("travel/flights")).DeepCopy()
	eventually(t, "flights bound", func() bool {
		return service(x, "travel/flights.travel.svc.cluster.local").GetWaypoint() != nil
	})
	// The waypoint is for services: pods are not bound.
	if w := workload(x, flightsUID); w.GetWaypoint() != nil {
		t.Errorf("flights pod bound to %v; the waypoint is for services only", w.GetWaypoint())
	}
	// Waypoints themselves are never bound, once marked as Istio's
	// deployment controller marks them (the reference input does not).
	wsvc := (*m.services.GetKey("travel/booking-waypoint")).DeepCopy()
	wsvc.Labels["gateway.istio.io/managed"] = "istio.io-mesh-controller"
	m.services.Set(wsvc)
	eventually(t, "waypoint service unbound", func() bool {
		s := service(x, "travel/booking-waypoint.travel.svc.cluster.local")
		return s != nil && s.GetWaypoint() == nil
	})
	svc.Labels = map[string]string{"istio.io/use-waypoint": "none"}
	m.services.Set(svc)
	eventually(t, "flights opted out", func() bool {
		s := service(x, "travel/flights.travel.svc.cluster.local")
		return s != nil && s.GetWaypoint() == nil
	})
	// A waypoint for all traffic binds pods too.
	gw := cfg(m, gvk.KubernetesGateway, "travel", "booking-waypoint")
	gw.Labels = map[string]string{"istio.io/waypoint-for": "all"}
	m.set(gw)
	eventually(t, "booking pod bound", func() bool { return workload(x, bookingUID).GetWaypoint() != nil })
	m.configs[gvk.KubernetesGateway].Delete("travel/booking-waypoint")
	eventually(t, "waypoint gone", func() bool {
		return service(x, "travel/booking.travel.svc.cluster.local").GetWaypoint() == nil &&
			workload(x, bookingUID).GetWaypoint() == nil
	})
}

// TestServiceEntryWorkloads: a STATIC ServiceEntry selecting a
// WorkloadEntry, and one with an inline endpoint, as Istio renders them.
func TestServiceEntryWorkloads(t *testing.T) {
	m, x := referenceMesh(t)
	for _, o := range parseObjects(t, `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: vm-svc, namespace: travel}
spec:
  hosts: [vm.example]
  addresses: [10.10.0.1]
  ports: [{number: 80, name: http, protocol: HTTP, targetPort: 8080}]
  resolution: STATIC
  workloadSelector: {labels: {app: vm}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1, namespace: travel}
spec: {address: 10.10.1.1, labels: {app: vm}, serviceAccount: vm-sa, ports: {http: 9090}, locality: us/zone1}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: travel}
spec:
  hosts: [db.example]
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  resolution: STATIC
  endpoints: [{address: 10.20.0.1, labels: {app: db}}]
`) {
		m.set(o)
	}
	ip := func(s string) []byte { return netip.MustParseAddr(s).AsSlice() }
	wantVM := &workloadapi.Workload{Uid: "Kubernetes/networking.istio.io/WorkloadEntry/travel/vm-1", Name: "vm-1",
		Namespace: "travel", Addresses: [][]byte{ip("10.10.1.1")}, ClusterId: "Kubernetes", ServiceAccount: "vm-sa",
		Services: map[string]*workloadapi.PortList{"travel/vm.example": {Ports: []*workloadapi.Port{
			{ServicePort: 80, TargetPort: 9090}}}},
		AuthorizationPolicies: []string{strictName}, CanonicalName: "vm", CanonicalRevision: "latest",
		WorkloadName: "vm-1", WorkloadType: workloadapi.WorkloadType_POD,
		Locality: &workloadapi.Locality{Region: "us", Zone: "zone1"}}
	wantSvc := &workloadapi.Service{Name: "vm-svc", Namespace: "travel", Hostname: "vm.example",
		Addresses: []*workloadapi.NetworkAddress{{Address: ip("10.10.0.1")}}, Canonical: true,
		Ports: []*workloadapi.Port{{ServicePort: 80, TargetPort: 8080, AppProtocol: workloadapi.AppProtocol_HTTP11}}}
	// An entry endpoint carries the ServiceEntry's (absent) labels: as in
	// Istio, no labels means every selector policy of the namespace.
	wantDB := &workloadapi.Workload{Uid: "Kubernetes/networking.istio.io/ServiceEntry/travel/db/10.20.0.1", Name: "db",
		Namespace: "travel", Addresses: [][]byte{ip("10.20.0.1")}, ClusterId: "Kubernetes",
		Services: map[string]*workloadapi.PortList{"travel/db.example": {Ports: []*workloadapi.Port{
			{ServicePort: 5432, TargetPort: 5432}}}},
		AuthorizationPolicies: []string{"travel/flights-l4", strictName}, CanonicalName: "db",
		CanonicalRevision: "latest", WorkloadName: "db", WorkloadType: workloadapi.WorkloadType_POD}
	eventually(t, "entries", func() bool {
		return proto.Equal(workload(x, wantVM.Uid), wantVM) && proto.Equal(service(x, "travel/vm.example"), wantSvc) &&
			proto.Equal(workload(x, wantDB.Uid), wantDB)
	})
	if a := x.Addresses().GetKey(wantVM.Uid); !slices.Equal(a.IPs, []string{"/10.10.1.1"}) {
		t.Errorf("IPs = %v", a.IPs)
	}
}

// TestNetwork: the system namespace's network label is every address's
// network.
func TestNetwork(t *testing.T) {
	m, x := referenceMesh(t)
	ns := (*m.namespaces.GetKey("istio-system")).DeepCopy()
	ns.Labels = map[string]string{"topology.istio.io/network": "nw1"}
	m.namespaces.Set(ns)
	eventually(t, "network nw1", func() bool {
		a := x.Addresses().GetKey(flightsUID)
		s := service(x, "travel/flights.travel.svc.cluster.local")
		return a != nil && a.Proto.GetWorkload().GetNetwork() == "nw1" && slices.Equal(a.IPs, []string{"nw1/10.244.5.1"}) &&
			s.GetAddresses()[0].GetNetwork() == "nw1"
	})
}
