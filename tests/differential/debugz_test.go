package differential_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/meshplane/istiod/tests/differential"
	"github.com/meshplane/istiod/tests/golden"
)

// debugProxy is the proxy connected to both control planes while their
// debug endpoints are read.
var debugProxy = differential.Proxy{Pod: "productpage-v1-5f6d7-abcde", Namespace: "debugz"}

// debugObjects is the mesh of TestDebugEndpointsMatchIstio: Bookinfo with
// a DestinationRule, an AuthorizationPolicy and a Telemetry, so that the
// views of policies and of the sidecar scope have something in them.
var debugObjects = bookinfoObjects("debugz", "40") + `
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: debugz}
spec:
  host: reviews
  subsets:
  - {name: v1, labels: {version: v1}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ratings-viewers, namespace: debugz}
spec:
  selector: {matchLabels: {app: ratings}}
  action: ALLOW
  rules:
  - from: [{source: {principals: [cluster.local/ns/debugz/sa/bookinfo-reviews]}}]
    to: [{operation: {methods: [GET]}}]
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: mesh-logs, namespace: debugz}
spec:
  accessLogging: [{providers: [{name: envoy}]}]
`

// debugCheck is one debug endpoint read from both control planes: the
// status and the JSON shape of the answers are compared, and, with
// values, the part of them both must agree on (IDs, names, counts).
type debugCheck struct {
	// name names the check in reports and in Allowed.Type.
	name string
	// path is the request, query included.
	path string
	// values extracts what must be equal (nil: the shape only).
	values func(v any) any
	// text compares a non-JSON body whole.
	text bool
	// prune rewrites both answers before their shapes are compared.
	prune func(v any) any
	// settle reads both again until the values agree (or a few seconds
	// passed): they follow the proxy's acknowledgements.
	settle bool
}

// ourDebugEndpoints are the entries of our /debug/list that Istio's has
// not: our own views, each documented in docs/endpoints.md.
var ourDebugEndpoints = []string{"ca", "connectionz", "indexz", "policyz", "proxytelemetryz", "pushz", "warningz"}

