package generators_test

import (
	"context"
	"fmt"
	"testing"

	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// addPolicies stores n AuthorizationPolicies over 100 namespaces (the
// first ten hold the bench mesh's services), each selecting one service's
// workloads with principals, paths, methods and a header condition, and
// one mesh-wide DENY.
func addPolicies(tb testing.TB, store *memory.Store, n int) {
	tb.Helper()
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("ns-%d", i%100)
		p := &security.AuthorizationPolicy{
			Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("svc-%d", i%1000)}},
			Rules: []*security.Rule{{
				From: []*security.Rule_From{{Source: &security.Source{Principals: []string{fmt.Sprintf("cluster.local/ns/%s/sa/client-%d", ns, i)}}}},
				To:   []*security.Rule_To{{Operation: &security.Operation{Methods: []string{"GET", "POST"}, Paths: []string{"/api/*", fmt.Sprintf("/v%d/{**}", i%3)}}}},
				When: []*security.Condition{{Key: "request.headers[x-tenant]", Values: []string{fmt.Sprint(i)}}},
			}},
		}
		if _, err := store.Create(config.Config{Meta: config.Meta{GroupVersionKind: gvk.AuthorizationPolicy, Name: fmt.Sprintf("p-%d", i), Namespace: ns}, Spec: p}); err != nil {
			tb.Fatal(err)
		}
	}
	deny := &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_DENY, Rules: []*security.Rule{{
		From: []*security.Rule_From{{Source: &security.Source{NotNamespaces: []string{"ns-0", "ns-1"}}}}}}}
	if _, err := store.Create(config.Config{Meta: config.Meta{GroupVersionKind: gvk.AuthorizationPolicy, Name: "deny-others", Namespace: "istio-system"}, Spec: deny}); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkAuthorizationPolicies1000 is the cost of 1,000
// AuthorizationPolicies over 100 namespaces in the 1,000-service bench
// mesh, against the same mesh without them: building a push context, and
// one sidecar's full config (its virtualInbound carries the RBAC filters of
// the policies that select it).
func BenchmarkAuthorizationPolicies1000(b *testing.B) {
	for _, n := range []int{0, 1000} {
		env, idx := benchEnv(b, 1000)
		if n > 0 {
			addPolicies(b, env.ConfigStore().(*memory.Store), n)
		}
		b.Run(fmt.Sprintf("policies=%d/pushcontext", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				model.InitContext(env, nil, nil)
			}
		})
		addr, ds := benchServer(b, env, idx)
		conn, md := benchDial(b, addr, benchMeta)
		b.Run(fmt.Sprintf("policies=%d/sidecar-cold", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				ds.InitPushContext(env)
				if _, err := fetchSidecarConfig(context.Background(), conn, md, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("policies=%d/sidecar-cached", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := fetchSidecarConfig(context.Background(), conn, md, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		conn.Close()
	}
}
