package envoyfilter_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/tests/golden"
	"github.com/meshplane/istiod/tests/refdata"
)

// The EnvoyFilter facts of ../shared/reference/extensions: what Istio's
// istiod sent to two sidecars of the bookinfo mesh with eight EnvoyFilters.
// The inputs are the resources Istio sent with each patch undone (what it
// generated before patching); patching them must give back exactly what
// it sent.

func referenceFilters(t *testing.T) []config.Config {
	dir := refdata.Dir(t, "extensions")
	in := string(readFile(t, dir+"/input/extensions.yaml")) + "\n---\n" + string(readFile(t, dir+"/input/ef-insert-a.yaml"))
	cfgs := parseFilters(t, in)
	created := map[string]time.Time{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, dir+"/real/envoyfilters-created.txt")))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] == "NAMESPACE" {
			continue
		}
		ts, err := time.Parse(time.RFC3339, f[3])
		if err != nil {
			t.Fatal(err)
		}
		created[f[0]+"/"+f[1]] = ts
	}
	for i := range cfgs {
		ts, ok := created[cfgs[i].Namespace+"/"+cfgs[i].Name]
		if !ok {
			t.Fatalf("no creation time for %s/%s", cfgs[i].Namespace, cfgs[i].Name)
		}
		cfgs[i].CreationTimestamp = ts
	}
	if len(cfgs) != 8 {
		t.Fatalf("want the reference's 8 EnvoyFilters, got %d", len(cfgs))
	}
	return cfgs
}

var referenceProxies = []struct {
	dir    string
	labels map[string]string
}{
	{"sidecar-productpage", map[string]string{"app": "productpage", "version": "v1"}},
	{"sidecar-reviews", map[string]string{"app": "reviews", "version": "v1"}},
}

func TestReferenceExtensions(t *testing.T) {
	filters := compileAll(t, referenceFilters(t))
	for _, f := range filters {
		if len(f.Problems()) > 0 {
			t.Errorf("%s/%s: %v", f.Namespace, f.Name, problemStrings(f.Problems()))
		}
	}
	dir := refdata.Dir(t, "extensions")
	for _, rp := range referenceProxies {
		t.Run(rp.dir, func(t *testing.T) {
			ps := envoyfilter.Select(sidecar("bookinfo", rp.labels), "istio-system", filters)
			reviews := rp.labels["app"] == "reviews"
			real := dir + "/real/" + rp.dir + "/"
			checkReference(t, "listeners", readFile(t, real+"listeners.json"), unpatchListeners(reviews), ps,
				func() *listenerv3.Listener { return &listenerv3.Listener{} }, envoyfilter.PatchListeners)
			checkReference(t, "clusters", readFile(t, real+"clusters.json"), unpatchClusters, ps,
				func() *clusterv3.Cluster { return &clusterv3.Cluster{} }, envoyfilter.PatchClusters)
			checkReference(t, "routes", readFile(t, real+"routes.json"), unpatchRoutes, ps,
				func() *routev3.RouteConfiguration { return &routev3.RouteConfiguration{} }, envoyfilter.PatchRoutes)
		})
	}
}

// checkReference undoes the patches on Istio's answer, patches the result,
// and wants Istio's answer back, the input untouched.
func checkReference[T validatedProto](t *testing.T, what string, want []byte, unpatch func(t *testing.T, v []any),
	ps *envoyfilter.Patches, newT func() T,
	patch func(*envoyfilter.Patches, envoyfilter.PatchContext, []T) ([]T, []envoyfilter.Problem),
) {
	t.Helper()
	var v []any
	if err := json.Unmarshal(want, &v); err != nil {
		t.Fatal(err)
	}
	unpatch(t, v)
	inJSON, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	in := decodeList(t, inJSON, newT)
	for _, m := range in {
		if err := m.ValidateAll(); err != nil {
			t.Fatalf("%s: input does not validate: %v", what, err)
		}
	}
	before := encodeList(t, in)
	if bytes.Equal(before, encodeList(t, decodeList(t, want, newT))) {
		t.Fatalf("%s: undoing the patches changed nothing", what)
	}
	got, problems := patch(ps, envoyfilter.PatchContext{}, in)
	if len(problems) > 0 {
		t.Errorf("%s: problems:\n%s", what, joinLines(problemStrings(problems)))
	}
	if d := golden.Diff(what, decodeJSON(t, encodeList(t, got)), decodeJSON(t, want)); len(d) > 0 {
		t.Errorf("%s differ from Istio's:\n%s", what, strings.Join(d, "\n"))
	}
	if after := encodeList(t, in); !bytes.Equal(before, after) {
		t.Errorf("%s: patching modified its input", what)
	}
}

type validatedProto interface {
	proto.Message
	ValidateAll() error
}

