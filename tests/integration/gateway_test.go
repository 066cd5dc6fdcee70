package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	"github.com/meshplane/istiod/tests/golden"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/refdata"
)

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// decodeDocs splits a multi-document YAML and decodes each document with
// decode(kind, json).
func decodeDocs(t *testing.T, data []byte, decode func(kind string, js []byte)) {
	t.Helper()
	for _, doc := range docSeparator.Split(string(data), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(js, &tm); err != nil {
			t.Fatal(err)
		}
		decode(tm.Kind, js)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// normalized renders v as generic JSON with the test namespace renamed to
// the reference's and every lastTransitionTime dropped.
func normalized(t *testing.T, v any, ns string) any {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	b = bytes.ReplaceAll(b, []byte(ns), []byte("shop"))
	var out any
	must(t, json.Unmarshal(b, &out))
	return dropKeys(out, "lastTransitionTime")
}

func dropKeys(v any, keys ...string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
	next:
		for k, e := range x {
			for _, drop := range keys {
				if k == drop {
					continue next
				}
			}
			out[k] = dropKeys(e, keys...)
		}
		return out
	case []any:
		for i := range x {
			x[i] = dropKeys(x[i], keys...)
		}
	}
	return v
}

// referenceStatuses reads the statuses Istio wrote, by kind/name.
func referenceStatuses(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "real", "gatewayapi-status.json"))
	must(t, err)
	var list struct{ Items []map[string]any }
	must(t, json.Unmarshal(b, &list))
	out := map[string]any{}
	for _, o := range list.Items {
		out[o["kind"].(string)+"/"+o["metadata"].(map[string]any)["name"].(string)] = dropKeys(o["status"], "lastTransitionTime")
	}
	return out
}

// applyReferenceInputs creates, in ns, the Services and EndpointSlices of
// the reference and the injector ConfigMap whose kube-gateway template
// istiod (started in ns) renders Gateway edge's Deployment, Service and
// ServiceAccount from; it returns the Gateway API objects, not yet created.
func applyReferenceInputs(t *testing.T, env *kube.Env, dir, ns string) (*gatewayv1.Gateway, *gatewayv1.HTTPRoute) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(dir, "input", "gateways.yaml"))
	must(t, err)
	decodeDocs(t, data, func(kind string, js []byte) {
		switch kind {
		case "Service":
			var s corev1.Service
			must(t, json.Unmarshal(js, &s))
			if s.Namespace != "shop" {
				return
			}
			s.Namespace, s.Spec.ClusterIP, s.Spec.ClusterIPs = ns, "", nil
			_, err := env.Kube.CoreV1().Services(ns).Create(ctx, &s, metav1.CreateOptions{})
			must(t, err)
		case "EndpointSlice":
			var es discoveryv1.EndpointSlice
			must(t, json.Unmarshal(js, &es))
			if es.Namespace != "shop" {
				return
			}
			es.Namespace = ns
			_, err := env.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &es, metav1.CreateOptions{})
			must(t, err)
		}
	})
	applyReferenceInjector(t, env, dir, ns)
	return referenceGatewayAPI(t, dir, ns)
}

// startReferenceGateway applies the reference inputs in a new namespace,
// starts istiod there, then creates the reference's Gateway and HTTPRoute;
// it returns the namespace, istiod and the Gateway as created.
func startReferenceGateway(t *testing.T, env *kube.Env, dir string) (string, *istiod, *gatewayv1.Gateway) {
	t.Helper()
	ns := env.NewNamespace(t, nil).Name
	gw, route := applyReferenceInputs(t, env, dir, ns)
	d := startIstiod(t, env, ns)
	ctx := context.Background()
	gwc := env.GatewayAPI.GatewayV1()
	created, err := gwc.Gateways(ns).Create(ctx, gw, metav1.CreateOptions{})
	must(t, err)
	_, err = gwc.HTTPRoutes(ns).Create(ctx, route, metav1.CreateOptions{})
	must(t, err)
	return ns, d, created
}

