package differential

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
)

// Case is one differential test: objects applied to both worlds, one
// proxy connected to both control planes, every resource compared.
type Case struct {
	// Name names the case in reports (and its sentinel host).
	Name string
	// Objects are YAML documents: Namespaces, Services, Pods (with
	// status.podIP: no kubelet writes one), EndpointSlices, ServiceEntries,
	// Istio and Gateway API configuration. Give each case namespaces of its
	// own: what it leaves there (generated gateway Deployments and
	// Services among it) is swept when it ends.
	Objects string
	// NoAutoEndpoints leaves out the EndpointSlices the harness otherwise
	// writes for each selecting Service the objects give none for (see
	// autoEndpointSlices).
	NoAutoEndpoints bool
	// Proxy is the proxy connected to both.
	Proxy Proxy
	// Mesh is mesh config YAML over MeshConfig, Env more NAME=value
	// settings of both control planes' environments: a case that gives
	// either runs on control planes restarted with them (on the same API
	// servers), and the next case without restarts them as they were.
	Mesh string
	Env  []string
	// Probe reads the sentinel from a probe proxy of a namespace of its
	// own (probeNamespace) rather than from the case's proxy, for a case
	// whose Sidecar hides the proxy's own namespace: each poll fetches the
	// probe's snapshot first, so a case snapshot fetched after a probe's
	// that holds the sentinel was built from config at least as new.
	Probe bool
	// Allowed are the differences accepted, each named and explained. An
	// entry that covers nothing fails the case: the list stays true.
	Allowed []Allowed
}

// Proxy describes the proxy connected to both control planes, as Istio's
// agent would present it.
type Proxy struct {
	// Type is "sidecar" (the default) or "router".
	Type string
	// Pod and Namespace name the pod the proxy runs in; when the objects
	// hold that Pod, IP, Labels and ServiceAccount default to its own.
	Pod, Namespace string
	IP             string
	Labels         map[string]string
	ServiceAccount string
	// Workload is WORKLOAD_NAME (default: Pod without its last two
	// dash-separated parts, as a Deployment's pods are named).
	Workload string
	// ClusterID defaults to Kubernetes, Version (ISTIO_VERSION) to 1.31.0.
	ClusterID, Version string
	// Metadata is added to the node metadata the fields make, and wins.
	Metadata map[string]any
}

// probeNamespace holds the sentinel of a Case with Probe, and its probe
// proxy, probeProxy.
const probeNamespace = "differential-probe"

var probeProxy = Proxy{Pod: "probe-0", Namespace: probeNamespace, IP: "10.255.0.1", Workload: "probe"}

// resolve fills the proxy's defaults from its pod among objs.
func (p Proxy) resolve(objs []*unstructured.Unstructured) (Proxy, error) {
	if p.Type == "" {
		p.Type = "sidecar"
	}
	if p.Pod == "" || p.Namespace == "" {
		return p, fmt.Errorf("proxy: Pod and Namespace are required")
	}
	for _, u := range objs {
		if u.GetAPIVersion() != "v1" || u.GetKind() != "Pod" || u.GetName() != p.Pod || u.GetNamespace() != p.Namespace {
			continue
		}
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pod); err != nil {
			return p, err
		}
		if p.IP == "" {
			p.IP = pod.Status.PodIP
		}
		if p.Labels == nil {
			p.Labels = pod.Labels
		}
		if p.ServiceAccount == "" {
			p.ServiceAccount = pod.Spec.ServiceAccountName
		}
	}
	if p.IP == "" {
		return p, fmt.Errorf("proxy %s.%s: no IP (give Proxy.IP or the Pod with status.podIP)", p.Pod, p.Namespace)
	}
	if p.ServiceAccount == "" {
		p.ServiceAccount = "default"
	}
	if p.Workload == "" {
		parts := strings.Split(p.Pod, "-")
		if len(parts) > 2 {
			parts = parts[:len(parts)-2]
		}
		p.Workload = strings.Join(parts, "-")
	}
	if p.ClusterID == "" {
		p.ClusterID = "Kubernetes"
	}
	if p.Version == "" {
		p.Version = "1.31.0"
	}
	return p, nil
}

