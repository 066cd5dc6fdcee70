package main

import (
	"github.com/meshplane/istiod/tests/testproc"

	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// binary is istiod, built once for the package's tests and benchmarks.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "istiod-loadtest-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, err = testproc.BuildIstiod(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build istiod:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func run(tb testing.TB, o Options) *Report {
	tb.Helper()
	o.Binary = binary
	r, err := Run(context.Background(), o)
	if err != nil {
		tb.Fatal(err)
	}
	if !r.OK() {
		var sb strings.Builder
		r.Print(&sb)
		tb.Fatalf("load test failed:\n%s", sb.String())
	}
	return r
}

// Five sidecars against a real istiod get full config, every resource valid
// and every wire rule kept, and all of them get the changed VirtualService.
func TestLoadSmall(t *testing.T) {
	r := run(t, Options{Proxies: 5, Services: 5, Namespaces: 2, DialConcurrency: 5, ValidateSidecars: 5,
		Timeout: 30 * time.Second})
	if r.Full != 5 || r.Converged != 5 || len(r.FullEach) != 5 || len(r.ConvergeEach) != 5 {
		t.Fatalf("full %d, converged %d", r.Full, r.Converged)
	}
	// each sidecar: 5 services × (default + 2 subsets) clusters, 3 static
	// and its inbound cluster; an endpoint assignment per outbound cluster;
	// and one route configuration
	if r.Resources[0] != 5*(15+4) || r.Resources[1] < 5*15 || r.Resources[3] < 5 {
		t.Errorf("resources received: %v", r.Resources)
	}
	if r.ChangeResponses == 0 {
		t.Error("no response after the change")
	}
}

// A config storm: the VirtualService edited ten times a second, after
// which every sidecar gets the routes of the last edit (and reports only
// those: no edit before it has its weights).
func TestLoadStorm(t *testing.T) {
	r := run(t, Options{Proxies: 4, Services: 3, Namespaces: 2, DialConcurrency: 4, ValidateSidecars: 1,
		Timeout: 30 * time.Second, StormDuration: 1500 * time.Millisecond, StormRate: 10})
	s := r.Storm
	if s == nil {
		t.Fatal("no storm figures")
	}
	if s.Converged != 4 || !r.OK() {
		t.Fatalf("%d of 4 sidecars had the storm's last edit (report OK: %v)", s.Converged, r.OK())
	}
	if s.Edits < 3 || s.Responses == 0 || s.IstiodPeakRSS == 0 {
		t.Errorf("storm: %d edits, %d responses, peak RSS %d", s.Edits, s.Responses, s.IstiodPeakRSS)
	}
	if s.PushStages["pilot_debounce_time"].count == 0 {
		t.Errorf("no debounce observed over the storm: %v", s.PushStages)
	}
	var b strings.Builder
	PrintComparison(&b, []*Report{r})
	if !strings.Contains(b.String(), "storm: last edit, all sidecars") {
		t.Errorf("the comparison has no storm rows:\n%s", b.String())
	}
}

// BenchmarkConvergence runs the load test with 50 sidecars and the default
// mesh (100 services) per iteration: time until all have full config, and
// time until all have the routes of one edited VirtualService.
func BenchmarkConvergence(b *testing.B) {
	o := DefaultOptions()
	o.Proxies = 50
	var full, fullP99, conv, cpu, rss float64
	for i := 0; i < b.N; i++ {
		r := run(b, o)
		full += float64(r.FullTotal) / 1e6
		fullP99 += float64(percentile(sortedCopy(r.FullEach), 0.99)) / 1e6
		conv += float64(r.ConvergeTotal) / 1e6
		cpu += r.IstiodConnectCPU + r.IstiodChangeCPU
		rss += float64(r.IstiodRSS) / (1 << 20)
	}
	n := float64(b.N)
	b.ReportMetric(full/n, "ms-full-config")
	b.ReportMetric(fullP99/n, "ms-full-config-p99")
	b.ReportMetric(conv/n, "ms-converge")
	b.ReportMetric(cpu/n, "istiod-cpu-s")
	b.ReportMetric(rss/n, "istiod-rss-MiB")
}

