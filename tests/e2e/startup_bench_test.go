package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshplane/istiod/tests/procstat"
)

// writeObjects writes n mixed objects into dir, 100 per file.
func writeObjects(b *testing.B, dir string, n int) {
	b.Helper()
	var sb strings.Builder
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("ns-%d", i%50)
		switch i % 4 {
		case 0:
			fmt.Fprintf(&sb, "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: vs-%d, namespace: %s}\nspec:\n  hosts: [svc-%d]\n  http:\n  - route: [{destination: {host: svc-%d, subset: v1}, weight: 90}, {destination: {host: svc-%d, subset: v2}, weight: 10}]\n    timeout: 5s\n", i, ns, i, i, i)
		case 1:
			fmt.Fprintf(&sb, "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: dr-%d, namespace: %s}\nspec:\n  host: svc-%d\n  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}\n  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]\n", i, ns, i)
		case 2:
			fmt.Fprintf(&sb, "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: se-%d, namespace: %s}\nspec:\n  hosts: [ext-%d.example.com]\n  ports: [{number: 443, name: https, protocol: TLS}]\n  resolution: DNS\n", i, ns, i)
		case 3:
			fmt.Fprintf(&sb, "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: ap-%d, namespace: %s}\nspec:\n  selector: {matchLabels: {app: svc-%d}}\n  rules: [{from: [{source: {namespaces: [%s]}}], to: [{operation: {methods: [GET]}}]}]\n", i, ns, i, ns)
		}
		sb.WriteString("---\n")
		if (i+1)%100 == 0 || i == n-1 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("objects-%05d.yaml", i/100)), []byte(sb.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			sb.Reset()
		}
	}
}

// BenchmarkStartup10k starts istiod on a directory of 10,000 objects and
// measures the time until /ready answers 200 and the resident memory then.
func BenchmarkStartup10k(b *testing.B) {
	dir := b.TempDir()
	writeObjects(b, dir, 10000)
	t := &testing.T{}
	var total time.Duration
	var rss float64
	for i := 0; i < b.N; i++ {
		d := &daemon{t: t, http: freePortB(b), mon: freePortB(b), exited: make(chan struct{})}
		startProcess(b, d, "--configDir", dir, "--meshConfig", filepath.Join(dir, "absent"), "--log_output_level", "default:warn,file:warn,mesh:warn,bootstrap:info")
		begin := time.Now()
		for {
			code, _, err := d.get("/ready")
			if err == nil && code == 200 {
				break
			}
			if time.Since(begin) > 2*time.Minute {
				b.Fatalf("not ready:\n%s", d.logs())
			}
			time.Sleep(2 * time.Millisecond)
		}
		total += time.Since(begin)
		// resident memory once startup settled (the server logs this line
		// after handing the parse garbage back to the OS)
		for !strings.Contains(d.logs(), "config sources synced") {
			if time.Since(begin) > 2*time.Minute {
				b.Fatalf("no sync log:\n%s", d.logs())
			}
			time.Sleep(2 * time.Millisecond)
		}
		rss += procstat.RSSMiB(d.cmd.Process.Pid)
		if n := len(configzCount(b, d)); n != 10000 {
			b.Fatalf("configz has %d objects", n)
		}
		d.stop()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-ready")
	b.ReportMetric(rss/float64(b.N), "MB-rss")
}