// NodeID is the node ID Istio's agent sends: type~ip~pod.namespace~namespace.svc.cluster.local.
func (p Proxy) NodeID() string {
	return fmt.Sprintf("%s~%s~%s.%s~%s.svc.cluster.local", p.Type, p.IP, p.Pod, p.Namespace, p.Namespace)
}

// config is the ADS client configuration of the proxy: the node metadata
// Istio's agent sends for such a pod (the subset the control planes read).
func (p Proxy) config() adsc.Config {
	labels := map[string]any{}
	for k, v := range p.Labels {
		labels[k] = v
	}
	md := map[string]any{
		"NAMESPACE": p.Namespace, "LABELS": labels, "ISTIO_VERSION": p.Version, "CLUSTER_ID": p.ClusterID,
		"INSTANCE_IPS": p.IP, "MESH_ID": "cluster.local", "SERVICE_ACCOUNT": p.ServiceAccount,
		"WORKLOAD_NAME": p.Workload, "NODE_NAME": "node-0",
	}
	if p.Type == "sidecar" {
		md["INTERCEPTION_MODE"] = "REDIRECT"
	}
	for k, v := range p.Metadata {
		md[k] = v
	}
	return adsc.Config{NodeID: p.NodeID(), Metadata: md}
}

// Timing of a case's polls. The bounds guard against a hang; a passing
// case ends as soon as its confirmation poll agrees.
const (
	// caseTimeout bounds a case from its objects' creation.
	caseTimeout = 60 * time.Second
	// confirmAfter separates the poll that agrees from the one that
	// confirms it; settleAfter is how long a disagreement must stay the
	// same, both snapshots unchanged, to be reported before the timeout.
	confirmAfter = time.Second
	settleAfter  = 3 * time.Second
	pollEvery    = 200 * time.Millisecond
)

// Run runs one case: applies its objects to both worlds (and a sentinel
// last, see sentinel), connects the proxy to both control planes until
// both snapshots hold the sentinel and agree, outside the allowed
// differences, twice in a row, then fails the test with the allowed
// entries that covered nothing. When they keep disagreeing (both
// snapshots unchanged for settleAfter, or caseTimeout passed), it fails
// with every difference not allowed, one per resource field, ours and
// Istio's values side by side. What the case made is removed when it
// ends, pass or fail.
func (f *Fixture) Run(t *testing.T, c Case) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.run(t, c)
}

// run is Run for a caller holding f.mu.
func (f *Fixture) run(t *testing.T, c Case) {
	t.Helper()
	begin := time.Now()
	objs, err := parseObjects(c.Objects)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := c.Proxy.resolve(objs)
	if err != nil {
		t.Fatal(err)
	}
	host := sentinelHost(c.Name)
	var probe *Proxy
	sentinelNS := proxy.Namespace
	if c.Probe {
		p, err := probeProxy.resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		probe, sentinelNS = &p, probeNamespace
	}
	sentinel, err := parseObjects(sentinelObject(host, sentinelNS))
	if err != nil {
		t.Fatal(err)
	}
	ctx, done := f.prepare(t, planeConfig{mesh: c.Mesh, env: strings.Join(c.Env, "\n")}, objs, sentinel, !c.NoAutoEndpoints)
	defer done()
	res := f.converge(ctx, proxy, probe, host, c.Allowed)
	dump(t, c.Name, res.last)
	for _, d := range res.allowed {
		t.Logf("allowed difference %s", d)
	}
	if res.err != nil {
		t.Errorf("%s (after %d polls in %v)", res.err, res.polls, time.Since(begin).Round(time.Millisecond))
		return
	}
	if len(res.differences) > 0 {
		var b strings.Builder
		for _, d := range res.differences {
			b.WriteString("\n  " + d.String())
		}
		t.Errorf("%d differences from Istio's pilot-discovery (after %d polls in %v; %s; %s=<dir> writes both snapshots):%s",
			len(res.differences), res.polls, time.Since(begin).Round(time.Millisecond), res.why, DumpEnv, b.String())
	}
	for _, a := range c.Allowed {
		used := slices.ContainsFunc(res.allowed, func(ad allowedDifference) bool { return ad.by.Name == a.Name })
		if !used && len(res.differences) == 0 && !a.Intermittent {
			t.Errorf("allowed difference %q covers nothing: remove it (%s)", a.Name, a.Why)
		}
	}
	t.Logf("compared %s in %v (%d polls)", res.summary(), time.Since(begin).Round(time.Millisecond), res.polls)
}

