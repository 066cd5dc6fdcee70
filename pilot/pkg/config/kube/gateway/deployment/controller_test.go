package deployment

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/tests/refdata"
)

// harness runs a Controller on client-go's fake clientset (which
// implements server-side apply and managed fields).
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	gateways krt.StaticCollection[config.Config]
	ctrl     *Controller
	board    *diag.Board

	mu      sync.Mutex
	applies []string // kind/namespace/name of every apply
}

type harnessOpts struct {
	injection    *inject.Config
	objects      []runtime.Object
	revision     string
	listenerSets []config.Config
	ambient      bool
}

func newHarness(t *testing.T, o harnessOpts, gateways ...config.Config) *harness {
	t.Helper()
	client := fake.NewClientset(o.objects...)
	client.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{Major: "1", Minor: "37"}
	h := &harness{t: t, client: client, board: diag.New(nil),
		gateways: krt.NewStaticCollection[config.Config](gateways)}
	client.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		h.mu.Lock()
		h.applies = append(h.applies, p.GetResource().Resource+"/"+p.GetNamespace()+"/"+p.GetName())
		h.mu.Unlock()
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	cms, nss := factory.Core().V1().ConfigMaps().Informer(), factory.Core().V1().Namespaces().Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	var sets krt.Collection[config.Config]
	if o.listenerSets != nil {
		sets = krt.NewStaticCollection[config.Config](o.listenerSets)
	}
	h.ctrl = New(Options{
		Kube: client, Gateways: h.gateways, ListenerSets: sets, ConfigMaps: cms, Namespaces: nss,
		Injection: func() *inject.Config { return o.injection }, InjectionName: "istio-system/istio-sidecar-injector",
		Mesh: mesh.DefaultMeshConfig, SystemNamespace: "istio-system", ManualDeployment: true, Problems: h.board,
		Env: Environment{ClusterID: "Kubernetes", Revision: o.revision, CopyLabelsAnnotations: true, Ambient: o.ambient},
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ctrl.Run(stop)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	return h
}

func (h *harness) applyCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.applies)
}

// settle waits until every queued Gateway was reconciled, then once more
// for a reconcile of every Gateway.
func (h *harness) settle() {
	h.t.Helper()
	h.waitFor("the controller runs", func() (bool, string) {
		h.ctrl.mu.Lock()
		defer h.ctrl.mu.Unlock()
		return h.ctrl.cur != nil, ""
	})
	quiet := 0
	h.waitFor("an empty queue", func() (bool, string) {
		h.ctrl.mu.Lock()
		t := h.ctrl.cur
		h.ctrl.mu.Unlock()
		if t != nil && t.queue.Len() == 0 && h.ctrl.idle() {
			quiet++
		} else {
			quiet = 0
		}
		return quiet >= 20, ""
	})
}

func (h *harness) waitFor(what string, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s: %s", what, detail)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) problems() string {
	var out []string
	for _, p := range h.board.List() {
		if p.Source == ProblemSource {
			out = append(out, p.Object+": "+p.Message)
		}
	}
	return strings.Join(out, "\n")
}

func gatewayConfig(ns, name, class string, mutate ...func(*config.Config, *gatewayv1.GatewaySpec)) config.Config {
	spec := &gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class), Listeners: []gatewayv1.Listener{
		{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}}
	c := config.Config{Meta: config.Meta{GroupVersionKind: gvk.KubernetesGateway, Namespace: ns, Name: name,
		UID: "uid-" + name, Generation: 1}, Spec: spec}
	for _, m := range mutate {
		m(&c, spec)
	}
	return c
}

func referenceInjector(t *testing.T) *inject.Config {
	return loadInjector(t, refdata.Dir(t, "gateways"))
}

func (h *harness) deployment(ns, name string) *appsv1.Deployment {
	d, err := h.client.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return d
}

func (h *harness) service(ns, name string) *corev1.Service {
	s, err := h.client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return s
}