// TestDebugEndpointsMatchIstio reads every endpoint of Istio's /debug/list
// (and those that take a proxyID, with the connected proxy's) from our
// istiod and Istio's pilot-discovery, serving the same mesh with one
// proxy connected to each, and compares the status, the JSON shape at
// every level and the values both must agree on. The differences allowed
// are named with their reason below; one that no longer occurs fails.
func TestDebugEndpointsMatchIstio(t *testing.T) {
	proxyID := debugProxy.Pod + "." + debugProxy.Namespace
	q := "?proxyID=" + proxyID
	checks := []debugCheck{
		{name: "adsz?push=true", path: "/debug/adsz?push=true", text: true},
		{name: "list", path: "/debug/list"},
		{name: "syncz", path: "/debug/syncz", values: synczValues, settle: true},
		{name: "syncz?namespace", path: "/debug/syncz?namespace=debugz", values: synczValues, settle: true},
		{name: "adsz", path: "/debug/adsz", values: adszValues, settle: true},
		{name: "adsz?proxyID", path: "/debug/adsz" + q, values: adszValues, settle: true},
		{name: "connections", path: "/debug/connections", values: connectionsValues},
		{name: "config_dump", prune: pruneResources, path: "/debug/config_dump" + q, values: dumpValues},
		{name: "config_dump&include_eds", prune: pruneResources, path: "/debug/config_dump" + q + "&include_eds=true", values: dumpValues},
		{name: "config_dump&types", prune: pruneResources, path: "/debug/config_dump" + q + "&types=cds,rds", values: dumpValues},
		{name: "config_dump without proxyID", path: "/debug/config_dump"},
		{name: "edsz", prune: pruneResources, path: "/debug/edsz" + q, values: dumpValues},
		{name: "edsz without proxyID", path: "/debug/edsz"},
		{name: "ecdsz", prune: pruneResources, path: "/debug/ecdsz" + q, values: dumpValues},
		{name: "ndsz", prune: pruneResources, path: "/debug/ndsz" + q, values: dumpValues},
		{name: "sidecarz", path: "/debug/sidecarz" + q, values: sidecarzValues},
		{name: "sidecarz of another proxy", path: "/debug/sidecarz?proxyID=nobody.debugz"},
		{name: "instancesz", path: "/debug/instancesz", values: instanceszValues},
		{name: "authorizationz", path: "/debug/authorizationz", values: identity},
		{name: "telemetryz", path: "/debug/telemetryz", values: identity},
		{name: "telemetryz?proxyID", path: "/debug/telemetryz" + q, values: identity},
		{name: "pushcontext", path: "/debug/pushcontext", values: identity},
		{name: "push_status", path: "/debug/push_status", values: identity},
		{name: "clusterz", path: "/debug/clusterz", values: identity},
		{name: "networkz", path: "/debug/networkz", values: identity},
		{name: "mcsz", path: "/debug/mcsz", values: identity},
		{name: "ambientz", path: "/debug/ambientz", values: identity},
		{name: "cachez", path: "/debug/cachez"},
		{name: "cachez?sizes=true", path: "/debug/cachez?sizes=true"},
		{name: "inject", path: "/debug/inject", values: keys},
		{name: "mesh", path: "/debug/mesh"},
		{name: "configz", path: "/debug/configz"},
		{name: "resourcesz", path: "/debug/resourcesz"},
		{name: "registryz", path: "/debug/registryz"},
		{name: "endpointShardz", path: "/debug/endpointShardz"},
		{name: "endpointz", path: "/debug/endpointz"},
		{name: "krtz", path: "/debug/krtz"},
		{name: "cachez?clear=true", path: "/debug/cachez?clear=true"},
	}
	allowed := debugAllowed()
	differential.Shared(t).Hold(t, "debugz", debugObjects, debugProxy, func(h *differential.Held) {
		list := checkList(t, h)
		covered := map[string]bool{"list": true}
		for _, c := range checks {
			covered[strings.TrimPrefix(strings.SplitN(c.path, "?", 2)[0], "/debug/")] = true
			if strings.Contains(c.path, "?") && !strings.Contains(c.path, "proxyID") && !strings.Contains(c.path, "namespace") {
				covered[strings.TrimPrefix(c.path, "/debug/")] = true
			}
		}
		for _, n := range list {
			if !covered[n] {
				t.Errorf("Istio's /debug/list has %s, which this test does not read: add a check", n)
			}
		}
		var all []differential.Difference
		for i, c := range checks {
			if i == 1 {
				// after the push: both proxies acknowledged everything again
				waitSynced(t, h)
			}
			diffs := compareDebug(t, h, c)
			for settle := time.Now().Add(10 * time.Second); c.settle && len(diffs) > 0 && time.Now().Before(settle); diffs = compareDebug(t, h, c) {
				time.Sleep(200 * time.Millisecond)
			}
			all = append(all, diffs...)
		}
		reportDebug(t, all, allowed)
	})
}

// checkList compares the lists: Istio's entries are all ours, and ours
// has only ourDebugEndpoints besides. It returns Istio's.
func checkList(t *testing.T, h *differential.Held) []string {
	t.Helper()
	var lists [2][]string
	for i, fl := range []differential.Flavor{differential.Ours, differential.Istio} {
		r, err := h.Get(fl, "/debug/list")
		if err != nil || r.Code != 200 {
			t.Fatalf("%s /debug/list: %v %d %s", fl, err, r.Code, r.Body)
		}
		l, _ := r.JSON.([]any)
		for _, n := range l {
			s, _ := n.(string)
			lists[i] = append(lists[i], s)
		}
	}
	for _, n := range lists[1] {
		if !slices.Contains(lists[0], n) {
			t.Errorf("Istio's /debug/list has %s, ours does not", n)
		}
	}
	for _, n := range lists[0] {
		if !slices.Contains(lists[1], n) && !slices.Contains(ourDebugEndpoints, n) {
			t.Errorf("our /debug/list has %s, Istio's does not, and it is not among ourDebugEndpoints", n)
		}
	}
	if !slices.IsSorted(lists[0]) {
		t.Errorf("our /debug/list is not sorted: %v", lists[0])
	}
	return lists[1]
}