// referenceGatewayAPI reads the reference's Gateway and HTTPRoute, in ns.
func referenceGatewayAPI(t *testing.T, dir, ns string) (*gatewayv1.Gateway, *gatewayv1.HTTPRoute) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "input", "gatewayapi.yaml"))
	must(t, err)
	var gw *gatewayv1.Gateway
	var route *gatewayv1.HTTPRoute
	decodeDocs(t, data, func(kind string, js []byte) {
		switch kind {
		case "Gateway":
			gw = &gatewayv1.Gateway{}
			must(t, json.Unmarshal(js, gw))
			gw.Namespace = ns
		case "HTTPRoute":
			route = &gatewayv1.HTTPRoute{}
			must(t, json.Unmarshal(js, route))
			route.Namespace = ns
		}
	})
	return gw, route
}

// configzObjects returns the raw /debug/configz objects of a namespace, by
// kind/name.
func (d *istiod) configzObjects(ns string) map[string]map[string]any {
	d.t.Helper()
	code, body := d.get("/debug/configz")
	if code != 200 {
		d.t.Fatalf("configz: %d %s", code, body)
	}
	var all []map[string]any
	must(d.t, json.Unmarshal(body, &all))
	out := map[string]map[string]any{}
	for _, o := range all {
		meta := o["metadata"].(map[string]any)
		if meta["namespace"] == ns {
			out[o["kind"].(string)+"/"+meta["name"].(string)] = o
		}
	}
	return out
}

func diffString(t *testing.T, got, want any) string {
	t.Helper()
	return strings.Join(golden.Diff("", got, want), "\n")
}

// TestGatewayAPIReference applies the reference inputs to a real API server
// and checks that istiod writes back the statuses Istio wrote, creates the
// builtin GatewayClasses, and serves Istio's synthetic objects on
// /debug/configz.
func TestGatewayAPIReference(t *testing.T) {
	dir := refdata.Dir(t, "gateways")
	env := kube.Shared(t)
	ns, d, _ := startReferenceGateway(t, env, dir)
	ctx := context.Background()
	gwc := env.GatewayAPI.GatewayV1()
	want := referenceStatuses(t, dir)

	for _, class := range []string{"istio", "istio-remote"} {
		eventually(t, "GatewayClass "+class+" created and accepted", func() (bool, string) {
			c, err := gwc.GatewayClasses().Get(ctx, class, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			got := normalized(t, c.Status, ns)
			if d := diffString(t, got, want["GatewayClass/"+class]); d != "" {
				return false, d
			}
			wantSpec := map[string]string{"istio": "The default Istio GatewayClass",
				"istio-remote": "Remote to this cluster. Does not deploy or affect configuration."}[class]
			return c.Spec.Description != nil && *c.Spec.Description == wantSpec, fmt.Sprint(c.Spec)
		})
	}
	eventually(t, "Gateway status as Istio wrote it", func() (bool, string) {
		g, err := gwc.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		d := diffString(t, normalized(t, g.Status, ns), want["Gateway/edge"])
		return d == "", d
	})
	eventually(t, "HTTPRoute status as Istio wrote it", func() (bool, string) {
		r, err := gwc.HTTPRoutes(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		d := diffString(t, normalized(t, r.Status, ns), want["HTTPRoute/web"])
		return d == "", d
	})
	g, err := gwc.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
	must(t, err)
	for _, c := range g.Status.Conditions {
		if c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s has no lastTransitionTime", c.Type)
		}
	}

	r, err := gwc.HTTPRoutes(ns).Get(ctx, "web", metav1.GetOptions{})
	must(t, err)
	// each synthetic object is as old as the Gateway API object it comes
	// from: the Gateway, or for routes the HTTPRoute (created after it,
	// possibly in the next second)
	checkSyntheticConfigz(t, d, dir, ns, map[string]metav1.Time{"Gateway": g.CreationTimestamp, "VirtualService": r.CreationTimestamp})
	checkLeaseAndNoRewrite(t, env, d, ns)
}

// checkSyntheticConfigz compares the synthetic objects of /debug/configz
// with Istio's.
func checkSyntheticConfigz(t *testing.T, d *istiod, dir, ns string, createdByKind map[string]metav1.Time) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "real", "configz.json"))
	must(t, err)
	var ref []map[string]any
	must(t, json.Unmarshal(b, &ref))
	for _, o := range ref {
		meta := o["metadata"].(map[string]any)
		name := meta["name"].(string)
		if !strings.Contains(name, "~") {
			continue
		}
		key := o["kind"].(string) + "/" + strings.Replace(name, "shop~", ns+"~", 1)
		created, ok := createdByKind[o["kind"].(string)]
		if !ok {
			t.Fatalf("%s: no source object for a synthetic %s", key, o["kind"])
		}
		eventually(t, key+" on configz as Istio's", func() (bool, string) {
			got, ok := d.configzObjects(ns)[key]
			if !ok {
				return false, "absent"
			}
			gm := got["metadata"].(map[string]any)
			if gm["creationTimestamp"] != created.UTC().Format(time.RFC3339) {
				return false, fmt.Sprintf("creationTimestamp %v, want the Gateway API object's %v", gm["creationTimestamp"], created)
			}
			d := diffString(t, dropKeys(normalized(t, got, ns), "creationTimestamp"), dropKeys(o, "creationTimestamp"))
			return d == "", d
		})
	}
}

