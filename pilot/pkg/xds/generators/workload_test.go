package generators_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/workloadapi"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
)

const ztunnelNode = "ztunnel~10.244.5.3~ztunnel-7h8j9.istio-system~istio-system.svc.cluster.local"

type staticWorkloads struct {
	addrs krt.StaticCollection[ambient.Address]
	authz krt.StaticCollection[ambient.Authorization]
}

func (s staticWorkloads) Addresses() krt.Collection[ambient.Address] { return s.addrs }
func (s staticWorkloads) Authorizations() krt.Collection[ambient.Authorization] {
	return s.authz
}

func workloadAddress(name, ip string) ambient.Address {
	return ambient.Address{Name: name, Proto: &workloadapi.Address{Type: &workloadapi.Address_Workload{Workload: &workloadapi.Workload{
		Uid: name, Name: name, Addresses: [][]byte{[]byte(ip)}, ClusterId: "Kubernetes"}}}}
}

func ztunnelServer(t *testing.T, ambientOn bool) (*xdstest.Server, staticWorkloads, *model.Environment) {
	t.Helper()
	env, _ := bookinfoEnv(t)
	src := staticWorkloads{
		addrs: krt.NewStaticCollection([]ambient.Address{workloadAddress("Kubernetes//Pod/travel/a", "\x0a\xf4\x05\x01"),
			workloadAddress("Kubernetes//Pod/travel/b", "\x0a\xf4\x05\x02")}),
		authz: krt.NewStaticCollection([]ambient.Authorization{{Name: "istio-system/istio_converted_static_strict",
			Proto: &security.Authorization{Name: "istio_converted_static_strict", Namespace: "istio-system", Scope: security.Scope_GLOBAL}}}),
	}
	s := xdstest.NewServer(t)
	s.DS.SetAmbient(ambientOn)
	(&generators.WorkloadGenerators{Source: src}).Register(s.DS)
	s.DS.InitPushContext(env)
	return s, src, env
}

// Without PILOT_ENABLE_AMBIENT a ztunnel is refused, with Istio's words.
func TestZtunnelRefusedWithoutAmbient(t *testing.T) {
	s, _, _ := ztunnelServer(t, false)
	c, err := adsc.Dial(context.Background(), s.Addr, adsc.Config{Delta: true, NodeID: ztunnelNode})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Watch(xds.AddressType); err != nil {
		t.Fatal(err)
	}
	_, err = c.Next(xdstest.Timeout)
	if err == nil || !strings.Contains(err.Error(), "ztunnel requires PILOT_ENABLE_AMBIENT=true") {
		t.Fatalf("a ztunnel without ambient: %v", err)
	}
}

// ztunnel subscribes wildcard to both types and gets every resource; a
// changed address is sent alone, a deleted one removed; a ztunnel that
// reconnects declaring what it holds is sent only what changed, and told
// what no longer exists.
func TestWorkloadAPIDelta(t *testing.T) {
	s, src, env := ztunnelServer(t, true)
	c := xdstest.Dial(t, s, adsc.Config{Delta: true, NodeID: ztunnelNode})
	rs := xdstest.WatchInTurn(t, c, xdstest.Watch{Type: xds.AddressType}, xdstest.Watch{Type: xds.AuthorizationType})
	if len(rs[0].Resources) != 2 || len(rs[1].Resources) != 1 {
		t.Fatalf("first responses: %d addresses, %d authorizations", len(rs[0].Resources), len(rs[1].Resources))
	}
	got, ok := rs[1].Resources["istio-system/istio_converted_static_strict"].(*security.Authorization)
	if !ok || got.GetScope() != security.Scope_GLOBAL {
		t.Fatalf("authorization %v", rs[1].Resources)
	}
	held := c.Versions(xds.AddressType)

	src.addrs.Set(workloadAddress("Kubernetes//Pod/travel/b", "\x0a\xf4\x05\x09"))
	src.addrs.Delete("Kubernetes//Pod/travel/a")
	src.addrs.Set(workloadAddress("Kubernetes//Pod/travel/c", "\x0a\xf4\x05\x03"))
	push := func() {
		s.DS.PushFunc(env)(&model.PushRequest{Full: true,
			ConfigsUpdated: map[model.ConfigKey]struct{}{{Kind: kind.Address, Name: "Kubernetes//Pod/travel/b"}: {}}})
	}
	push()
	r := xdstest.Next(t, c)
	if r.TypeURL != xds.AddressType || len(r.Resources) != 2 || r.Resources["Kubernetes//Pod/travel/b"] == nil ||
		r.Resources["Kubernetes//Pod/travel/c"] == nil || strings.Join(r.Removed, ",") != "Kubernetes//Pod/travel/a" {
		t.Fatalf("after the change: %s resources %v removed %v", r.TypeURL, keys(r.Resources), r.Removed)
	}
	xdstest.NoResponse(t, c) // the authorizations did not change

	// a reconnect declaring the versions held before the change
	c2 := xdstest.Dial(t, s, adsc.Config{Delta: true, NodeID: ztunnelNode})
	if err := c2.WatchWithInitialVersions(xds.AddressType, held); err != nil {
		t.Fatal(err)
	}
	r = xdstest.Next(t, c2)
	if len(r.Resources) != 2 || strings.Join(r.Removed, ",") != "Kubernetes//Pod/travel/a" {
		t.Fatalf("reconnect: resources %v removed %v", keys(r.Resources), r.Removed)
	}
	// and one declaring the current versions is sent nothing
	c3 := xdstest.Dial(t, s, adsc.Config{Delta: true, NodeID: ztunnelNode})
	if err := c3.WatchWithInitialVersions(xds.AddressType, c.Versions(xds.AddressType)); err != nil {
		t.Fatal(err)
	}
	if r, err := c3.Next(xdstest.Timeout); err == nil && (len(r.Resources) != 0 || len(r.Removed) != 0) {
		t.Fatalf("reconnect with current versions: resources %v removed %v", keys(r.Resources), r.Removed)
	}

	// a push about other config does not concern ztunnel
	s.DS.PushFunc(env)(&model.PushRequest{Full: true,
		ConfigsUpdated: map[model.ConfigKey]struct{}{{Kind: kind.VirtualService, Name: "x", Namespace: "travel"}: {}}})
	xdstest.NoResponse(t, c)
}