// waitSynced waits until each control plane's syncz shows every type the
// proxy watches acknowledged.
func waitSynced(t *testing.T, h *differential.Held) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, fl := range []differential.Flavor{differential.Ours, differential.Istio} {
		for {
			r, err := h.Get(fl, "/debug/syncz")
			if err == nil && synced(r.JSON) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the proxy never acknowledged everything: %v %s", fl, err, r.Body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func synced(v any) bool {
	l, _ := v.([]any)
	if len(l) != 1 {
		return false
	}
	res, _ := field(l[0], "resources").(map[string]any)
	for _, st := range res {
		if field(st, "sent") == nil || field(st, "sent") != field(st, "acked") {
			return false
		}
	}
	return len(res) > 0
}

// compareDebug reads one check from both and lists the differences.
func compareDebug(t *testing.T, h *differential.Held, c debugCheck) []differential.Difference {
	t.Helper()
	var rs [2]differential.DebugResponse
	for i, fl := range []differential.Flavor{differential.Ours, differential.Istio} {
		r, err := h.Get(fl, c.path)
		if err != nil {
			t.Fatalf("%s %s: %v", fl, c.path, err)
		}
		rs[i] = r
	}
	dump(t, c, rs)
	ours, istio := rs[0], rs[1]
	var out []differential.Difference
	if ours.Code != istio.Code {
		out = append(out, differential.Difference{Type: c.name, Resource: "status", Ours: ours.Code, Istio: istio.Code})
		return out
	}
	switch {
	case ours.IsJSON != istio.IsJSON:
		out = append(out, differential.Difference{Type: c.name, Resource: "json", Ours: string(ours.Body), Istio: string(istio.Body)})
	case c.text && string(ours.Body) != string(istio.Body):
		out = append(out, differential.Difference{Type: c.name, Resource: "text", Ours: string(ours.Body), Istio: string(istio.Body)})
	case !ours.IsJSON:
	default:
		o, i := ours.JSON, istio.JSON
		if c.prune != nil {
			o, i = c.prune(o), c.prune(i)
		}
		for _, d := range differential.ShapeDifferences(c.name, o, i) {
			d.Resource = "shape"
			out = append(out, d)
		}
		if c.values != nil {
			for _, d := range golden.Differences("", c.values(ours.JSON), c.values(istio.JSON), true) {
				out = append(out, differential.Difference{Type: c.name, Resource: "value", Path: d.Path, Ours: d.Got, Istio: d.Want})
			}
		}
	}
	return out
}

// dump writes both answers under $DIFFERENTIAL_DUMP/debugz when set.
func dump(t *testing.T, c debugCheck, rs [2]differential.DebugResponse) {
	dir := os.Getenv(differential.DumpEnv)
	if dir == "" {
		return
	}
	for i, fl := range []differential.Flavor{differential.Ours, differential.Istio} {
		f := filepath.Join(dir, "debugz", string(fl), strings.NewReplacer("?", "_", "&", "_", "=", "_", " ", "_").Replace(c.name))
		_ = os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, fmt.Appendf(nil, "%d\n%s", rs[i].Code, rs[i].Body), 0o644); err != nil {
			t.Logf("dump: %v", err)
		}
	}
}

// reportDebug fails with every difference no allowed entry covers, and
// with every allowed entry that covers nothing.
func reportDebug(t *testing.T, all []differential.Difference, allowed []differential.Allowed) {
	t.Helper()
	used := map[string]bool{}
	var b strings.Builder
	n := 0
	for _, d := range all {
		if i := slices.IndexFunc(allowed, func(a differential.Allowed) bool { return a.Covers(d) }); i >= 0 {
			used[allowed[i].Name] = true
			t.Logf("allowed difference %q (%s):\n  %s", allowed[i].Name, allowed[i].Why, d)
			continue
		}
		n++
		b.WriteString("\n  " + d.String())
	}
	if n > 0 {
		t.Errorf("%d differences from Istio's debug endpoints (%s=<dir> writes both answers):%s", n, differential.DumpEnv, b.String())
	}
	for _, a := range allowed {
		if !used[a.Name] {
			t.Errorf("allowed difference %q covers nothing: remove it (%s)", a.Name, a.Why)
		}
	}
}