// A Gateway of class istio gets its ServiceAccount, Deployment and Service
// applied once, owned by it and labeled as Istio labels them; reconciling
// again without a change writes nothing.
func TestAppliesOnceAndNoOpWhenUnchanged(t *testing.T) {
	h := newHarness(t, harnessOpts{injection: referenceInjector(t)}, gatewayConfig("shop", "edge", "istio"))
	h.settle()
	h.mu.Lock()
	got := strings.Join(h.applies, ",")
	h.mu.Unlock()
	if got != "serviceaccounts/shop/edge-istio,deployments/shop/edge-istio,services/shop/edge-istio" {
		t.Fatalf("applies %s, want the ServiceAccount, Deployment and Service once each", got)
	}
	d := h.deployment("shop", "edge-istio")
	if d == nil {
		t.Fatal("no Deployment")
	}
	if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].UID != "uid-edge" || d.OwnerReferences[0].Kind != "Gateway" {
		t.Errorf("owner references %+v", d.OwnerReferences)
	}
	for k, v := range map[string]string{LabelManaged: "istio.io-gateway-controller", LabelGatewayName: "edge", LabelGatewayClass: "istio"} {
		if d.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, d.Labels[k], v)
		}
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; len(args) < 2 || args[0] != "proxy" || args[1] != "router" {
		t.Errorf("args %v", args)
	}
	svc := h.service("shop", "edge-istio")
	if svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Spec.Ports) != 2 || svc.Spec.Ports[1].Name != "http" {
		t.Fatalf("Service %+v", svc)
	}
	for i := 0; i < 3; i++ {
		h.ctrl.EnqueueAll()
		h.settle()
	}
	// a status write on the Gateway is no reason either
	gw := gatewayConfig("shop", "edge", "istio")
	gw.ResourceVersion = "2"
	gw.Status = &gatewayv1.GatewayStatus{}
	h.gateways.Set(gw)
	h.settle()
	if n := h.applyCount(); n != 3 {
		t.Errorf("%d applies after reconciling an unchanged Gateway again, want the first 3 only", n)
	}
	if p := h.problems(); p != "" {
		t.Errorf("problems: %s", p)
	}
}

// An edit of a generated object by someone else is undone; a deleted one
// is recreated; a field no longer rendered is removed.
func TestDriftRepairedAndStaleFieldsRemoved(t *testing.T) {
	gw := gatewayConfig("shop", "edge", "istio", func(c *config.Config, _ *gatewayv1.GatewaySpec) {
		c.Labels = map[string]string{"team": "web"}
	})
	h := newHarness(t, harnessOpts{injection: referenceInjector(t)}, gw)
	h.settle()
	ctx := context.Background()
	d := h.deployment("shop", "edge-istio")
	d.Spec.Template.Spec.Containers[0].Image = "evil/proxy:latest"
	if _, err := h.client.AppsV1().Deployments("shop").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the image restored", func() (bool, string) {
		img := h.deployment("shop", "edge-istio").Spec.Template.Spec.Containers[0].Image
		return img == "istio-testing/proxyv2:1.31-ref", img
	})
	if err := h.client.CoreV1().Services("shop").Delete(ctx, "edge-istio", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the Service recreated", func() (bool, string) { return h.service("shop", "edge-istio") != nil, "" })

	// the label the Gateway carried goes from what it generates
	if h.service("shop", "edge-istio").Labels["team"] != "web" {
		t.Fatalf("labels %v: the Gateway's labels are not copied", h.service("shop", "edge-istio").Labels)
	}
	h.gateways.Set(gatewayConfig("shop", "edge", "istio"))
	h.waitFor("the copied label removed", func() (bool, string) {
		s := h.service("shop", "edge-istio")
		_, has := s.Labels["team"]
		return !has, fmt.Sprint(s.Labels)
	})
	h.settle()
	before := h.applyCount()
	h.ctrl.EnqueueAll()
	h.settle()
	if n := h.applyCount(); n != before {
		t.Errorf("%d more applies once repaired", n-before)
	}
}

// An object of the generated name that is not labeled
// gateway.istio.io/managed is not Istio's: it is left as it is and the
// Gateway's problem says so; the other objects are generated.
func TestUnmanagedObjectLeftAlone(t *testing.T) {
	mine := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "edge-istio", Namespace: "shop"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 8080}}}}
	h := newHarness(t, harnessOpts{injection: referenceInjector(t), objects: []runtime.Object{mine}}, gatewayConfig("shop", "edge", "istio"))
	h.settle()
	if s := h.service("shop", "edge-istio"); len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "web" {
		t.Errorf("the user's Service was changed: %+v", s.Spec)
	}
	if h.deployment("shop", "edge-istio") == nil {
		t.Error("no Deployment")
	}
	if p := h.problems(); !strings.Contains(p, "Service shop/edge-istio exists without the label gateway.istio.io/managed") {
		t.Errorf("problems %q", p)
	}
}

