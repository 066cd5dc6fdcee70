package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

const domain = "cluster.local"

var separator = regexp.MustCompile(`(?m)^---\s*$`)

// loadSnapshot reads a multi-document YAML of Gateway API objects,
// ServiceEntries and Kubernetes Namespaces, Services, EndpointSlices,
// Secrets and ConfigMaps.
func loadSnapshot(t testing.TB, data []byte) gateway.Snapshot {
	t.Helper()
	s := gateway.Snapshot{Secrets: map[string]map[string][]byte{}, ConfigMaps: map[string]map[string]string{}}
	var services []*corev1.Service
	var slices []*discoveryv1.EndpointSlice
	for i, doc := range separator.Split(string(data), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		var tm struct{ APIVersion, Kind string }
		if err := json.Unmarshal(js, &tm); err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		switch tm.Kind {
		case "Namespace":
			ns := decode[corev1.Namespace](t, js)
			s.Namespaces = append(s.Namespaces, gateway.NamespaceInfo{Name: ns.Name, Labels: ns.Labels})
		case "Service":
			services = append(services, decode[corev1.Service](t, js))
		case "EndpointSlice":
			slices = append(slices, decode[discoveryv1.EndpointSlice](t, js))
		case "Secret":
			sec := decode[corev1.Secret](t, js)
			d := map[string][]byte{}
			for k, v := range sec.Data {
				d[k] = v
			}
			for k, v := range sec.StringData {
				d[k] = []byte(v)
			}
			s.Secrets[sec.Namespace+"/"+sec.Name] = d
		case "ConfigMap":
			cm := decode[corev1.ConfigMap](t, js)
			s.ConfigMaps[cm.Namespace+"/"+cm.Name] = cm.Data
		default:
			addConfigs(t, &s, js, i)
		}
	}
	for _, svc := range services {
		var mine []*discoveryv1.EndpointSlice
		for _, es := range slices {
			if es.Namespace == svc.Namespace && es.Labels[discoveryv1.LabelServiceName] == svc.Name {
				mine = append(mine, es)
			}
		}
		s.Services = append(s.Services, gateway.ServiceFromKube(svc, mine, domain))
	}
	return s
}

func decode[T any](t testing.TB, js []byte) *T {
	t.Helper()
	out := new(T)
	if err := json.Unmarshal(js, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// addConfigs parses one document of a stored kind into s.
func addConfigs(t testing.TB, s *gateway.Snapshot, js []byte, i int) {
	t.Helper()
	docs := crd.Parse(js, crd.Options{Domain: domain})
	for _, d := range docs {
		if d.Err != nil {
			t.Fatalf("doc %d: %v", i, d.Err)
		}
		if d.Config == nil {
			continue // a kind this package does not read
		}
		c := *d.Config
		switch c.GroupVersionKind {
		case gvk.GatewayClass:
			s.GatewayClasses = append(s.GatewayClasses, c)
		case gvk.KubernetesGateway:
			s.Gateways = append(s.Gateways, c)
		case gvk.HTTPRoute:
			s.HTTPRoutes = append(s.HTTPRoutes, c)
		case gvk.GRPCRoute:
			s.GRPCRoutes = append(s.GRPCRoutes, c)
		case gvk.TCPRoute:
			s.TCPRoutes = append(s.TCPRoutes, c)
		case gvk.TLSRoute:
			s.TLSRoutes = append(s.TLSRoutes, c)
		case gvk.ReferenceGrant:
			s.ReferenceGrants = append(s.ReferenceGrants, c)
		case gvk.ServiceEntry:
			s.ServiceEntries = append(s.ServiceEntries, c)
		default:
			// other kinds (Istio's own) are not inputs of the translation
		}
	}
}

// render writes the output as the golden files hold it: the synthetic
// objects in their Kubernetes shape, then each status.
func render(t testing.TB, out gateway.Output) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, c := range append(append([]config.Config{}, out.Gateways...), out.VirtualServices...) {
		k, err := crd.ConvertConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		writeDoc(t, &b, k)
	}
	for _, s := range out.Statuses {
		meta := map[string]any{"name": s.Name}
		if s.Namespace != "" {
			meta["namespace"] = s.Namespace
		}
		writeDoc(t, &b, map[string]any{"apiVersion": s.Kind.GroupVersion(), "kind": s.Kind.Kind, "metadata": meta, "status": s.Status})
	}
	return b.Bytes()
}

func writeDoc(t testing.TB, b *bytes.Buffer, v any) {
	t.Helper()
	y, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() > 0 {
		b.WriteString("---\n")
	}
	fmt.Fprintf(b, "%s", y)
}
