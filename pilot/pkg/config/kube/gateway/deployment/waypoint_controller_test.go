package deployment

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/inject"
)

func waypointConfig(ns, name string) config.Config {
	return gatewayConfig(ns, name, "istio-waypoint", func(c *config.Config, s *gatewayv1.GatewaySpec) {
		c.Labels = map[string]string{"istio.io/waypoint-for": "service"}
		s.Listeners = []gatewayv1.Listener{{Name: "mesh", Port: 15008, Protocol: "HBONE"}}
	})
}

// In ambient mode a Gateway of the builtin istio-waypoint class is deployed
// from the waypoint template: objects named after the Gateway, managed by
// istio.io-mesh-controller, a ClusterIP Service with status-port and mesh.
func TestWaypointDeployed(t *testing.T) {
	h := newHarness(t, harnessOpts{injection: referenceInjector(t), ambient: true}, waypointConfig("travel", "booking-waypoint"))
	h.waitFor("the waypoint's Deployment", func() (bool, string) { return h.deployment("travel", "booking-waypoint") != nil, h.problems() })
	h.settle()
	d := h.deployment("travel", "booking-waypoint")
	if d.Labels[LabelManaged] != "istio.io-mesh-controller" || d.Spec.Template.Labels["istio.io/dataplane-mode"] != "none" {
		t.Errorf("Deployment labels %v, pod labels %v", d.Labels, d.Spec.Template.Labels)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; len(args) < 2 || args[1] != "waypoint" {
		t.Errorf("proxy args %v, want the waypoint's", args)
	}
	svc := h.service("travel", "booking-waypoint")
	if svc == nil {
		t.Fatal("no Service")
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || len(svc.Spec.Ports) != 2 || svc.Spec.Ports[1].Port != 15008 ||
		svc.Spec.Ports[1].Name != "mesh" || svc.Labels[LabelManaged] != "istio.io-mesh-controller" {
		t.Errorf("Service %+v labels %v", svc.Spec, svc.Labels)
	}
	if p := h.problems(); p != "" {
		t.Errorf("problems: %s", p)
	}
	before := h.applyCount()
	h.ctrl.EnqueueAll()
	h.settle()
	if n := h.applyCount(); n != before {
		t.Errorf("%d applies after a reconcile without change", n-before)
	}
}

// As in the ambient reference, a waypoint whose ServiceAccount and Service
// exist without gateway.istio.io/managed gets only its Deployment; the
// others are left alone and warningz says so.
func TestWaypointExistingObjectsLeftAlone(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "booking-waypoint", Namespace: "travel"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "booking-waypoint", Namespace: "travel"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "mesh", Port: 15008}}}}
	h := newHarness(t, harnessOpts{injection: referenceInjector(t), ambient: true, objects: []runtime.Object{sa, svc}},
		waypointConfig("travel", "booking-waypoint"))
	h.waitFor("the waypoint's Deployment", func() (bool, string) { return h.deployment("travel", "booking-waypoint") != nil, h.problems() })
	h.settle()
	if s := h.service("travel", "booking-waypoint"); len(s.Spec.Ports) != 1 || s.Labels[LabelManaged] != "" {
		t.Errorf("the existing Service was changed: %+v %v", s.Spec, s.Labels)
	}
	p := h.problems()
	for _, want := range []string{"Service travel/booking-waypoint exists without the label", "ServiceAccount travel/booking-waypoint exists without the label"} {
		if !strings.Contains(p, want) {
			t.Errorf("problems %q, want %q", p, want)
		}
	}
}

// Outside ambient mode istio-waypoint is no class of Istio's: nothing is
// deployed. A waypoint template that fails renders nothing and warningz
// says why.
func TestWaypointNotDeployed(t *testing.T) {
	t.Run("ambient off", func(t *testing.T) {
		h := newHarness(t, harnessOpts{injection: referenceInjector(t)}, waypointConfig("travel", "booking-waypoint"))
		h.settle()
		if n := h.applyCount(); n != 0 {
			t.Errorf("%d applies", n)
		}
	})
	bad, err := inject.ParseConfig("templates:\n  waypoint: |\n    {{ .Values.nothing.here }}\n", "{}")
	if err != nil {
		t.Fatal(err)
	}
	none, err := inject.ParseConfig("templates:\n  kube-gateway: '{}'\n", "{}")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		injection *inject.Config
		problem   string
	}{
		"template fails":   {bad, `Gateway travel/booking-waypoint: its Deployment, Service and ServiceAccount are not generated: template "waypoint"`},
		"template missing": {none, `no "waypoint" template defined`},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{injection: tc.injection, ambient: true}, waypointConfig("travel", "booking-waypoint"))
			h.waitFor("the problem", func() (bool, string) { return strings.Contains(h.problems(), tc.problem), h.problems() })
			h.settle()
			if n := h.applyCount(); n != 0 {
				t.Errorf("%d applies", n)
			}
		})
	}
}
