package ca_test

import (
	"context"
	"testing"
	"time"

	"github.com/meshplane/istiod/pkg/security/ca"
)

// BenchmarkSign is the CA's signing rate: one CSR of an RSA 2048 workload
// key verified and a 24 h leaf signed with the RSA 2048 root, per op (run
// with -cpu 1 for the rate of one core).
func BenchmarkSign(b *testing.B) {
	authority, err := ca.New(context.Background(), ca.Options{})
	if err != nil {
		b.Fatal(err)
	}
	csr := csrPEM(b, sharedRSAKey(b), "")
	ids := []string{"spiffe://cluster.local/ns/bookinfo/sa/bookinfo-productpage"}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := authority.Sign(csr, ids, 24*time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "certs/s")
}