// --- what must be equal -------------------------------------------------

func field(v any, k string) any {
	m, _ := v.(map[string]any)
	return m[k]
}

func identity(v any) any { return v }

// keys are an object's keys, sorted.
func keys(v any) any {
	m, _ := v.(map[string]any)
	return slices.Sorted(maps.Keys(m))
}

// synczValues: per proxy its ID, cluster, type and version, whether each
// type it watches was acknowledged, and which types it watches.
func synczValues(v any) any {
	var out []any
	l, _ := v.([]any)
	for _, e := range l {
		row := map[string]any{}
		for _, k := range []string{"proxy", "cluster_id", "proxy_type", "istio_version"} {
			row[k] = field(e, k)
		}
		for _, k := range []string{"cluster", "listener", "route", "endpoint", "extensionconfig"} {
			sent, acked := field(e, k+"_sent"), field(e, k+"_acked")
			row[k] = fmt.Sprintf("sent %v, acked %v", sent != nil, sent != nil && sent == acked)
		}
		res, _ := field(e, "resources").(map[string]any)
		row["resources"] = slices.Sorted(maps.Keys(res))
		out = append(out, row)
	}
	return out
}

// connectionsValues: the number of clients and their connection IDs
// without the counter that ends them.
func connectionsValues(v any) any {
	var ids []string
	l, _ := field(v, "clients").([]any)
	for _, c := range l {
		id, _ := field(c, "connectionId").(string)
		if i := strings.LastIndex(id, "-"); i > 0 {
			id = id[:i]
		}
		ids = append(ids, id)
	}
	return map[string]any{"totalClients": field(v, "totalClients"), "connectionIds": ids}
}

// adszValues: the number of clients and, per client, its labels,
// metadata, locality and watches (names sorted).
func adszValues(v any) any {
	out := map[string]any{"totalClients": field(v, "totalClients")}
	l, _ := field(v, "clients").([]any)
	var clients []any
	for _, c := range l {
		watches := map[string]any{}
		w, _ := field(c, "watches").(map[string]any)
		for typ, names := range w {
			watches[typ] = sortedStrings(names)
		}
		clients = append(clients, map[string]any{"labels": field(c, "labels"), "metadata": field(c, "metadata"),
			"locality": field(c, "locality"), "watches": watches})
	}
	out["clients"] = clients
	return out
}

