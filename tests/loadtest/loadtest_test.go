package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// binary is istiod, built once for the package's tests and benchmarks.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "istiod-loadtest-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, err = buildIstiod(dir)
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
