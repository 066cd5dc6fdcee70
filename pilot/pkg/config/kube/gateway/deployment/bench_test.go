package deployment

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/tests/refdata"
)

// BenchmarkRenderAndDiff50 is the steady-state cost of a reconcile of 50
// Gateways of the reference (one HTTP listener each): render the
// reference's kube-gateway template and compare each object with the
// cluster's (as the fake API server's server-side apply stored it, managed
// fields included). Every object is up to date: nothing would be written.
func BenchmarkRenderAndDiff50(b *testing.B) {
	src, env := referenceSource(b, refdata.Dir(b, "gateways"))
	client := fake.NewClientset()
	ctx := context.Background()
	sources := make([]Source, 50)
	live := map[string]runtime.Object{}
	for i := range sources {
		s := src
		gw := src.Gateway.DeepCopy()
		gw.Name = fmt.Sprintf("edge-%d", i)
		gw.UID = "uid-" + gw.UID
		s.Gateway = gw
		sources[i] = s
		objs, err := Render(s, env, TemplateName, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range objs {
			body, err := applyBody(o, "")
			if err != nil {
				b.Fatal(err)
			}
			got, err := o.kind.apply(ctx, client, o.Namespace, o.Name, body)
			if err != nil {
				b.Fatal(err)
			}
			live[o.Key()] = got
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, s := range sources {
			objs, err := Render(s, env, TemplateName, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, o := range objs {
				if d := Difference(o, live[o.Key()]); d != "" {
					b.Fatalf("%s: %s", o.Key(), d)
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/50, "µs/gateway")
}
