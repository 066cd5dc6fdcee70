package generators_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// BenchmarkRoutesAfterVirtualServiceChange is the route work of a change
// round of the load test: 500 services over 10 namespaces, one sidecar per
// namespace (10 route scopes), one VirtualService edited, then every
// sidecar's route configuration of the port generated again. "assembled"
// splices cached virtual hosts, "whole" builds each configuration whole
// (the path before). The sidecar scopes of the new snapshot, which every
// generator shares, are computed outside the timer.
func BenchmarkRoutesAfterVirtualServiceChange(b *testing.B) {
	for _, mode := range []string{"assembled", "whole"} {
		b.Run(mode, func(b *testing.B) {
			env, idx := benchEnv(b, 500)
			g := &generators.SidecarGenerators{Endpoints: idx, Discovery: env.ServiceDiscovery()}
			if mode == "whole" {
				generators.FullRoutes(g)
			}
			var proxies []*model.Proxy
			for i := range 10 {
				md, err := structpb.NewStruct(map[string]any{"NAMESPACE": fmt.Sprintf("ns-%d", i), "LABELS": map[string]any{"app": fmt.Sprintf("svc-%d", i)}})
				if err != nil {
					b.Fatal(err)
				}
				p, err := model.ParseServiceNodeWithMetadata(fmt.Sprintf("sidecar~10.1.9.%d~app-%d.ns-%d~ns-%d.svc.cluster.local", i, i, i, i), md)
				if err != nil {
					b.Fatal(err)
				}
				proxies = append(proxies, p)
			}
			generate := func(push *model.PushContext) int {
				size := 0
				for _, p := range proxies {
					out, err := generators.Routes(g, p, push, fmt.Sprint(benchPort))
					if err != nil || len(out.Resources) != 1 {
						b.Fatalf("%s: %v, %d resources", p.ID, err, len(out.Resources))
					}
					size += len(out.Resources[0].Resource.Value)
				}
				return size
			}
			store := env.ConfigStore()
			push := model.InitContext(env, nil, nil)
			generate(push)
			builds := generators.VirtualHostBuilds(g)
			size, i := 0, 0
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				name, ns := fmt.Sprintf("svc-%d", i%500), fmt.Sprintf("ns-%d", i%500%10)
				c := store.Get(gvk.VirtualService, name, ns).DeepCopy()
				c.Spec.(*networking.VirtualService).Http[0].Timeout = durationpb.New(time.Duration(1+i%7) * time.Second)
				if _, err := store.Update(c); err != nil {
					b.Fatal(err)
				}
				push = model.InitContext(env, push, &model.PushRequest{Full: true,
					ConfigsUpdated: model.NewConfigKeys(model.ConfigKey{Kind: kind.VirtualService, Name: name, Namespace: ns})})
				i++
				// the proxies' sidecar scopes are computed once per snapshot
				// for every generator: not route work
				for _, p := range proxies {
					push.SidecarScope(p)
				}
				b.StartTimer()
				size = generate(push)
			}
			b.ReportMetric(float64(size)/10, "bytes/config")
			b.ReportMetric(float64(generators.VirtualHostBuilds(g)-builds)/float64(i), "vhost-builds/op")
		})
	}
}