// unpatchListeners undoes the HTTP filter patches: outbound connection
// managers lose insert-a, insert-z and header_to_metadata and get back
// their cors filter; inbound ones lose inbound-first, and reviews' get
// back Istio's own grpc_stats config.
func unpatchListeners(reviews bool) func(t *testing.T, v []any) {
	return func(t *testing.T, v []any) {
		for _, l := range v {
			lm := l.(map[string]any)
			inbound := lm["trafficDirection"] == "INBOUND"
			for _, hcm := range connectionManagers(lm) {
				var out []any
				for _, f := range hcm["httpFilters"].([]any) {
					fm := f.(map[string]any)
					switch name := fm["name"]; {
					case !inbound && (name == "ref.insert-a" || name == "ref.insert-z" || name == "envoy.filters.http.header_to_metadata"):
						continue
					case inbound && name == "ref.inbound-first":
						continue
					case inbound && reviews && name == "envoy.filters.http.grpc_stats":
						fm["typedConfig"].(map[string]any)["statsForAllMethods"] = false
					}
					out = append(out, fm)
					if !inbound && fm["name"] == "envoy.filters.http.fault" {
						out = append(out, map[string]any{"name": "envoy.filters.http.cors",
							"typedConfig": map[string]any{"@type": "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors"}})
					}
				}
				hcm["httpFilters"] = out
			}
		}
	}
}

func connectionManagers(l map[string]any) []map[string]any {
	var chains []any
	if fcs, ok := l["filterChains"].([]any); ok {
		chains = append(chains, fcs...)
	}
	if d, ok := l["defaultFilterChain"]; ok {
		chains = append(chains, d)
	}
	var out []map[string]any
	for _, fc := range chains {
		fs, _ := fc.(map[string]any)["filters"].([]any)
		for _, f := range fs {
			fm := f.(map[string]any)
			if fm["name"] == "envoy.filters.network.http_connection_manager" {
				out = append(out, fm["typedConfig"].(map[string]any))
			}
		}
	}
	return out
}

// unpatchClusters gives the reviews clusters Istio's connect timeout back.
func unpatchClusters(t *testing.T, v []any) {
	n := 0
	for _, c := range v {
		cm := c.(map[string]any)
		if name := cm["name"].(string); strings.HasPrefix(name, "outbound|9080|") && strings.HasSuffix(name, "|reviews.bookinfo.svc.cluster.local") {
			cm["connectTimeout"] = "10s"
			delete(cm, "perConnectionBufferLimitBytes")
			n++
		}
	}
	if n != 4 {
		t.Fatalf("want 4 reviews clusters, got %d", n)
	}
}

// unpatchRoutes takes the added response header off the reviews virtual
// host of route 9080.
func unpatchRoutes(t *testing.T, v []any) {
	for _, r := range v {
		rm := r.(map[string]any)
		if rm["name"] != "9080" {
			continue
		}
		for _, vh := range rm["virtualHosts"].([]any) {
			if vm := vh.(map[string]any); vm["name"] == "reviews.bookinfo.svc.cluster.local:9080" {
				delete(vm, "responseHeadersToAdd")
				return
			}
		}
	}
	t.Fatal("no reviews virtual host in route 9080")
}

// The two insert-first filters of bookinfo conflict: which one ends up in
// front depends on their creation times only.
func TestReferenceConflicts(t *testing.T) {
	filters := compileAll(t, referenceFilters(t))
	ps := envoyfilter.Select(sidecar("bookinfo", referenceProxies[1].labels), "istio-system", filters)
	got := problemStrings(envoyfilter.Conflicts(ps))
	if len(got) != 1 || !strings.Contains(got[0], "EnvoyFilter bookinfo/insert-a spec.configPatches[0]") ||
		!strings.Contains(got[0], "EnvoyFilter bookinfo/insert-z") || !strings.Contains(got[0], "both insert first") ||
		!strings.Contains(got[0], "creation time") {
		t.Errorf("want one conflict, insert-a after insert-z, decided by creation time; got:\n%s", joinLines(got))
	}
}

// Analyze reports what istioctl analyze reported for the reference.
func TestReferenceAnalyze(t *testing.T) {
	dir := refdata.Dir(t, "extensions")
	var want []struct{ Code, Message, Origin string }
	if err := json.Unmarshal(readFile(t, dir+"/real/istioctl-analyze.json"), &want); err != nil {
		t.Fatal(err)
	}
	var wantLines, gotLines []string
	for _, w := range want {
		if strings.HasPrefix(w.Origin, "EnvoyFilter ") {
			wantLines = append(wantLines, w.Code+" "+w.Origin+" "+w.Message)
		}
	}
	for _, p := range envoyfilter.Analyze(referenceFilters(t)) {
		gotLines = append(gotLines, p.Code+" "+p.Object()+" "+p.Message)
	}
	slices.Sort(wantLines)
	slices.Sort(gotLines)
	if !slices.Equal(gotLines, wantLines) {
		t.Errorf("got:\n%s\nwant:\n%s", joinLines(gotLines), joinLines(wantLines))
	}
}