// checkLeaseAndNoRewrite checks that this replica holds Istio's gateway
// status Lease, and that a change that leaves the status as it is (a
// label) is not followed by a status write.
func checkLeaseAndNoRewrite(t *testing.T, env *kube.Env, d *istiod, ns string) {
	t.Helper()
	ctx := context.Background()
	lease, err := env.Kube.CoordinationV1().Leases(ns).Get(ctx,
		leaderelection.PerRevision(leaderelection.GatewayStatusController, ""), metav1.GetOptions{})
	must(t, err)
	if lease.Name != "istio-gateway-status-leader-default" || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("lease %s held by %v", lease.Name, lease.Spec.HolderIdentity)
	}
	if !d.srv.IsGatewayStatusLeader() {
		t.Error("istiod does not lead the gateway status Lease")
	}
	gwc := env.GatewayAPI.GatewayV1().Gateways(ns)
	g, err := gwc.Get(ctx, "edge", metav1.GetOptions{})
	must(t, err)
	g.Labels = map[string]string{"touched": "yes"}
	g, err = gwc.Update(ctx, g, metav1.UpdateOptions{})
	must(t, err)
	rv := g.ResourceVersion
	// the label reaches istiod, which recomputes the same status
	time.Sleep(2 * time.Second)
	g, err = gwc.Get(ctx, "edge", metav1.GetOptions{})
	must(t, err)
	if g.ResourceVersion != rv {
		t.Errorf("an unchanged status was rewritten (resourceVersion %s → %s): %v", rv, g.ResourceVersion, g.Status.Conditions)
	}
}