// A ztunnel that asks for names gets those only.
func TestWorkloadAPIByName(t *testing.T) {
	s, _, _ := ztunnelServer(t, true)
	c := xdstest.Dial(t, s, adsc.Config{Delta: true, NodeID: ztunnelNode})
	if err := c.Watch(xds.AddressType, "Kubernetes//Pod/travel/b", "Kubernetes//Pod/travel/none"); err != nil {
		t.Fatal(err)
	}
	r := xdstest.Next(t, c)
	w, ok := r.Resources["Kubernetes//Pod/travel/b"].(*workloadapi.Address)
	if len(r.Resources) != 1 || !ok || !proto.Equal(w, workloadAddress("Kubernetes//Pod/travel/b", "\x0a\xf4\x05\x02").Proto) {
		t.Fatalf("by name: %v", r.Resources)
	}
	if strings.Join(r.Removed, ",") != "Kubernetes//Pod/travel/none" {
		t.Errorf("a name that does not exist is not reported removed: %v", r.Removed)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The cost of the workload API on the server: one wildcard generation of
// 10,000 workloads (what a ztunnel's first push and every later push
// regenerates; the encodings are cached, so a later one only lists), and
// the first with cold encodings.
func BenchmarkWorkloadAPIGenerate10kWorkloads(b *testing.B) {
	addrs := make([]ambient.Address, 0, 10000)
	for i := range 10000 {
		addrs = append(addrs, workloadAddress(fmt.Sprintf("Kubernetes//Pod/ns-%d/pod-%d", i%100, i), string([]byte{10, 244, byte(i >> 8), byte(i)})))
	}
	src := staticWorkloads{addrs: krt.NewStaticCollection(addrs), authz: krt.NewStaticCollection[ambient.Authorization](nil)}
	w := &xds.WatchedResource{TypeURL: xds.AddressType, Wildcard: true}
	for _, cold := range []bool{true, false} {
		b.Run(map[bool]string{true: "cold", false: "cached"}[cold], func(b *testing.B) {
			g := &generators.WorkloadGenerators{Source: src}
			s := xdstest.NewServer(b)
			g.Register(s.DS)
			gen := generators.WorkloadAddressGenerator(g)
			if !cold {
				if _, err := gen(nil, w, &model.PushRequest{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if cold {
					b.StopTimer()
					g = &generators.WorkloadGenerators{Source: src}
					gen = generators.WorkloadAddressGenerator(g)
					b.StartTimer()
				}
				out, err := gen(nil, w, &model.PushRequest{})
				if err != nil || len(out.Resources) != 10000 {
					b.Fatalf("%d resources, %v", len(out.Resources), err)
				}
			}
		})
	}
}