// The same scenario from a real API server: the mesh created as objects,
// the change made twice as patches, each round converged by every sidecar;
// the sidecars ramp up two at a time, and three of them scan rather than
// decode what they receive. Then five pods behind two Services churn: every
// sidecar gets the final endpoints, never an empty assignment, and only
// endpoints (no cluster, listener or route is resent).
func TestLoadKube(t *testing.T) {
	o := Options{Proxies: 4, Services: 3, Namespaces: 2, DialConcurrency: 4, ValidateSidecars: 1,
		Timeout: time.Minute, Kube: true, Repeat: 2, MaxSyncing: 2, Istiod: "meshplane=" + binary,
		ChurnPods: 5, ChurnServices: 2, ChurnInterval: 20 * time.Millisecond}
	rs, err := RunAll(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("%d reports, want 1", len(rs))
	}
	r := rs[0]
	if !r.OK() {
		var sb strings.Builder
		r.Print(&sb)
		t.Fatalf("load test failed:\n%s", sb.String())
	}
	if r.Source != "kube-apiserver" || len(r.Rounds) != 2 || len(r.ConvergeEach) != 2*4 {
		t.Errorf("source %q, rounds %v, %d convergence samples", r.Source, r.Rounds, len(r.ConvergeEach))
	}
	if r.IstiodBaselineHeap == 0 || r.IstiodHeap == 0 {
		t.Errorf("live heap not read: baseline %d, end %d", r.IstiodBaselineHeap, r.IstiodHeap)
	}
	c := r.Churn
	if c == nil {
		t.Fatal("no churn figures")
	}
	// each pod: its successor added beside it terminating, then it removed
	if c.Updates != 2*5 || c.Converged != 4 || c.EmptyAssignments != 0 || c.NonEDS != 0 || c.Responses == 0 {
		t.Errorf("churn: %d updates, %d sidecars converged, %d empty assignments, %d non-EDS resources, %d responses",
			c.Updates, c.Converged, c.EmptyAssignments, c.NonEDS, c.Responses)
	}
	if c.PushStages["pilot_debounce_time"].count == 0 {
		t.Errorf("no debounce observed over the churn: %v", c.PushStages)
	}
}

// The churned Services' slices: the pods before the one being replaced
// are of the new generation, it is terminating beside its successor, the
// rest are of the old one.
func TestChurnSlice(t *testing.T) {
	es := churnSlice(1, 3, 1, 1)
	var got []string
	for _, e := range es.Endpoints {
		got = append(got, fmt.Sprintf("%s ready=%v terminating=%v", e.Addresses[0], *e.Conditions.Ready, *e.Conditions.Terminating))
	}
	want := []string{"10.251.1.1 ready=true terminating=false", "10.250.1.2 ready=false terminating=true",
		"10.251.1.2 ready=true terminating=false", "10.250.1.3 ready=true terminating=false"}
	if !slices.Equal(got, want) {
		t.Errorf("slice endpoints %v, want %v", got, want)
	}
	if es.Labels["kubernetes.io/service-name"] != "churn-1" || es.Namespace != "ns-0" {
		t.Errorf("slice labels %v in %s", es.Labels, es.Namespace)
	}
	o := Options{ChurnPods: 7, ChurnServices: 3}
	if n := []int{churnPods(o, 0), churnPods(o, 1), churnPods(o, 2)}; !slices.Equal(n, []int{3, 2, 2}) {
		t.Errorf("pods per service %v", n)
	}
}

var testAddrs = listenAddrs{http: "127.0.0.1:1", monitoring: "127.0.0.1:2", grpc: "127.0.0.1:3", secureGRPC: "127.0.0.1:4"}