// TestGatewayAPIBadInput checks that bad input ends in the status Istio
// gives, is listed on /debug/warningz, and stops nothing else: a route to a
// missing backend, a ReferenceGrant removed while in use, a listener
// conflict.
func TestGatewayAPIBadInput(t *testing.T) {
	dir := refdata.Dir(t, "gateways")
	env := kube.Shared(t)
	ns, d, _ := startReferenceGateway(t, env, dir)
	other := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	gwc := env.GatewayAPI.GatewayV1()
	_, err := env.Kube.CoreV1().Services(other).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "remote", Namespace: other},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}, metav1.CreateOptions{})
	must(t, err)
	grant := &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Name: "routes-from-" + ns, Namespace: other},
		Spec: gatewayv1beta1.ReferenceGrantSpec{
			From: []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: "HTTPRoute", Namespace: gatewayv1.Namespace(ns)}},
			To:   []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: "Service"}}}}
	_, err = env.GatewayAPI.GatewayV1beta1().ReferenceGrants(other).Create(ctx, grant, metav1.CreateOptions{})
	must(t, err)
	port := gatewayv1.PortNumber(80)
	otherNS := gatewayv1.Namespace(other)
	cross := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "cross", Namespace: ns}, Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "edge"}}},
		Hostnames:       []gatewayv1.Hostname{"cross.shop.example"},
		Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: "remote", Namespace: &otherNS, Port: &port}}}}}}}}
	_, err = gwc.HTTPRoutes(ns).Create(ctx, cross, metav1.CreateOptions{})
	must(t, err)

	resolved := func(name string) (metav1.Condition, bool) {
		r, err := gwc.HTTPRoutes(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(r.Status.Parents) == 0 {
			return metav1.Condition{}, false
		}
		for _, c := range r.Status.Parents[0].Conditions {
			if c.Type == "ResolvedRefs" {
				return c, true
			}
		}
		return metav1.Condition{}, false
	}
	expect := func(what, route, status, reason, msg string) {
		t.Helper()
		eventually(t, what, func() (bool, string) {
			c, ok := resolved(route)
			return ok && string(c.Status) == status && c.Reason == reason && c.Message == msg, fmt.Sprintf("%+v", c)
		})
	}
	expect("cross-namespace route granted", "cross", "True", "ResolvedRefs", "All references resolved")

	must(t, env.GatewayAPI.GatewayV1beta1().ReferenceGrants(other).Delete(ctx, grant.Name, metav1.DeleteOptions{}))
	expect("grant removed while in use", "cross", "False", "RefNotPermitted",
		fmt.Sprintf("backendRef remote/%s not accessible to a HTTPRoute in namespace %q (missing a ReferenceGrant?)", other, ns))

	must(t, env.Kube.CoreV1().Services(ns).Delete(ctx, "api", metav1.DeleteOptions{}))
	expect("backend deleted", "web", "False", "BackendNotFound", fmt.Sprintf("backend(api.%s.svc.cluster.local) not found", ns))

	g, err := gwc.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
	must(t, err)
	// the CRD refuses two listeners of one port, protocol and hostname; a
	// TCP listener on the HTTP listener's port conflicts
	g.Spec.Listeners = append(g.Spec.Listeners, gatewayv1.Listener{Name: "duplicate", Port: 80, Protocol: gatewayv1.TCPProtocolType})
	_, err = gwc.Gateways(ns).Update(ctx, g, metav1.UpdateOptions{})
	must(t, err)
	eventually(t, "listener conflict reported", func() (bool, string) {
		g, err := gwc.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil || len(g.Status.Listeners) != 2 {
			return false, fmt.Sprint(err, g.Status.Listeners)
		}
		for _, c := range g.Status.Listeners[1].Conditions {
			if c.Type == "Conflicted" {
				return c.Status == "True" && c.Reason == "ProtocolConflict", fmt.Sprintf("%+v", c)
			}
		}
		return false, "no Conflicted condition"
	})

	eventually(t, "problems on warningz", func() (bool, string) {
		var found []string
		for _, p := range d.warnings() {
			if p.Source == "gateway-api" {
				found = append(found, p.Object+" "+p.Message)
			}
		}
		s := strings.Join(found, "\n")
		return contains(s, "HTTPRoute "+ns+"/cross", "RefNotPermitted", "HTTPRoute "+ns+"/web", "BackendNotFound",
			"Gateway "+ns+"/edge", "ProtocolConflict"), s
	})
	// nothing else stopped: the listener that won and both routes are served
	objs := d.configzObjects(ns)
	for _, k := range []string{"Gateway/edge~istio-autogenerated-k8s-gateway~http",
		"VirtualService/" + ns + "~edge~istio-autogenerated-k8s-gateway~http~www.shop.example",
		"VirtualService/" + ns + "~edge~istio-autogenerated-k8s-gateway~http~cross.shop.example"} {
		if _, ok := objs[k]; !ok {
			t.Errorf("%s no longer served", k)
		}
	}
	if _, ok := objs["Gateway/edge~istio-autogenerated-k8s-gateway~duplicate"]; ok {
		t.Error("the conflicted listener is served")
	}
}
