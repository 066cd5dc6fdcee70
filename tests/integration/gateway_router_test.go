package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/refdata"
)

// referenceGVR maps the kinds of the gateways reference's input to their
// resources.
var referenceGVR = map[string]schema.GroupVersionResource{
	"Namespace":      {Version: "v1", Resource: "namespaces"},
	"Service":        {Version: "v1", Resource: "services"},
	"EndpointSlice":  {Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
	"Gateway":        {Group: "networking.istio.io", Version: "v1", Resource: "gateways"},
	"VirtualService": {Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"},
	"HTTPRoute":      {Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"},
}

// applyAsIs creates every document of a reference input file in its own
// namespace (cluster IPs left to the API server's range).
func applyAsIs(t *testing.T, env *kube.Env, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	decodeDocs(t, data, func(kind string, js []byte) {
		var u unstructured.Unstructured
		must(t, u.UnmarshalJSON(js))
		gvr, ok := referenceGVR[kind]
		if kind == "Gateway" && u.GetAPIVersion() == "gateway.networking.k8s.io/v1" {
			gvr, ok = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}, true
		}
		if !ok {
			t.Fatalf("%s: kind %s not mapped", path, kind)
		}
		if kind == "Service" {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
		}
		var err error
		if kind == "Namespace" {
			_, err = env.Dynamic.Resource(gvr).Create(context.Background(), &u, metav1.CreateOptions{})
		} else {
			_, err = env.Dynamic.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), &u, metav1.CreateOptions{})
		}
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("%s %s/%s: %v", kind, u.GetNamespace(), u.GetName(), err)
		}
	})
}

// refResources reads one reference xDS file: name → generic JSON.
func refResources(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	var list []map[string]any
	must(t, json.Unmarshal(b, &list))
	out := map[string]any{}
	for _, r := range list {
		name, _ := r["name"].(string)
		if name == "" {
			name, _ = r["clusterName"].(string)
		}
		out[name] = any(r)
	}
	return out
}

// heldResources renders what the client holds of a type as generic JSON,
// by name, with protojson as the reference was written.
func heldResources(t *testing.T, c *adsc.Client, typ string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, n := range c.State(typ) {
		b, err := protojson.Marshal(c.Resource(typ, n))
		must(t, err)
		var v any
		must(t, json.Unmarshal(b, &v))
		out[n] = v
	}
	return out
}

// The ingress router of an Istio Gateway and the router of a Gateway API
// Gateway (whose Service istiod itself generates) get, through a real API
// server holding exactly the reference's objects, the configuration
// Istio's istiod sent them. The one input added is the Secret shop-cert
// (in the gateway workload's namespace, where Istio reads credentialName):
// without it we leave the HTTPS server out (Istio serves a listener whose
// certificate never arrives, and Envoy holds the whole listener back).
func TestRouterConfigThroughTheAPIServerMatchesIstio(t *testing.T) {
	dir := refdata.Dir(t, "gateways")
	env := kube.Start(t)
	env.CreateNamespace(t, "istio-system", nil)
	applyAsIs(t, env, filepath.Join(dir, "input", "gateways.yaml"))
	// the certificate lives with the gateway workload, in istio-system
	cert, key := certPEM(t, "shop.example.com")
	_, err := env.Kube.CoreV1().Secrets("istio-system").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-cert", Namespace: "istio-system"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": cert, "tls.key": key}}, metav1.CreateOptions{})
	must(t, err)
	applyReferenceInjector(t, env, dir, "istio-system")
	d := startIstiod(t, env, "istio-system")
	applyAsIs(t, env, filepath.Join(dir, "input", "gatewayapi.yaml"))
	eventually(t, "the generated Service edge-istio", func() (bool, string) {
		return generatedObject(t, env, "shop", "Service") != nil, ""
	})

	for _, r := range []struct {
		dir  string
		node string
		md   map[string]any
	}{
		{"router-ingressgateway", "router~10.244.9.1~istio-ingressgateway-abc.istio-system~istio-system.svc.cluster.local",
			map[string]any{"NAMESPACE": "istio-system", "CLUSTER_ID": "Kubernetes", "MESH_ID": "cluster.local",
				"LABELS": map[string]any{"istio": "ingressgateway"}, "INSTANCE_IPS": "10.244.9.1"}},
		{"router-edge", "router~10.244.9.2~edge-istio-abc.shop~shop.svc.cluster.local",
			map[string]any{"NAMESPACE": "shop", "CLUSTER_ID": "Kubernetes", "MESH_ID": "cluster.local", "INSTANCE_IPS": "10.244.9.2",
				"LABELS": map[string]any{"gateway.networking.k8s.io/gateway-name": "edge", "app": "edge-istio"}}},
	} {
		t.Run(r.dir, func(t *testing.T) {
			a := dialADS(t, d, adsc.Config{Delta: true, NodeID: r.node, Metadata: r.md})
			want := map[string]map[string]any{}
			for typ, file := range map[string]string{xds.ClusterType: "clusters.json", xds.EndpointType: "endpoints.json",
				xds.ListenerType: "listeners.json", xds.RouteType: "routes.json"} {
				want[typ] = refResources(t, filepath.Join(dir, "real", r.dir, file))
				var names []string
				if typ == xds.EndpointType || typ == xds.RouteType {
					for n := range want[typ] {
						names = append(names, n)
					}
					sort.Strings(names)
				}
				must(t, a.c.Watch(typ, names...))
			}
			// the informers may still be filling: wait until everything
			// equals, then show the differences of the last look
			var last string
			ok := false
			for i := 0; i < 60 && !ok; i++ {
				a.drain()
				ok, last = true, ""
				for _, typ := range []string{xds.ClusterType, xds.EndpointType, xds.ListenerType, xds.RouteType} {
					got := heldResources(t, a.c, typ)
					if typ == xds.EndpointType {
						// the one allowed difference: the harness's API
						// server publishes its own address as the
						// kubernetes Service's endpoint; the reference's
						// published none
						if k, _ := got[kubernetesCluster].(map[string]any); k != nil {
							delete(k, "endpoints")
						}
					}
					if d := diffString(t, got, want[typ]); d != "" {
						ok, last = false, last+xds.ShortType(typ)+":\n"+d+"\n"
					}
				}
				if !ok {
					sleepBriefly()
				}
			}
			if !ok {
				t.Errorf("%s differs from Istio's:\n%s", r.dir, last)
			}
		})
	}
}

const kubernetesCluster = "outbound|443||kubernetes.default.svc.cluster.local"

func sleepBriefly() { time.Sleep(500 * time.Millisecond) }