// flagValue returns the value after flag in args, and whether it is there.
func flagValue(args []string, flag string) (string, bool) {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

func TestCommandLineOursFiles(t *testing.T) {
	args, env, err := commandLine(flavorOurs, source{configDir: "/m"}, "/mesh.yaml", "/w", testAddrs)
	if err != nil {
		t.Fatal(err)
	}
	if args[0] != "discovery" {
		t.Errorf("args %v do not start with discovery", args)
	}
	want := map[string]string{"--configDir": "/m", "--meshConfig": "/mesh.yaml", "--httpAddr": "127.0.0.1:1",
		"--monitoringAddr": "127.0.0.1:2", "--grpcAddr": "127.0.0.1:3", "--secureGRPCAddr": "127.0.0.1:4", "--httpsAddr": "127.0.0.1:0"}
	for f, v := range want {
		if got, _ := flagValue(args, f); got != v {
			t.Errorf("%s = %q, want %q (args %v)", f, got, v, args)
		}
	}
	if _, ok := flagValue(args, "--kubeconfig"); ok {
		t.Errorf("file mode with --kubeconfig: %v", args)
	}
	for _, e := range []string{"PILOT_MAX_REQUESTS_PER_SECOND=100000", "ISTIOD_CA_DIR=" + filepath.Join("/w", "ca")} {
		if !slices.Contains(env, e) {
			t.Errorf("env %v lacks %s", env, e)
		}
	}
}

func TestCommandLineKube(t *testing.T) {
	for _, fl := range []flavor{flavorOurs, flavorIstio} {
		args, env, err := commandLine(fl, source{kubeconfig: "/k"}, "/mesh.yaml", "/w", testAddrs)
		if err != nil {
			t.Fatal(fl, err)
		}
		for f, v := range map[string]string{"--kubeconfig": "/k", "--namespace": "istio-system", "--grpcAddr": "127.0.0.1:3", "--httpAddr": "127.0.0.1:1"} {
			if got, _ := flagValue(args, f); got != v {
				t.Errorf("%s: %s = %q, want %q", fl, f, got, v)
			}
		}
		if _, ok := flagValue(args, "--configDir"); ok {
			t.Errorf("%s: kube mode with --configDir: %v", fl, args)
		}
		if !slices.Contains(env, "POD_NAMESPACE=istio-system") || !slices.Contains(env, "PILOT_MAX_REQUESTS_PER_SECOND=100000") {
			t.Errorf("%s: env %v", fl, env)
		}
		// Istio's pilot-discovery would listen on the fixed ControlZ port
		// 9876; ours has no such flag and would refuse it
		port, ok := flagValue(args, "--ctrlz_port")
		if (fl == flavorIstio) != (ok && port == "0") {
			t.Errorf("%s: --ctrlz_port %q (present %v)", fl, port, ok)
		}
		hasCADir := slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "ISTIOD_CA_DIR=") })
		if hasCADir != (fl == flavorOurs) {
			t.Errorf("%s: ISTIOD_CA_DIR in env: %v", fl, hasCADir)
		}
	}
}

func TestCommandLineErrors(t *testing.T) {
	if _, _, err := commandLine(flavorIstio, source{configDir: "/m"}, "/mesh.yaml", "/w", testAddrs); err == nil {
		t.Error("Istio's pilot-discovery on files: no error")
	}
	if _, _, err := commandLine(flavorOurs, source{}, "/mesh.yaml", "/w", testAddrs); err == nil {
		t.Error("no source: no error")
	}
	if _, _, err := commandLine(flavorOurs, source{configDir: "/m", kubeconfig: "/k"}, "/mesh.yaml", "/w", testAddrs); err == nil {
		t.Error("two sources: no error")
	}
}

func TestFlavorOfPackage(t *testing.T) {
	for pkg, want := range map[string]flavor{
		"github.com/meshplane/istiod/cmd/istiod":   flavorOurs,
		"istio.io/istio/pilot/cmd/pilot-discovery": flavorIstio,
	} {
		if got, err := flavorOfPackage("bin", pkg); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", pkg, got, err, want)
		}
	}
	if _, err := flavorOfPackage("bin", "istio.io/istio/pilot/cmd/pilot-agent"); err == nil {
		t.Error("pilot-agent taken for a control plane")
	}
}

