package cluster_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/tests/refdata"
)

func service(name, ns string, port int, p protocol.Instance, res model.Resolution) *model.Service {
	return &model.Service{
		Hostname:   name + "." + ns + ".svc.cluster.local",
		Ports:      model.PortList{{Name: strings.ToLower(string(p)), Port: port, Protocol: p}},
		Resolution: res,
		Attributes: model.ServiceAttributes{Name: name, Namespace: ns, ServiceRegistry: model.Kubernetes},
	}
}

func referenceDR(t *testing.T, name string) *config.Config {
	t.Helper()
	b, err := os.ReadFile(refdata.Dir(t, "bookinfo/input/bookinfo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range crd.Parse(b, crd.Options{}) {
		if d.Config != nil && d.Config.GroupVersionKind.Kind == "DestinationRule" && d.Config.Name == name {
			return d.Config
		}
	}
	t.Fatalf("no DestinationRule %s", name)
	return nil
}

func withSA(s *model.Service, sa string) *model.Service {
	s.ServiceAccounts = []string{sa}
	return s
}

func referenceClusters(t *testing.T) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile(refdata.Dir(t, "bookinfo/real/sidecar-productpage/clusters.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, c := range list {
		out[c["name"].(string)] = c
	}
	return out
}

func asMap(t *testing.T, c *clusterv3.Cluster) map[string]any {
	t.Helper()
	b, err := protojson.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// diffKeys lists the top-level fields that differ.
func diffKeys(want, got map[string]any) []string {
	var out []string
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	for k := range keys {
		if !reflect.DeepEqual(want[k], got[k]) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// allowedDiffs are fields where a cluster may differ from Istio's: none.
var allowedDiffs = map[string]bool{}

func TestOutboundClustersMatchIstio(t *testing.T) {
	ref := referenceClusters(t)
	m := mesh.DefaultMeshConfig()
	cases := []struct {
		svc  *model.Service
		dr   string
		want []string // the clusters built, in order: one per subset, then the service's
	}{
		{service("reviews", "bookinfo", 9080, protocol.HTTP, model.ClientSideLB), "reviews", []string{
			"outbound|9080|v1|reviews.bookinfo.svc.cluster.local", "outbound|9080|v2|reviews.bookinfo.svc.cluster.local",
			"outbound|9080|v3|reviews.bookinfo.svc.cluster.local", "outbound|9080||reviews.bookinfo.svc.cluster.local"}},
		{service("details", "bookinfo", 9080, protocol.HTTP, model.ClientSideLB), "details", []string{
			"outbound|9080||details.bookinfo.svc.cluster.local"}},
		{withSA(service("productpage", "bookinfo", 9080, protocol.HTTP, model.ClientSideLB), "spiffe://cluster.local/ns/bookinfo/sa/bookinfo-productpage"), "",
			[]string{"outbound|9080||productpage.bookinfo.svc.cluster.local"}},
	}
	for _, c := range cases {
		var dr *config.Config
		if c.dr != "" {
			dr = referenceDR(t, c.dr)
		}
		built := cluster.BuildOutbound(c.svc, cluster.Options{Mesh: m, DestinationRule: dr})
		var names []string
		for _, got := range built {
			names = append(names, got.Name)
		}
		if !slices.Equal(names, c.want) {
			t.Errorf("%s: built clusters %v, want %v", c.svc.Hostname, names, c.want)
		}
		// and Istio sent no other cluster of the service
		for name := range ref {
			if strings.HasSuffix(name, "|"+string(c.svc.Hostname)) && strings.HasPrefix(name, "outbound|") && !slices.Contains(names, name) {
				t.Errorf("%s: Istio has cluster %s, not built", c.svc.Hostname, name)
			}
		}
		for _, got := range built {
			if err := got.ValidateAll(); err != nil {
				t.Errorf("%s: invalid: %v", got.Name, err)
			}
			want, ok := ref[got.Name]
			if !ok {
				t.Errorf("%s: Istio has no such cluster", got.Name)
				continue
			}
			for _, k := range diffKeys(want, asMap(t, got)) {
				if !allowedDiffs[k] {
					w, _ := json.Marshal(want[k])
					g, _ := json.Marshal(asMap(t, got)[k])
					t.Errorf("%s: field %s differs\nwant %s\n got %s", got.Name, k, w, g)
				}
			}
		}
	}
}

func TestSpecialClustersMatchIstio(t *testing.T) {
	ref := referenceClusters(t)
	m := mesh.DefaultMeshConfig()
	pp := service("productpage", "bookinfo", 9080, protocol.HTTP, model.ClientSideLB)
	for _, got := range []*clusterv3.Cluster{cluster.BuildBlackHole(m), cluster.BuildPassthrough(m), cluster.BuildInboundPassthrough(m),
		cluster.BuildInbound(9080, protocol.HTTP, []*model.Service{pp}, m)} {
		if err := got.ValidateAll(); err != nil {
			t.Errorf("%s: invalid: %v", got.Name, err)
		}
		for _, k := range diffKeys(ref[got.Name], asMap(t, got)) {
			if !allowedDiffs[k] {
				w, _ := json.Marshal(ref[got.Name][k])
				g, _ := json.Marshal(asMap(t, got)[k])
				t.Errorf("%s: field %s differs\nwant %s\n got %s", got.Name, k, w, g)
			}
		}
	}
}