// Without an injection configuration, or with one lacking kube-gateway,
// nothing is written and warningz says why; other classes, Gateways with
// a hostname address, a newer controller version or another revision are
// not Istio's to deploy.
func TestNothingGenerated(t *testing.T) {
	noTemplate, err := inject.ParseConfig("templates:\n  sidecar: '{}'\n", "{}")
	if err != nil {
		t.Fatal(err)
	}
	hostname := gatewayv1.HostnameAddressType
	cases := []struct {
		name      string
		injection *inject.Config
		gw        config.Config
		problem   string
	}{
		{"no injection config", nil, gatewayConfig("shop", "edge", "istio"),
			"there is no injection configuration (ConfigMap istio-system/istio-sidecar-injector missing or never valid)"},
		{"no kube-gateway template", noTemplate, gatewayConfig("shop", "edge", "istio"), `no "kube-gateway" template defined`},
		{"missing parametersRef", referenceInjector(t), gatewayConfig("shop", "edge", "istio", func(_ *config.Config, s *gatewayv1.GatewaySpec) {
			s.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{Kind: "ConfigMap", Name: "opts"}}
		}), `parametersRef targeting configmap "shop/opts", but configmap does not exist`},
		{"other class", referenceInjector(t), gatewayConfig("shop", "edge", "istio-remote"), ""},
		{"hostname address", referenceInjector(t), gatewayConfig("shop", "edge", "istio", func(_ *config.Config, s *gatewayv1.GatewaySpec) {
			s.Addresses = []gatewayv1.GatewaySpecAddress{{Type: &hostname, Value: "ingress.example"}}
		}), ""},
		{"newer controller", referenceInjector(t), gatewayConfig("shop", "edge", "istio", func(c *config.Config, _ *gatewayv1.GatewaySpec) {
			c.Annotations = map[string]string{annotationControllerVersion: "6"}
		}), ""},
		{"other revision", referenceInjector(t), gatewayConfig("shop", "edge", "istio", func(c *config.Config, _ *gatewayv1.GatewaySpec) {
			c.Labels = map[string]string{labelRevision: "canary"}
		}), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{injection: tc.injection}, tc.gw)
			h.settle()
			if n := h.applyCount(); n != 0 {
				t.Errorf("%d applies", n)
			}
			p := h.problems()
			if tc.problem == "" && p != "" || !strings.Contains(p, tc.problem) {
				t.Errorf("problems %q, want %q", p, tc.problem)
			}
		})
	}
}

// One Gateway that cannot be rendered stops nothing else, and its problem
// goes once it is fixed.
func TestBadGatewayStopsNothingElse(t *testing.T) {
	bad := gatewayConfig("shop", "bad", "istio", func(_ *config.Config, s *gatewayv1.GatewaySpec) {
		s.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{Kind: "Secret", Name: "x"}}
	})
	h := newHarness(t, harnessOpts{injection: referenceInjector(t)}, bad, gatewayConfig("shop", "edge", "istio"))
	h.settle()
	if h.deployment("shop", "edge-istio") == nil {
		t.Error("the good Gateway is not deployed")
	}
	if h.deployment("shop", "bad-istio") != nil {
		t.Error("the bad Gateway is deployed")
	}
	if p := h.problems(); !strings.Contains(p, "Gateway shop/bad: its Deployment, Service and ServiceAccount are not generated: "+
		"invalid parameters: unknown infrastructure parameters type /Secret") {
		t.Errorf("problems %q", p)
	}
	h.gateways.Set(gatewayConfig("shop", "bad", "istio", func(c *config.Config, _ *gatewayv1.GatewaySpec) { c.Generation = 2 }))
	h.waitFor("the fixed Gateway deployed", func() (bool, string) { return h.deployment("shop", "bad-istio") != nil, h.problems() })
	h.settle()
	if p := h.problems(); p != "" {
		t.Errorf("problems remain: %s", p)
	}
}

// The ConfigMap of spec.infrastructure.parametersRef customizes the
// objects (and asks for the optional HorizontalPodAutoscaler); changing it
// re-applies.
func TestParametersRefCustomization(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "opts", Namespace: "shop"}, Data: map[string]string{
		"deployment":              "spec:\n  replicas: 4\n",
		"horizontalPodAutoscaler": "spec:\n  minReplicas: 2\n  maxReplicas: 3\n",
	}}
	gw := gatewayConfig("shop", "edge", "istio", func(_ *config.Config, s *gatewayv1.GatewaySpec) {
		s.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{Kind: "ConfigMap", Name: "opts"}}
	})
	h := newHarness(t, harnessOpts{injection: referenceInjector(t), objects: []runtime.Object{cm}}, gw)
	h.waitFor("4 replicas", func() (bool, string) {
		d := h.deployment("shop", "edge-istio")
		return d != nil && d.Spec.Replicas != nil && *d.Spec.Replicas == 4, h.problems()
	})
	h.waitFor("the HorizontalPodAutoscaler", func() (bool, string) {
		hpa, err := h.client.AutoscalingV2().HorizontalPodAutoscalers("shop").Get(context.Background(), "edge-istio", metav1.GetOptions{})
		return err == nil && hpa.Spec.MaxReplicas == 3, fmt.Sprint(err)
	})
	cm = cm.DeepCopy()
	cm.Data["deployment"] = "spec:\n  replicas: 2\n"
	if _, err := h.client.CoreV1().ConfigMaps("shop").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("2 replicas", func() (bool, string) {
		d := h.deployment("shop", "edge-istio")
		return *d.Spec.Replicas == 2, fmt.Sprint(*d.Spec.Replicas)
	})
}

