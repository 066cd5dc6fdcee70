package generators_test

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/tests/golden"
	"github.com/meshplane/istiod/tests/refmesh"
)

// referenceProxy is the sidecar whose configuration Istio's answer holds.
var referenceProxy = adsc.Config{
	Delta:  true,
	NodeID: "sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local",
	Metadata: map[string]any{
		"NAMESPACE": "bookinfo", "CLUSTER_ID": "Kubernetes", "MESH_ID": "cluster.local",
		"LABELS":          map[string]any{"app": "productpage", "version": "v1"},
		"SERVICE_ACCOUNT": "bookinfo-productpage", "WORKLOAD_NAME": "productpage-v1",
		"INSTANCE_IPS": "10.244.0.10", "INTERCEPTION_MODE": "REDIRECT",
	},
}

// referenceAllowed lists the fields where our answer may differ from
// Istio's, by xDS type, each with the reason. There are none.
var referenceAllowed = map[string]map[string]string{}

// TestSidecarConfigMatchesIstio runs the reference mesh through the real
// registries and generators, connects the reference sidecar over delta ADS
// and compares every resource of every type with what Istio's istiod sent.
func TestSidecarConfigMatchesIstio(t *testing.T) {
	compareWithIstio(t, refmesh.Bookinfo, referenceProxy, "real/sidecar-productpage", referenceAllowed)
}

// compareWithIstio runs a reference mesh through the real registries and
// the generators, connects the proxy over delta ADS and compares every
// resource of every type with what Istio's istiod sent it (in realDir).
func compareWithIstio(t *testing.T, m refmesh.Mesh, proxy adsc.Config, realDir string, allowed map[string]map[string]string) {
	t.Helper()
	src, env := m.Env(t)
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Endpoints: src.Index, Discovery: src.Agg}).Register(s.DS)
	s.DS.InitPushContext(env)
	c := xdstest.Dial(t, s, proxy)

	for _, typ := range []string{xds.ClusterType, xds.EndpointType, xds.ListenerType, xds.RouteType} {
		short := xds.ShortType(typ)
		want := referenceResources(t, m, realDir+"/"+refFile[short])
		var names []string
		if typ == xds.EndpointType || typ == xds.RouteType {
			for n := range want {
				names = append(names, n)
			}
			sort.Strings(names)
		}
		if err := c.Watch(typ, names...); err != nil {
			t.Fatal(err)
		}
		xdstest.Next(t, c)
		got := map[string]map[string]any{}
		for _, n := range c.State(typ) {
			got[n] = refmesh.Decode(t, render1(t, c, typ, n)).(map[string]any)
		}
		diffResources(t, short, got, want, allowed[short])
	}
}

var refFile = map[string]string{"cds": "clusters.json", "eds": "endpoints.json", "lds": "listeners.json", "rds": "routes.json"}

func render1(t *testing.T, c *adsc.Client, typ, name string) []byte {
	t.Helper()
	b, err := protojson.Marshal(c.Resource(typ, name))
	if err != nil {
		t.Fatalf("%s %s: %v", typ, name, err)
	}
	return b
}

func referenceResources(t *testing.T, m refmesh.Mesh, rel string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range refmesh.Decode(t, m.ReadFile(t, rel)).([]any) {
		m := r.(map[string]any)
		name, _ := m["name"].(string)
		if name == "" {
			name, _ = m["clusterName"].(string)
		}
		out[name] = m
	}
	return out
}

// diffResources reports resources one side lacks and, per resource, every
// top-level field that differs unless allowed (by field, or by
// "<resource>:<field>" for one resource only, or by "*<path suffix>" for
// differences at paths ending so).
func diffResources(t *testing.T, typ string, got, want map[string]map[string]any, allowed map[string]string) {
	t.Helper()
	for n := range want {
		if _, ok := got[n]; !ok {
			t.Errorf("%s: Istio sends %q, we do not", typ, n)
		}
	}
	for n, g := range got {
		w, ok := want[n]
		if !ok {
			t.Errorf("%s: we send %q, Istio does not", typ, n)
			continue
		}
		for k := range allowed {
			if res, addr, ok := strings.Cut(k, ":unsent-endpoint "); ok && res == n {
				g = withoutUnhealthyEndpoint(t, n, g, addr)
			}
		}
		for _, k := range golden.UnionKeys(g, w) {
			if _, ok := allowed[k]; ok {
				continue
			}
			if _, ok := allowed[n+":"+k]; ok {
				continue
			}
			for _, d := range golden.Diff(k, g[k], w[k]) {
				if allowedPath(allowed, d) {
					continue
				}
				t.Errorf("%s %s: %s", typ, n, d)
			}
		}
	}
}

// withoutUnhealthyEndpoint is a load assignment without the endpoint of
// addr, which it must hold as UNHEALTHY, and with its locality's weight
// less that endpoint's: the one difference an "<name>:unsent-endpoint
// <addr>" allowance admits (an endpoint Istio leaves out).
func withoutUnhealthyEndpoint(t *testing.T, name string, cla map[string]any, addr string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range cla {
		out[k] = v
	}
	found := false
	var locs []any
	for _, l := range cla["endpoints"].([]any) {
		loc := map[string]any{}
		for k, v := range l.(map[string]any) {
			loc[k] = v
		}
		var kept []any
		for _, e := range loc["lbEndpoints"].([]any) {
			em := e.(map[string]any)
			sa, _ := em["endpoint"].(map[string]any)["address"].(map[string]any)["socketAddress"].(map[string]any)
			if sa["address"] != addr {
				kept = append(kept, e)
				continue
			}
			found = true
			if em["healthStatus"] != "UNHEALTHY" {
				t.Errorf("eds %s: endpoint %s is %v, the allowance is for an UNHEALTHY one", name, addr, em["healthStatus"])
			}
			if w, ok := loc["loadBalancingWeight"].(json.Number); ok {
				lw, _ := w.Int64()
				ew, _ := em["loadBalancingWeight"].(json.Number).Int64()
				loc["loadBalancingWeight"] = json.Number(strconv.FormatInt(lw-ew, 10))
			}
		}
		loc["lbEndpoints"] = kept
		locs = append(locs, loc)
	}
	if !found {
		t.Errorf("eds %s: no endpoint %s: remove its unsent-endpoint allowance", name, addr)
	}
	out["endpoints"] = locs
	return out
}

// allowedPath tells whether a difference ("<path> differs...") is at a path
// an allowed "*<suffix>" entry covers.
func allowedPath(allowed map[string]string, diff string) bool {
	path, _, _ := strings.Cut(diff, " ")
	for k := range allowed {
		if suffix, ok := strings.CutPrefix(k, "*"); ok && strings.HasSuffix(path, suffix) {
			return true
		}
	}
	return false
}