type allowedDifference struct {
	Difference
	by Allowed
}

func (a allowedDifference) String() string {
	return fmt.Sprintf("%q (%s):\n  %s", a.by.Name, a.by.Why, a.Difference)
}

// outcome is what converge found.
type outcome struct {
	differences []Difference
	allowed     []allowedDifference
	last        [2]map[string]map[string]any
	polls       int
	why         string // why a disagreement was reported
	err         error  // a poll failed until the end
}

func (o outcome) summary() string {
	var parts []string
	for _, typ := range Types {
		parts = append(parts, fmt.Sprintf("%d %s", len(o.last[1][typ]), typ))
	}
	return strings.Join(parts, ", ")
}

// converge polls both control planes (see Run); with a probe, the
// sentinel is looked for in the probe's snapshots.
func (f *Fixture) converge(ctx context.Context, proxy Proxy, probe *Proxy, host string, allowed []Allowed) outcome {
	deadline := time.Now().Add(caseTimeout)
	var (
		o           outcome
		agreedAt    time.Time
		prev        [2]map[string]map[string]any
		stableSince time.Time
	)
	for ; ; o.polls++ {
		if o.polls > 0 {
			select {
			case <-ctx.Done():
				o.err = ctx.Err()
				return o
			case <-time.After(pollEvery):
			}
		}
		snaps, seen, err := f.poll(ctx, proxy, probe, host)
		if err != nil {
			o.err = err
			if time.Now().After(deadline) {
				return o
			}
			continue
		}
		o.err = nil
		o.last = snaps
		unchanged := reflect.DeepEqual(prev, snaps)
		prev = snaps
		if !unchanged {
			stableSince = time.Now()
		}
		if !seen[0] || !seen[1] {
			agreedAt = time.Time{}
			if time.Now().After(deadline) {
				o.err = fmt.Errorf("the sentinel %s never reached both (ours: %v, Istio: %v)", host, seen[0], seen[1])
				return o
			}
			continue
		}
		o.differences, o.allowed = nil, nil
		for _, d := range compareSnapshots(snaps[0], snaps[1]) {
			if i := slices.IndexFunc(allowed, func(a Allowed) bool { return a.covers(d) }); i >= 0 {
				o.allowed = append(o.allowed, allowedDifference{d, allowed[i]})
			} else {
				o.differences = append(o.differences, d)
			}
		}
		if len(o.differences) == 0 {
			if !agreedAt.IsZero() && unchanged && time.Since(agreedAt) >= confirmAfter {
				return o
			}
			if agreedAt.IsZero() || !unchanged {
				agreedAt = time.Now()
			}
			continue
		}
		agreedAt = time.Time{}
		switch {
		case time.Since(stableSince) >= settleAfter:
			o.why = fmt.Sprintf("both snapshots unchanged for %v", settleAfter)
			return o
		case time.Now().After(deadline):
			o.why = fmt.Sprintf("still changing after %v", caseTimeout)
			return o
		}
	}
}

