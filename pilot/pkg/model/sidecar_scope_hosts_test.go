package model_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// hostMesh registers n services over 10 namespaces (some ServiceEntry
// hosts, some wildcards, some private), returns the environment.
func hostMesh(t testing.TB, n int) *pcEnv {
	e := newPCEnv(t)
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("ns-%d", i%10)
		host := svcHost(fmt.Sprintf("svc-%d", i), ns)
		switch i % 7 {
		case 3:
			host = fmt.Sprintf("api-%d.example.com", i)
		case 5:
			host = fmt.Sprintf("*.w%d.example.com", i%3)
		}
		e.addService(host, ns, i, func(s *model.Service) {
			if i%11 == 0 {
				s.Attributes.ExportTo = model.NewExportTo(".")
			}
			if i%13 == 0 {
				s.Attributes.ServiceRegistry = model.External
			}
		})
	}
	return e
}

func sidecarWithHosts(ns string, hosts ...string) *config.Config {
	return &config.Config{Meta: config.Meta{GroupVersionKind: gvk.Sidecar, Namespace: ns, Name: "s"},
		Spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: hosts}}}}
}

// bruteForce is the scope's services by definition: every service visible
// from ns whose hostname an imported host of its namespace (or of "*")
// covers, one per hostname (the proxy's namespace first, else a Kubernetes
// Service, else the first).
func bruteForce(push *model.PushContext, ns string, hosts []string) []string {
	type imp struct{ ns, host string }
	var imps []imp
	for _, h := range hosts {
		n, name, _ := strings.Cut(h, "/")
		if n == "." {
			n = ns
		}
		imps = append(imps, imp{n, name})
	}
	chosen := map[string]*model.Service{}
	for _, s := range push.ServicesExportedToNamespace(ns) {
		ok := false
		for _, i := range imps {
			if (i.ns == "*" || i.ns == s.Attributes.Namespace) && model.HostSubsetOf(s.Hostname, i.host) {
				ok = true
			}
		}
		if !ok {
			continue
		}
		prev := chosen[s.Hostname]
		switch {
		case prev == nil, s.Attributes.Namespace == ns && prev.Attributes.Namespace != ns:
			chosen[s.Hostname] = s
		case prev.Attributes.Namespace != ns && prev.Attributes.ServiceRegistry != model.Kubernetes && s.Attributes.ServiceRegistry == model.Kubernetes:
			chosen[s.Hostname] = s
		}
	}
	var out []string
	for h, s := range chosen {
		out = append(out, h+"@"+s.Attributes.Namespace)
	}
	sort.Strings(out)
	return out
}

func scopeServices(sc *model.SidecarScope) []string {
	var out []string
	for _, s := range sc.Services() {
		out = append(out, s.Hostname+"@"+s.Attributes.Namespace)
	}
	sort.Strings(out)
	return out
}

// The indexed lookup of egress hosts (exact names directly, wildcards by a
// suffix range) gives exactly the services a scan of every service does.
func TestEgressHostIndexEqualsScan(t *testing.T) {
	e := hostMesh(t, 700)
	push := e.push()
	r := rand.New(rand.NewSource(1))
	pool := []string{"*/svc-1.ns-1.svc.cluster.local", "./svc-2.ns-2.svc.cluster.local", "ns-3/svc-3.ns-3.svc.cluster.local",
		"*/api-3.example.com", "*/*.example.com", "ns-5/*.w2.example.com", "*/*.w1.example.com", "ns-0/*.ns-0.svc.cluster.local",
		"*/nothing.example.com", "./*.svc.cluster.local", "*/svc-10.ns-0.svc.cluster.local", "ns-4/api-17.example.com"}
	for i := 0; i < 200; i++ {
		ns := fmt.Sprintf("ns-%d", r.Intn(10))
		var hosts []string
		for j := 0; j < 1+r.Intn(4); j++ {
			hosts = append(hosts, pool[r.Intn(len(pool))])
		}
		got := scopeServices(push.ComputeSidecarScope(sidecarWithHosts(ns, hosts...), ns))
		want := bruteForce(push, ns, hosts)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ns %s hosts %v:\n got %v\nwant %v", ns, hosts, got, want)
		}
	}
}

// BenchmarkSidecarScopeExactHosts computes the scope of a Sidecar naming
// five exact hosts: its cost should not grow with the mesh.
func BenchmarkSidecarScopeExactHosts(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			push := hostMesh(b, n).push()
			sc := sidecarWithHosts("ns-1", "./svc-1.ns-1.svc.cluster.local", "*/svc-2.ns-2.svc.cluster.local",
				"*/svc-4.ns-4.svc.cluster.local", "*/api-3.example.com", "ns-6/svc-6.ns-6.svc.cluster.local")
			if got := len(push.ComputeSidecarScope(sc, "ns-1").Services()); got != 5 {
				b.Fatalf("%d services, want 5", got)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				push.ComputeSidecarScope(sc, "ns-1")
			}
		})
	}
}