// The binary the tests built is recognised from its build information.
func TestDetectFlavorOfBuiltIstiod(t *testing.T) {
	if f, err := detectFlavor(binary); err != nil || f != flavorOurs {
		t.Errorf("detectFlavor(%s) = %q, %v", binary, f, err)
	}
	script := filepath.Join(t.TempDir(), "x.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := detectFlavor(script); err == nil || !strings.Contains(err.Error(), "istio="+script) {
		t.Errorf("a script: %v, want an error naming the explicit form", err)
	}
}

func TestParseTargets(t *testing.T) {
	ts, err := parseTargets("")
	if err != nil || len(ts) != 1 || ts[0].flavor != flavorOurs || ts[0].bin != "" {
		t.Fatalf("empty: %+v, %v", ts, err)
	}
	ts, err = parseTargets("self, istio=/opt/pilot-discovery,meshplane=/x/istiod")
	if err != nil {
		t.Fatal(err)
	}
	want := []target{{flavor: flavorOurs}, {bin: "/opt/pilot-discovery", flavor: flavorIstio}, {bin: "/x/istiod", flavor: flavorOurs}}
	for i := range want {
		if i >= len(ts) || ts[i].bin != want[i].bin || ts[i].flavor != want[i].flavor || ts[i].name == "" {
			t.Fatalf("targets %+v, want %+v", ts, want)
		}
	}
	for _, bad := range []string{"self,,peer", "envoy=/x", filepath.Join(t.TempDir(), "missing")} {
		if _, err := parseTargets(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The API objects are those of the file mode: per service a ServiceEntry,
// a DestinationRule, a VirtualService and one WorkloadEntry per sidecar
// (or a static one), in the service's namespace, all networking.istio.io/v1.
func TestMeshObjects(t *testing.T) {
	m := &mesh{services: 4, namespaces: 2, proxies: 6}
	objs, err := (&kubeMesh{m: m}).objects()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	byName := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		count[u.GetKind()]++
		byName[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
		if u.GetAPIVersion() != "networking.istio.io/v1" {
			t.Errorf("%s %s: apiVersion %s", u.GetKind(), u.GetName(), u.GetAPIVersion())
		}
	}
	// services 0 and 1 have two sidecars each, 2 and 3 one each
	if count["ServiceEntry"] != 4 || count["DestinationRule"] != 4 || count["VirtualService"] != 4 || count["WorkloadEntry"] != 6 {
		t.Errorf("kinds: %v", count)
	}
	we := byName["WorkloadEntry/ns-0/pod-4"] // proxy 4 is of service 0 (ns-0), version v1
	if we == nil {
		t.Fatalf("no WorkloadEntry pod-4 in ns-0; have %v", keys(byName))
	}
	if addr, _, _ := unstructured.NestedString(we.Object, "spec", "address"); addr != proxyIP(4) {
		t.Errorf("pod-4 address %q, want %s", addr, proxyIP(4))
	}
	if v, _, _ := unstructured.NestedString(we.Object, "spec", "labels", "version"); v != "v1" {
		t.Errorf("pod-4 version %q", v)
	}
	se := byName["ServiceEntry/ns-1/svc-3"]
	if se == nil {
		t.Fatal("no ServiceEntry svc-3 in ns-1")
	}
	if hosts, _, _ := unstructured.NestedStringSlice(se.Object, "spec", "hosts"); !slices.Equal(hosts, []string{m.serviceHost(3)}) {
		t.Errorf("svc-3 hosts %v", hosts)
	}
	// fewer sidecars than services: a static endpoint
	small := &mesh{services: 3, namespaces: 1, proxies: 1}
	objs, err = (&kubeMesh{m: small}).objects()
	if err != nil {
		t.Fatal(err)
	}
	static := 0
	for _, u := range objs {
		if u.GetKind() == "WorkloadEntry" && strings.HasSuffix(u.GetName(), "-static") {
			static++
		}
	}
	if static != 2 {
		t.Errorf("%d static WorkloadEntries, want 2", static)
	}
}

func keys(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Every round's weights are new, positive, and add up to 100.
func TestChangedWeights(t *testing.T) {
	seen := map[int]bool{initialV2: true}
	for r := 1; r <= maxRounds; r++ {
		v1, v2 := changedWeights(r)
		if v1 <= 0 || v2 <= 0 || v1+v2 != 100 || seen[v2] {
			t.Fatalf("round %d: %d/%d", r, v1, v2)
		}
		seen[v2] = true
	}
	if v1, v2 := changedWeights(0); v1 != initialV1 || v2 != initialV2 {
		t.Errorf("round 0: %d/%d", v1, v2)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{{nil, 0}, {[]time.Duration{3}, 3}, {[]time.Duration{5, 1, 3}, 3}, {[]time.Duration{4, 1, 3, 2}, 2}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestParseMemStats(t *testing.T) {
	text := "heap profile: 1: 2 [3: 4] @ heap/1048576\n1: 2 [3: 4] @ 0x1\n\n# runtime.MemStats\n# Alloc = 100\n# TotalAlloc = 900\n# HeapAlloc = 12345\n# HeapInuse = 20000\n# PauseNs = [1 2 3]\n"
	m, err := parseMemStats(strings.NewReader(text))
	if err != nil || m["HeapAlloc"] != 12345 || m["HeapInuse"] != 20000 || m["TotalAlloc"] != 900 {
		t.Errorf("parseMemStats = %v, %v", m, err)
	}
	if _, ok := m["PauseNs"]; ok {
		t.Error("a list line was read as a number")
	}
	if m, _ := parseMemStats(strings.NewReader("1: 2 [3: 4] @ 0x1\n")); len(m) != 0 {
		t.Errorf("no MemStats lines: %v", m)
	}
}

// The scan of a route configuration finds the target's virtual host among
// the others, and checks the name as a decode would.
func TestScanVirtualHost(t *testing.T) {
	rc := &routev3.RouteConfiguration{Name: "9080", VirtualHosts: []*routev3.VirtualHost{
		{Name: "a:9080", Domains: []string{"a"}},
		{Name: "target:9080", Domains: []string{"target"}, Routes: []*routev3.Route{{Name: "r"}}},
		{Name: "b:9080"},
	}}
	res := func(name string, m proto.Message) *discovery.Resource {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		return &discovery.Resource{Name: name, Resource: a}
	}
	vh, err := scanVirtualHost(res("9080", rc), "target:9080")
	if err != nil || vh == nil || vh.GetDomains()[0] != "target" || vh.GetRoutes()[0].GetName() != "r" {
		t.Fatalf("scan = %v, %v", vh, err)
	}
	if vh, err := scanVirtualHost(res("9080", rc), "missing:9080"); err != nil || vh != nil {
		t.Errorf("absent host: %v, %v", vh, err)
	}
	var we *wireError
	if _, err := scanVirtualHost(res("8080", rc), "target:9080"); !errors.As(err, &we) {
		t.Errorf("wrong name: %v, want a wire error", err)
	}
	bad := &discovery.Resource{Name: "9080", Resource: &anypb.Any{TypeUrl: xds.RouteType, Value: []byte{0x12, 0x40, 0x01}}}
	if _, err := scanVirtualHost(bad, "target:9080"); !errors.As(err, &we) {
		t.Errorf("truncated: %v, want a wire error", err)
	}
}

// A validating sidecar takes what the others take while the phase runs and
// finds an invalid resource afterwards, when its backlog is checked; the
// backlog is emptied by the check.
func TestCheckBacklog(t *testing.T) {
	res := func(m proto.Message, name string) *discovery.Resource {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		return &discovery.Resource{Name: name, Resource: a}
	}
	good := &routev3.RouteConfiguration{Name: "9080", VirtualHosts: []*routev3.VirtualHost{{Name: "a:9080", Domains: []string{"a"}}}}
	// a virtual host needs at least one domain
	invalid := &routev3.RouteConfiguration{Name: "9081", VirtualHosts: []*routev3.VirtualHost{{Name: "b:9081"}}}
	for _, validate := range []bool{false, true} {
		p := &proxy{validate: validate, round: &atomic.Int32{}}
		p.reset()
		for _, r := range []*discovery.Resource{res(good, "9080"), res(invalid, "9081")} {
			if err := p.apply(xds.RouteType, r); err != nil {
				t.Fatalf("validate=%v: apply %s: %v", validate, r.Name, err)
			}
		}
		err := p.checkBacklog()
		var we *wireError
		switch {
		case !validate && err != nil:
			t.Errorf("a sidecar that does not validate kept a backlog: %v", err)
		case validate && (!errors.As(err, &we) || !strings.Contains(err.Error(), `"9081"`)):
			t.Errorf("validating sidecar: %v, want a wire error naming 9081", err)
		}
		if err := p.checkBacklog(); err != nil {
			t.Errorf("validate=%v: second check: %v", validate, err)
		}
	}
}

func TestParseHistograms(t *testing.T) {
	text := `# HELP pilot_xds_push_time Total time
# TYPE pilot_xds_push_time histogram
pilot_xds_push_time_bucket{type="cds",le="0.01"} 3
pilot_xds_push_time_sum{type="cds"} 0.5
pilot_xds_push_time_count{type="cds"} 4
pilot_xds_push_time_sum{type="rds"} 1.5
pilot_xds_push_time_count{type="rds"} 6
pilot_debounce_time_sum 0.2
pilot_debounce_time_count 2
pilot_debounce_time_total 9
`
	h, err := parseHistograms(strings.NewReader(text), []string{"pilot_xds_push_time", "pilot_debounce_time", "absent"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h["pilot_xds_push_time"]; got.sum != 2 || got.count != 10 || got.mean() != 0.2 {
		t.Errorf("push time %+v", got)
	}
	if got := h["pilot_debounce_time"].sub(histogram{sum: 0.1, count: 1}); got.count != 1 || got.mean() != 0.1 {
		t.Errorf("debounce since %+v", got)
	}
	if h["absent"].mean() != 0 {
		t.Error("an absent histogram has a mean")
	}
}

// The response codec decodes what the standard one does, field for field,
// with the resources' values referencing the received bytes; malformed
// input is an error, as it is for the standard codec.
func TestResponseCodec(t *testing.T) {
	rc, err := anypb.New(&routev3.RouteConfiguration{Name: "9080", VirtualHosts: []*routev3.VirtualHost{{Name: "a", Domains: []string{"a"}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := &discovery.DeltaDiscoveryResponse{SystemVersionInfo: "v1", TypeUrl: xds.RouteType, Nonce: "n1",
		ControlPlane: &core.ControlPlane{Identifier: "istiod"}, RemovedResources: []string{"gone"},
		Resources: []*discovery.Resource{
			{Name: "9080", Version: "x1", Resource: rc, Aliases: []string{"alias"}},
			{Name: "empty", Resource: &anypb.Any{TypeUrl: xds.RouteType}},
			{Name: "bare"},
		}}
	b, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got := &discovery.DeltaDiscoveryResponse{Nonce: "stale"}
	if err := decodeDeltaResponse(b, got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("decoded\n%v\nwant\n%v", got, want)
	}
	if v := got.Resources[0].Resource.Value; len(v) == 0 || &v[0] != &b[bytes.Index(b, rc.Value)] {
		t.Error("the resource's value was copied")
	}
	for _, bad := range [][]byte{{0x12, 0x40, 0x01}, {0x12, 0x02, 0x12, 0x05}, {0xff}} {
		if err := decodeDeltaResponse(bad, &discovery.DeltaDiscoveryResponse{}); err == nil {
			t.Errorf("% x decoded without an error", bad)
		}
		if err := proto.Unmarshal(bad, &discovery.DeltaDiscoveryResponse{}); err == nil {
			t.Errorf("% x: the standard decoder takes it", bad)
		}
	}
}