func sortedStrings(v any) []string {
	l, _ := v.([]any)
	out := []string{}
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// adminDump is the type prefix of the sections of Envoy's config dump.
const adminDump = "type.googleapis.com/envoy.admin.v3."

// dumpValues: the sections of a dump in order, each with the names of the
// resources it holds; for a dump of some types (the resources
// themselves), the resources' types and names, sorted (Istio's order is
// a map's).
func dumpValues(v any) any {
	var out []string
	l, _ := field(v, "configs").([]any)
	typed := false
	for _, s := range l {
		typ, _ := field(s, "@type").(string)
		if !strings.HasPrefix(typ, adminDump) {
			typed = true
			out = append(out, typ+" "+resourceName(s))
			continue
		}
		var names []string
		for _, k := range []string{"dynamicActiveClusters", "dynamicListeners", "dynamicRouteConfigs", "dynamicEndpointConfigs", "dynamicActiveSecrets", "ecdsFilters"} {
			entries, _ := field(s, k).([]any)
			for _, e := range entries {
				for _, inner := range []string{"cluster", "activeState", "routeConfig", "endpointConfig", "secret", "ecdsFilter"} {
					if r := field(e, inner); r != nil {
						if inner == "activeState" {
							r = field(r, "listener")
						}
						names = append(names, resourceName(r))
					}
				}
			}
		}
		sort.Strings(names)
		out = append(out, typ+" "+strings.Join(names, ","))
	}
	if typed {
		sort.Strings(out)
	}
	return out
}

func resourceName(r any) string {
	if n, ok := field(r, "name").(string); ok {
		return n
	}
	n, _ := field(r, "clusterName").(string)
	return n
}

// pruneResources replaces every xDS resource inside a dump by its type
// alone: what the resources hold is compared by the other differential
// cases, this test compares the dump around them.
func pruneResources(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if typ, ok := x["@type"].(string); ok && !strings.HasPrefix(typ, adminDump) {
			return map[string]any{"@type": typ}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = pruneResources(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = pruneResources(e)
		}
		return out
	}
	return v
}

// sidecarzValues: the scope's name, namespace and outbound policy, the
// hostnames it imports (in all, per egress listener, by hostname) and
// the hosts it has DestinationRules for.
func sidecarzValues(v any) any {
	hosts := func(l any) []string {
		var out []string
		ls, _ := l.([]any)
		for _, s := range ls {
			h, _ := field(s, "hostname").(string)
			out = append(out, h)
		}
		sort.Strings(out)
		return out
	}
	var perListener [][]string
	ls, _ := field(v, "egressListenerServices").([]any)
	for _, l := range ls {
		perListener = append(perListener, hosts(l))
	}
	return map[string]any{
		"name": field(v, "name"), "namespace": field(v, "namespace"), "outboundTrafficPolicy": field(v, "outboundTrafficPolicy"),
		"sidecar": field(v, "sidecar"), "services": hosts(field(v, "services")), "egressListenerServices": perListener,
		"servicesByHostname": keys(field(v, "servicesByHostname")), "destinationRules": keys(field(v, "destinationRules")),
	}
}

// instanceszValues: per proxy, the hostname and ports of each target.
func instanceszValues(v any) any {
	out := map[string]any{}
	m, _ := v.(map[string]any)
	for id, targets := range m {
		var ts []string
		l, _ := targets.([]any)
		for _, tg := range l {
			ts = append(ts, fmt.Sprintf("%v %v->%v", field(field(tg, "Service"), "hostname"), field(field(tg, "Port"), "port"), field(field(tg, "Port"), "TargetPort")))
		}
		sort.Strings(ts)
		out[id] = ts
	}
	return out
}

// debugAllowed are the differences from Istio's answers accepted, each
// with its reason.
func debugAllowed() []differential.Allowed {
	return []differential.Allowed{
		{Name: "service-dns-connect-strategy", Resource: "shape", Path: "**Attributes.DNSConnectStrategy",
			Why: "Istio 1.31's service attribute of the DNS connect strategy annotation, which this registry does not model (as TestRegistryMatchesIstio notes): wherever a service is rendered (registryz, sidecarz, instancesz)"},
		{Name: "service-visibility", Resource: "shape", Path: "**Attributes.Visibility",
			Why: "Istio 1.31's ambient service visibility attribute, which this registry does not model (as TestRegistryMatchesIstio notes)"},
		{Name: "no-shared-xds-cache", Type: "cachez", Resource: "shape",
			Why: "Istio lists its shared xDS cache by type; the generators here cache per push context inside each generator, and the listing is empty (a map by type with no types)"},
		{Name: "no-shared-xds-cache-sizes", Type: "cachez?sizes=true", Resource: "shape", Why: "as no-shared-xds-cache: only the total, 0B"},
		{Name: "connection-id-format", Type: "connections", Resource: "value", Path: "connectionIds",
			Why: "a connection ID is the proxy ID and a counter in Istio (productpage-v1-5f6d7-abcde.debugz-2), the node ID and a counter here (pilot/pkg/xds names connections); both contain the proxy ID, which is what ?proxyID= matches (by substring, as Istio)"},
		{Name: "istio-krtz-fails", Type: "krtz", Resource: "status",
			Why: "Istio 1.31 answers 500 here (its krt debug handler fails to marshal the mesh networks collection: \"Marshal called with nil\"); ours lists its collections"},
	}
}