// poll fetches and renders both snapshots, in parallel, and tells which
// hold the sentinel of host (with a probe: which probe snapshots, each
// fetched before the case's).
func (f *Fixture) poll(ctx context.Context, proxy Proxy, probe *Proxy, host string) ([2]map[string]map[string]any, [2]bool, error) {
	var out [2]map[string]map[string]any
	var seen [2]bool
	var errs [2]error
	var wg sync.WaitGroup
	for i, fl := range []Flavor{Ours, Istio} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if probe != nil {
				var s map[string]map[string]any
				if s, errs[i] = f.plane(fl).snapshot(ctx, *probe); errs[i] != nil {
					errs[i] = fmt.Errorf("%s: probe: %v", fl, errs[i])
					return
				}
				seen[i] = hasSentinel(s, host)
			}
			out[i], errs[i] = f.plane(fl).snapshot(ctx, proxy)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %v", fl, errs[i])
			} else if probe == nil {
				seen[i] = hasSentinel(out[i], host)
			}
		}()
	}
	wg.Wait()
	if errs[0] != nil {
		return out, seen, errs[0]
	}
	return out, seen, errs[1]
}

// snapshot fetches what the plane sends the proxy and renders it,
// normalised (see normalise).
func (p *plane) snapshot(ctx context.Context, proxy Proxy) (map[string]map[string]any, error) {
	if err := p.alive(); err != nil {
		return nil, err
	}
	s, err := fetch(ctx, p.grpc, proxy.config())
	if err != nil {
		return nil, err
	}
	ips, err := p.clusterIPNames(ctx)
	if err != nil {
		return nil, err
	}
	api, err := p.apiServerEndpoints(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for typ, byName := range s {
		out[typ] = map[string]any{}
		for name, m := range byName {
			v, err := render(m)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %v", typ, name, err)
			}
			out[typ][replaceIPsIn(name, ips)] = normalise(v, ips, api)
		}
	}
	return out, nil
}

// dump writes the last snapshots under $DIFFERENTIAL_DUMP when set.
func dump(t *testing.T, name string, snaps [2]map[string]map[string]any) {
	dir := os.Getenv(DumpEnv)
	if dir == "" || snaps[0] == nil {
		return
	}
	for i, fl := range []Flavor{Ours, Istio} {
		d := filepath.Join(dir, sentinelHost(name), string(fl))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Logf("dump: %v", err)
			return
		}
		for typ, byName := range snaps[i] {
			var list []any
			for _, n := range slices.Sorted(maps.Keys(byName)) {
				list = append(list, byName[n])
			}
			b := marshal(list, "  ")
			if err := os.WriteFile(filepath.Join(d, typ+".json"), b, 0o644); err != nil {
				t.Logf("dump: %v", err)
			}
		}
	}
	t.Logf("snapshots written to %s", filepath.Join(dir, sentinelHost(name)))
}

// prepare restarts both control planes with cfg when it differs from how
// they run, and applies objs (with the EndpointSlices a controller would
// write, when autoEndpoints) and the sentinel to both worlds. It returns
// the case's context and what to defer: what the case created is deleted
// and its namespaces swept, also when the case ends with t.Fatal, so the
// next case starts clean.
func (f *Fixture) prepare(t *testing.T, cfg planeConfig, objs, sentinel []*unstructured.Unstructured, autoEndpoints bool) (context.Context, func()) {
	t.Helper()
	if err := f.configure(cfg); err != nil {
		t.Fatalf("restarting the control planes for the mesh config and environment: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout+30*time.Second)
	worlds := []*world{newWorld(f.plane(Ours)), newWorld(f.plane(Istio))}
	done := func() {
		defer cancel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, w := range worlds {
			if err := w.cleanup(ctx); err != nil {
				t.Errorf("%s: cleaning up: %v", w.p.flavor, err)
			}
		}
	}
	for _, w := range worlds {
		startOfSecond()
		if err := w.apply(ctx, objs, autoEndpoints); err != nil {
			done()
			t.Fatalf("%s: %v", w.p.flavor, err)
		}
		if err := w.apply(ctx, sentinel, false); err != nil {
			done()
			t.Fatalf("%s: sentinel: %v", w.p.flavor, err)
		}
	}
	return ctx, done
}
