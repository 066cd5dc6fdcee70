package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/tests/golden"
	"github.com/meshplane/istiod/tests/refdata"
)

// ambientSnapshot is the ambient reference's waypoint Gateway as stored
// (without the status Istio wrote; generation 1, which the API server
// sets and the reference leaves out), with the Namespaces, Services and
// EndpointSlices of the input, and the Gateway's spec changed by mutate.
func ambientSnapshot(t *testing.T, mutate func(*gatewayv1.GatewaySpec)) (gateway.Snapshot, map[string]any) {
	t.Helper()
	dir := refdata.Dir(t, "ambient")
	stored := readList(t, filepath.Join(dir, "real", "gateways.json"))
	if len(stored) != 1 {
		t.Fatalf("the reference has %d Gateways, want the waypoint", len(stored))
	}
	in := map[string]any{}
	for k, v := range stored[0] {
		if k != "status" {
			in[k] = v
		}
	}
	gwYAML, err := yaml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	docs = append(docs, string(gwYAML))
	for _, f := range []string{"base.yaml", "slices.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, "input", f))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	snap := loadSnapshot(t, []byte(strings.Join(docs, "\n---\n")))
	for i := range snap.Gateways {
		snap.Gateways[i].Generation = 1
		if mutate != nil {
			spec := snap.Gateways[i].Spec.(*gatewayv1.GatewaySpec).DeepCopy()
			mutate(spec)
			snap.Gateways[i].Spec = spec
		}
	}
	return snap, stored[0]
}

func statusOf(t *testing.T, out gateway.Output, kind, ns, name string) *gatewayv1.GatewayStatus {
	t.Helper()
	for _, s := range out.Statuses {
		if s.Kind.Kind == kind && s.Namespace == ns && s.Name == name {
			return s.Status.(*gatewayv1.GatewayStatus)
		}
	}
	return nil
}

// TestReferenceWaypoint translates the ambient reference in ambient mode:
// the waypoint Gateway of the builtin istio-waypoint class yields no
// synthetic Gateway or VirtualService, and its status (Accepted,
// Programmed with the Service it is assigned to, ResolvedRefs, the HBONE
// listener accepted, the Service's IP and hostname as addresses) is the one
// Istio wrote, field by field (lastTransitionTime aside).
func TestReferenceWaypoint(t *testing.T) {
	snap, stored := ambientSnapshot(t, nil)
	desc := "The default Istio waypoint GatewayClass"
	snap.GatewayClasses = append(snap.GatewayClasses, gateway.NewClassObject(gateway.Class{Name: "istio-waypoint",
		Controller: gateway.MeshControllerName}))
	if d := snap.GatewayClasses[len(snap.GatewayClasses)-1].Spec.(*gatewayv1.GatewayClassSpec).Description; d == nil || *d != desc {
		t.Errorf("istio-waypoint description %v, want %q", d, desc)
	}
	out := gateway.Translate(snap, gateway.Options{DomainSuffix: domain, Ambient: true})
	var classAccepted bool
	for _, s := range out.Statuses {
		if s.Kind.Kind == "GatewayClass" && s.Name == "istio-waypoint" {
			c := s.Status.(*gatewayv1.GatewayClassStatus).Conditions
			classAccepted = len(c) == 1 && c[0].Reason == "Accepted" && c[0].Message == "Handled by Istio controller"
		}
	}
	if !classAccepted {
		t.Error("the istio-waypoint class is not accepted as Istio accepts it")
	}
	if len(out.Gateways) != 0 || len(out.VirtualServices) != 0 {
		t.Errorf("a waypoint yielded %d Gateways and %d VirtualServices, Istio derives none", len(out.Gateways), len(out.VirtualServices))
	}
	st := statusOf(t, out, gvk.KubernetesGateway.Kind, "travel", "booking-waypoint")
	if st == nil {
		t.Fatal("no status for the waypoint")
	}
	if d := golden.Diff("status", withoutTimes(generic(t, st)), withoutTimes(stored["status"])); len(d) > 0 {
		t.Errorf("waypoint status differs from Istio's:\n%s", strings.Join(d, "\n"))
	}

	// outside ambient mode istio-waypoint is nobody's class
	out = gateway.Translate(snap, gateway.Options{DomainSuffix: domain})
	if st := statusOf(t, out, gvk.KubernetesGateway.Kind, "travel", "booking-waypoint"); st != nil {
		t.Errorf("without ambient mode the waypoint got a status: %+v", st)
	}
}

// A waypoint listener that is not HBONE on 15008 is reported as Istio
// reports it (Accepted False, UnsupportedProtocol) without failing the
// Gateway, and the problem is on warningz; an HBONE listener on a Gateway
// of class istio stays refused.
func TestWaypointListenerChecks(t *testing.T) {
	snap, _ := ambientSnapshot(t, func(s *gatewayv1.GatewaySpec) {
		s.Listeners = append(s.Listeners, gatewayv1.Listener{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType})
	})
	out := gateway.Translate(snap, gateway.Options{DomainSuffix: domain, Ambient: true})
	st := statusOf(t, out, gvk.KubernetesGateway.Kind, "travel", "booking-waypoint")
	if st == nil || len(st.Listeners) != 2 {
		t.Fatalf("status %+v", st)
	}
	if len(out.Gateways) != 0 {
		t.Errorf("%d synthetic Gateways", len(out.Gateways))
	}
	cond := func(conds []metav1.Condition, typ string) metav1.Condition {
		for _, c := range conds {
			if c.Type == typ {
				return c
			}
		}
		return metav1.Condition{}
	}
	if c := cond(st.Listeners[0].Conditions, "Accepted"); c.Status != "True" {
		t.Errorf("mesh listener Accepted %+v", c)
	}
	if c := cond(st.Listeners[1].Conditions, "Accepted"); c.Status != "False" || c.Reason != "UnsupportedProtocol" ||
		c.Message != `Expected a single listener on port 15008 with protocol "HBONE"` {
		t.Errorf("http listener Accepted %+v", c)
	}
	if c := cond(st.Conditions, "Accepted"); c.Status != "True" || c.Reason != "Accepted" {
		t.Errorf("Gateway Accepted %+v (Istio still counts the listener as valid)", c)
	}
	var problems []string
	for _, s := range out.Statuses {
		for _, p := range gateway.StatusProblems(s) {
			problems = append(problems, p.Object+" "+p.Field+" "+p.Message)
		}
	}
	if want := "Gateway travel/booking-waypoint status.listeners[http] Accepted=False UnsupportedProtocol: " +
		`Expected a single listener on port 15008 with protocol "HBONE"`; !strings.Contains(strings.Join(problems, "\n"), want) {
		t.Errorf("problems %q, want %q", problems, want)
	}

	snap, _ = ambientSnapshot(t, nil)
	snap.Gateways[0].Spec.(*gatewayv1.GatewaySpec).GatewayClassName = "istio"
	out = gateway.Translate(snap, gateway.Options{DomainSuffix: domain, Ambient: true})
	st = statusOf(t, out, gvk.KubernetesGateway.Kind, "travel", "booking-waypoint")
	if c := cond(st.Listeners[0].Conditions, "Accepted"); c.Status != "False" ||
		c.Message != `protocol "HBONE" is only supported for waypoint proxies` {
		t.Errorf("HBONE on class istio: %+v", c)
	}
}

// A waypoint whose Service is missing (its template failed, say) is
// accepted but not programmed, with Istio's reason and message, and no
// addresses: ztunnel is sent no waypoint for it.
func TestWaypointWithoutService(t *testing.T) {
	snap, _ := ambientSnapshot(t, nil)
	kept := snap.Services[:0]
	for _, s := range snap.Services {
		if s.Name != "booking-waypoint" {
			kept = append(kept, s)
		}
	}
	snap.Services = kept
	out := gateway.Translate(snap, gateway.Options{DomainSuffix: domain, Ambient: true})
	st := statusOf(t, out, gvk.KubernetesGateway.Kind, "travel", "booking-waypoint")
	if st == nil {
		t.Fatal("no status")
	}
	var programmed, accepted metav1.Condition
	for _, c := range st.Conditions {
		switch c.Type {
		case "Programmed":
			programmed = c
		case "Accepted":
			accepted = c
		}
	}
	if accepted.Status != "True" {
		t.Errorf("Accepted %+v", accepted)
	}
	if programmed.Status != "False" || programmed.Reason != "AddressNotUsable" ||
		programmed.Message != `Failed to assign to any requested addresses: hostname "booking-waypoint.travel.svc.cluster.local" not found` {
		t.Errorf("Programmed %+v", programmed)
	}
	if len(st.Addresses) != 0 {
		t.Errorf("addresses %v", st.Addresses)
	}
}
