package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	securityapi "istio.io/api/security/v1beta1"
	typeapi "istio.io/api/type/v1beta1"
	clientsecurity "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/refdata"
)

// In ambient mode a waypoint Gateway of the builtin istio-waypoint class
// goes the whole way through the API server: istiod generates its
// Deployment and Service from the injector's waypoint template, writes
// its status (Programmed with the Service's IP and hostname once the
// Service has endpoints), and then writes on each AuthorizationPolicy
// where it applies: ZtunnelAccepted for an L4 policy, WaypointAccepted
// for one bound through a Service that uses the waypoint, TargetNotFound
// for a targetRef to a missing Service (also on warningz). Nothing is
// rewritten once right.
func TestAmbientWaypointAndPolicyStatus(t *testing.T) {
	env := kube.Shared(t)
	sys := env.NewNamespace(t, nil).Name
	ns := env.NewNamespace(t, map[string]string{"istio.io/dataplane-mode": "ambient"}).Name
	ctx := context.Background()
	applyReferenceInjector(t, env, refdata.Dir(t, "gateways"), sys)

	_, err := env.GatewayAPI.GatewayV1().Gateways(ns).Create(ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "booking-waypoint", Namespace: ns, Labels: map[string]string{"istio.io/waypoint-for": "service"}},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "istio-waypoint",
			Listeners: []gatewayv1.Listener{{Name: "mesh", Port: 15008, Protocol: "HBONE"}}},
	}, metav1.CreateOptions{})
	must(t, err)
	_, err = env.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "booking", Namespace: ns, Labels: map[string]string{"istio.io/use-waypoint": "booking-waypoint"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "booking"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 9080}}}}, metav1.CreateOptions{})
	must(t, err)
	policies := []*clientsecurity.AuthorizationPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "flights-l4", Namespace: ns},
			Spec: securityapi.AuthorizationPolicy{Selector: &typeapi.WorkloadSelector{MatchLabels: map[string]string{"app": "flights"}},
				Rules: []*securityapi.Rule{{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{Ports: []string{"8000"}}}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "booking-get-only", Namespace: ns},
			Spec: securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{{Kind: "Service", Name: "booking"}},
				Rules: []*securityapi.Rule{{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{Methods: []string{"GET"}}}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bad-ref", Namespace: ns},
			Spec: securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{{Kind: "Service", Name: "nope"}}}},
	}
	for _, p := range policies {
		_, err := env.Istio.SecurityV1().AuthorizationPolicies(ns).Create(ctx, p, metav1.CreateOptions{})
		must(t, err)
	}

	d := startIstiod(t, env, sys, func(a *bootstrap.PilotArgs) { a.EnableAmbient = true })

	var svc *corev1.Service
	eventually(t, "the waypoint's Deployment and Service generated", func() (bool, string) {
		dep, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "booking-waypoint", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if dep.Labels["gateway.istio.io/managed"] != "istio.io-mesh-controller" {
			return false, fmt.Sprintf("Deployment labels %v", dep.Labels)
		}
		svc, err = env.Kube.CoreV1().Services(ns).Get(ctx, "booking-waypoint", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ok := svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.Ports) == 2 && svc.Spec.Ports[1].Port == 15008
		return ok, fmt.Sprintf("Service %+v", svc.Spec)
	})

	// kube-controller-manager is not running: write the Service's endpoints
	ready := true
	_, err = env.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "booking-waypoint-a1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "booking-waypoint"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.5.9"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptrTo("mesh"), Port: ptrTo(int32(15008))}},
	}, metav1.CreateOptions{})
	must(t, err)
	host := "booking-waypoint." + ns + ".svc.cluster.local"
	eventually(t, "the waypoint Programmed with its addresses", func() (bool, string) {
		g, err := env.GatewayAPI.GatewayV1().Gateways(ns).Get(ctx, "booking-waypoint", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var programmed string
		for _, c := range g.Status.Conditions {
			if c.Type == "Programmed" {
				programmed = string(c.Status) + " " + c.Message
			}
		}
		addrs := make([]string, 0, len(g.Status.Addresses))
		for _, a := range g.Status.Addresses {
			addrs = append(addrs, string(*a.Type)+"="+a.Value)
		}
		want := "IPAddress=" + svc.Spec.ClusterIP + ",Hostname=" + host
		return programmed == "True Resource programmed, assigned to service(s) "+host+":15008" && strings.Join(addrs, ",") == want,
			fmt.Sprintf("Programmed %q, addresses %v (want %s)", programmed, addrs, want)
	})

	want := map[string]string{
		"flights-l4":       "ZtunnelAccepted True Accepted attached to ztunnel",
		"booking-get-only": "WaypointAccepted True Accepted bound to " + ns + "/booking-waypoint",
		"bad-ref":          "WaypointAccepted False TargetNotFound Service " + ns + "/nope was not found",
	}
	rvs := map[string]string{}
	for name, w := range want {
		eventually(t, "the status of "+name, func() (bool, string) {
			p, err := env.Istio.SecurityV1().AuthorizationPolicies(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			var got []string
			for _, c := range p.Status.Conditions {
				got = append(got, fmt.Sprintf("%s %s %s %s", c.Type, c.Status, c.Reason, c.Message))
				if c.ObservedGeneration != 1 || c.LastTransitionTime == nil {
					return false, fmt.Sprintf("condition %v", c)
				}
			}
			rvs[name] = p.ResourceVersion
			return strings.Join(got, ";") == w, fmt.Sprintf("conditions %v, want %s", got, w)
		})
	}
	eventually(t, "the bad targetRef on warningz", func() (bool, string) {
		var msgs []string
		for _, p := range d.warnings() {
			msgs = append(msgs, p.Object+": "+p.Message)
		}
		all := strings.Join(msgs, "\n")
		return strings.Contains(all, "AuthorizationPolicy "+ns+"/bad-ref: WaypointAccepted=False TargetNotFound"), all
	})
	_, err = env.Kube.CoordinationV1().Leases(sys).Get(ctx, "istio-status-leader", metav1.GetOptions{})
	must(t, err)

	// written once: nothing is rewritten while nothing changes
	time.Sleep(2 * time.Second)
	for name, rv := range rvs {
		p, err := env.Istio.SecurityV1().AuthorizationPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		must(t, err)
		if p.ResourceVersion != rv {
			t.Errorf("%s rewritten (resourceVersion %s, then %s)", name, rv, p.ResourceVersion)
		}
	}
}
