package authz_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/meshplane/istiod/tests/golden"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"
	authzpb "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/tests/refdata"
)

// refMesh is the reference's input: its policies, pods, services and mesh
// config.
type refMesh struct {
	policies []config.Config
	pods     map[string]map[string]string // namespace/name → labels
	services map[string]bool              // <name>.<namespace>.svc.cluster.local
	mesh     *meshconfig.MeshConfig
}

func loadReference(t *testing.T) *refMesh {
	t.Helper()
	dir := refdata.Dir(t, "policy")
	m := &refMesh{pods: map[string]map[string]string{}, services: map[string]bool{}}
	for _, f := range []string{"bookinfo.yaml", "policy.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, "input", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range crd.Parse(b, crd.Options{Domain: "cluster.local"}) {
			switch {
			case d.Err != nil:
				t.Fatalf("%s: %s: %v", f, d.Where(), d.Err)
			case d.Unknown != nil && d.Unknown.Kind == "Pod":
				m.pods[d.Unknown.Namespace+"/"+d.Unknown.Name] = d.Unknown.Labels
			case d.Unknown != nil && d.Unknown.Kind == "Service":
				m.services[d.Unknown.Name+"."+d.Unknown.Namespace+".svc.cluster.local"] = true
			case d.Config != nil && d.Config.GroupVersionKind.Kind == "AuthorizationPolicy":
				m.policies = append(m.policies, *d.Config)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "input", "mesh.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mc, _, err := mesh.ApplyMeshConfig(string(b), mesh.DefaultMeshConfig())
	if err != nil {
		t.Fatal(err)
	}
	m.mesh = mc
	return m
}

// selectPolicies picks the policies of a pod as the push context does:
// those of its namespace, then those of the root namespace, whose selector
// (none: all) matches its labels, in input order.
func (m *refMesh) selectPolicies(namespace string, labels map[string]string) []config.Config {
	var out []config.Config
	for _, ns := range []string{namespace, m.mesh.GetRootNamespace()} {
		for _, p := range m.policies {
			if p.Namespace != ns {
				continue
			}
			sel := p.Spec.(*authzpb.AuthorizationPolicy).GetSelector().GetMatchLabels()
			ok := true
			for k, v := range sel {
				if labels[k] != v {
					ok = false
				}
			}
			if ok {
				out = append(out, p)
			}
		}
		if ns == m.mesh.GetRootNamespace() {
			break
		}
	}
	return out
}

// lookup resolves <host> or <namespace>/<host> to the outbound cluster.
func (m *refMesh) lookup(service string, port uint32) (string, string, error) {
	host := service
	if ns, h, ok := strings.Cut(service, "/"); ok {
		host = h
		if !strings.HasSuffix(h, "."+ns+".svc.cluster.local") {
			return "", "", fmt.Errorf("could not find service %s", service)
		}
	}
	if !m.services[host] {
		return "", "", fmt.Errorf("could not find service %s in Istio service registry", service)
	}
	return host, fmt.Sprintf("outbound|%d||%s", port, host), nil
}

// referenceChains returns, per filter chain of the virtualInbound listener
// of the pod's dump, its authorization filters (rbac and ext_authz), as
// JSON: the HCM's HTTP filters for HTTP chains, the network filters for
// TCP chains. Keys are "<chain name> <transport protocol> <ALPN>".
func referenceChains(t *testing.T, pod string) (http, tcp map[string][]any) {
	t.Helper()
	b, err := os.ReadFile(refdata.Dir(t, "policy/real/sidecar-"+pod+"/listeners.json"))
	if err != nil {
		t.Fatal(err)
	}
	var listeners []struct {
		Name        string `json:"name"`
		FilterChain []struct {
			Name  string `json:"name"`
			Match struct {
				TransportProtocol string   `json:"transportProtocol"`
				ALPN              []string `json:"applicationProtocols"`
			} `json:"filterChainMatch"`
			Filters []struct {
				Name        string         `json:"name"`
				TypedConfig map[string]any `json:"typedConfig"`
			} `json:"filters"`
		} `json:"filterChains"`
	}
	if err := json.Unmarshal(b, &listeners); err != nil {
		t.Fatal(err)
	}
	http, tcp = map[string][]any{}, map[string][]any{}
	authzFilter := func(name string) bool {
		return strings.HasSuffix(name, ".rbac") || strings.HasSuffix(name, ".ext_authz")
	}
	for _, l := range listeners {
		if l.Name != "virtualInbound" {
			continue
		}
		for _, c := range l.FilterChain {
			key := c.Name + " " + c.Match.TransportProtocol + " " + strings.Join(c.Match.ALPN, ",")
			isHTTP := false
			var network []any
			for _, f := range c.Filters {
				if f.Name == "envoy.filters.network.http_connection_manager" {
					isHTTP = true
					fs, _ := f.TypedConfig["httpFilters"].([]any)
					var hf []any
					for _, x := range fs {
						if authzFilter(x.(map[string]any)["name"].(string)) {
							hf = append(hf, x)
						}
					}
					http[key] = hf
				}
				if authzFilter(f.Name) {
					raw, _ := json.Marshal(f)
					var v any
					_ = json.Unmarshal(raw, &v)
					network = append(network, v)
				}
			}
			if !isHTTP && len(c.Filters) > 0 {
				tcp[key] = network
			}
		}
	}
	return http, tcp
}

// asJSON renders messages as generic JSON (protojson, then encoding/json).
func asJSON[M proto.Message](t *testing.T, ms []M) []any {
	t.Helper()
	out := []any{}
	for _, m := range ms {
		b, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestReference builds the filters of productpage and ratings from the
// reference's policies and compares them, path by path, with what Istio
// 1.31 sent: the HTTP filters of every HTTP chain and the network filters
// of every TCP chain of virtualInbound. No difference is allowed.
func TestReference(t *testing.T) {
	m := loadReference(t)
	for _, pod := range []struct{ app, name string }{{"productpage", "productpage-v1-abc"}, {"ratings", "ratings-v1-abc"}} {
		t.Run(pod.app, func(t *testing.T) {
			labels, ok := m.pods["bookinfo/"+pod.name]
			if !ok {
				t.Fatalf("no pod %s", pod.name)
			}
			policies := m.selectPolicies("bookinfo", labels)
			b := authz.New(authz.Options{Mesh: m.mesh, LookupCluster: m.lookup})
			h, tc := b.BuildHTTP(policies), b.BuildTCP(policies)
			gotHTTP := asJSON(t, h.With(nil))
			gotTCP := asJSON(t, tc.All())
			// HTTP chains translate every rule as written; on TCP chains only
			// HTTP-only fields are dropped.
			for _, w := range h.Warnings {
				t.Errorf("HTTP warning: %v", w)
			}
			for _, w := range tc.Warnings {
				if w.Kind != authz.HTTPOnly {
					t.Errorf("TCP warning: %v", w)
				}
				t.Logf("TCP warning: %v", w)
			}

			refHTTP, refTCP := referenceChains(t, pod.app)
			if len(refHTTP) == 0 || len(refTCP) == 0 {
				t.Fatalf("reference has %d HTTP and %d TCP chains", len(refHTTP), len(refTCP))
			}
			for _, c := range []struct {
				kind string
				ref  map[string][]any
				got  []any
			}{{"HTTP", refHTTP, gotHTTP}, {"TCP", refTCP, gotTCP}} {
				keys := make([]string, 0, len(c.ref))
				for k := range c.ref {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					want := c.ref[k]
					if strings.HasPrefix(k, "virtualInbound-blackhole ") {
						// Port 15006 itself: no policy filters at all.
						if len(want) != 0 {
							t.Errorf("blackhole chain has policy filters: %v", compact(want))
						}
						continue
					}
					if want == nil {
						want = []any{}
					}
					if d := golden.Diff("filters", c.got, want); len(d) > 0 {
						t.Errorf("%s chain %q: %d differences:\n%s", c.kind, k, len(d), strings.Join(d, "\n"))
					}
					t.Logf("%s chain %q: %d filters compared", c.kind, k, len(want))
				}
			}
		})
	}
}