// The oldest ConfigMap of the system namespace labeled
// gateway.istio.io/defaults-for-class=istio customizes every Gateway of the
// class, before the Gateway's own parametersRef.
func TestClassDefaults(t *testing.T) {
	older := metav1.NewTime(time.Unix(1000, 0))
	newer := metav1.NewTime(time.Unix(2000, 0))
	defaults := func(name string, at metav1.Time, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "istio-system", CreationTimestamp: at,
			Labels: map[string]string{LabelClassDefaults: "istio"}}, Data: map[string]string{"deployment": data}}
	}
	own := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "opts", Namespace: "shop"},
		Data: map[string]string{"deployment": "metadata:\n  annotations:\n    mine: \"yes\"\n"}}
	gw := gatewayConfig("shop", "edge", "istio", func(_ *config.Config, s *gatewayv1.GatewaySpec) {
		s.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: &gatewayv1.LocalParametersReference{Kind: "ConfigMap", Name: "opts"}}
	})
	h := newHarness(t, harnessOpts{injection: referenceInjector(t), objects: []runtime.Object{
		defaults("b-newer", newer, "spec:\n  replicas: 9\n"),
		defaults("a-older", older, "spec:\n  replicas: 3\nmetadata:\n  annotations:\n    mine: \"no\"\n"),
		own,
	}}, gw)
	h.waitFor("the class defaults and the Gateway's own", func() (bool, string) {
		d := h.deployment("shop", "edge-istio")
		if d == nil {
			return false, h.problems()
		}
		return *d.Spec.Replicas == 3 && d.Annotations["mine"] == "yes", fmt.Sprint(*d.Spec.Replicas, d.Annotations)
	})
}

// A Deployment Istio created before 1.24 selects pods by
// istio.io/gateway-name too; a selector cannot change, so it is kept.
func TestLegacySelectorKept(t *testing.T) {
	legacy := map[string]string{LabelGatewayName: "edge", "istio.io/gateway-name": "edge"}
	old := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "edge-istio", Namespace: "shop",
		Labels: map[string]string{LabelManaged: "istio.io-gateway-controller"}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: legacy},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: legacy}}}}
	h := newHarness(t, harnessOpts{injection: referenceInjector(t), objects: []runtime.Object{old}}, gatewayConfig("shop", "edge", "istio"))
	h.waitFor("the Deployment applied", func() (bool, string) {
		d := h.deployment("shop", "edge-istio")
		return len(d.Spec.Template.Spec.Containers) == 1, ""
	})
	d := h.deployment("shop", "edge-istio")
	if d.Spec.Selector.MatchLabels["istio.io/gateway-name"] != "edge" || d.Spec.Template.Labels["istio.io/gateway-name"] != "edge" {
		t.Errorf("selector %v, pod labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	h.settle()
	before := h.applyCount()
	h.ctrl.EnqueueAll()
	h.settle()
	if n := h.applyCount(); n != before {
		t.Errorf("%d more applies of an unchanged legacy Deployment", n-before)
	}
}

// The listeners of a ListenerSet the Gateway admits add Service ports; one
// it does not admit adds none.
func TestListenerSetPorts(t *testing.T) {
	same := gatewayv1.NamespacesFromSame
	gw := gatewayConfig("shop", "edge", "istio", func(_ *config.Config, s *gatewayv1.GatewaySpec) {
		s.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &same}}
	})
	set := func(ns, name string, port gatewayv1.PortNumber) config.Config {
		return config.Config{Meta: config.Meta{GroupVersionKind: gvk.ListenerSet, Namespace: ns, Name: name},
			Spec: &gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: "edge", Namespace: ptrTo(gatewayv1.Namespace("shop"))},
				Listeners: []gatewayv1.ListenerEntry{{Name: gatewayv1.SectionName(name), Port: port, Protocol: gatewayv1.HTTPSProtocolType}}}}
	}
	h := newHarness(t, harnessOpts{injection: referenceInjector(t),
		listenerSets: []config.Config{set("shop", "extra", 8443), set("other", "foreign", 9443)}}, gw)
	h.waitFor("the ListenerSet's port", func() (bool, string) {
		s := h.service("shop", "edge-istio")
		if s == nil {
			return false, h.problems()
		}
		var ports []string
		for _, p := range s.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%s:%d", p.Name, p.Port))
		}
		got := strings.Join(ports, ",")
		return got == "status-port:15021,http:80,extra:8443", got
	})
}
