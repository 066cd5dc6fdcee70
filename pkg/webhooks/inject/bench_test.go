package inject_test

import (
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	kinject "github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/tests/injecttest"
)

// BenchmarkInject measures /inject for a typical pod (the reference
// productpage AdmissionReview with Istio's chart ConfigMaps), through the
// HTTP handler: injections per second and the p99 latency of one request.
func BenchmarkInject(b *testing.B) {
	ref := injecttest.LoadReference(b)
	cfg, err := kinject.ParseConfig(ref.ConfigText, ref.ValuesText)
	if err != nil {
		b.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(ref.Dir, "real/admission/inject.request.json"))
	if err != nil {
		b.Fatal(err)
	}
	h := newWebhookB(b, cfg, ref)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		w := post(b, h, "/inject", "application/json", body)
		lat = append(lat, time.Since(t0))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p99 := lat[min(len(lat)-1, len(lat)*99/100)]
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "injections/s")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
}

func newWebhookB(b *testing.B, cfg *kinject.Config, ref *injecttest.Reference) http.Handler {
	return newWebhook(b, cfg, ref.Mesh)
}
