package statuswriter_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway/statuswriter"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// countingStore counts status writes.
type countingStore struct {
	*memory.Store
	writes atomic.Int32
}

func (c *countingStore) UpdateStatus(cfg config.Config) (string, error) {
	c.writes.Add(1)
	return c.Store.UpdateStatus(cfg)
}

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func setup(t *testing.T) (*countingStore, *gateway.Source, chan struct{}) {
	t.Helper()
	store := &countingStore{Store: memory.New(collections.GatewayAPI)}
	gw := config.Config{Meta: config.Meta{GroupVersionKind: gvk.KubernetesGateway, Name: "gw", Namespace: "apps", Generation: 1},
		Spec: &gatewayv1.GatewaySpec{GatewayClassName: "istio", Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: "HTTP"}}}}
	route := config.Config{Meta: config.Meta{GroupVersionKind: gvk.HTTPRoute, Name: "r", Namespace: "apps", Generation: 1},
		Spec: &gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}}}
	for _, c := range []config.Config{gw, route} {
		if _, err := store.Create(c); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	src := gateway.NewSource(gateway.Inputs{
		GatewayClasses: store.Collection(gvk.GatewayClass), Gateways: store.Collection(gvk.KubernetesGateway),
		HTTPRoutes: store.Collection(gvk.HTTPRoute),
	}, gateway.SourceOptions{Options: gateway.Options{DomainSuffix: "cluster.local"}, Stop: stop})
	return store, src, stop
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func conditions(c *config.Config) []metav1.Condition {
	switch st := c.Status.(type) {
	case *gatewayv1.GatewayStatus:
		return st.Conditions
	case *gatewayv1.HTTPRouteStatus:
		if len(st.Parents) > 0 {
			return st.Parents[0].Conditions
		}
	case *gatewayv1.GatewayClassStatus:
		return st.Conditions
	}
	return nil
}

// The writer creates the builtin classes, writes every status once with
// the lastTransitionTime of its clock, and rewrites nothing unchanged.
func TestWritesOnceAndCreatesClasses(t *testing.T) {
	store, src, _ := setup(t)
	w := statuswriter.New(statuswriter.Options{Store: store, Statuses: src.Statuses(), Classes: store.Collection(gvk.GatewayClass),
		Now: func() time.Time { return now }, CreateClasses: true})
	term := make(chan struct{})
	done := make(chan struct{})
	go func() { w.Run(term); close(done) }()
	defer func() { close(term); <-done }()

	eventually(t, "classes created and accepted", func() bool {
		for _, name := range []string{"istio", "istio-remote"} {
			c := store.Get(gvk.GatewayClass, name, "")
			if c == nil || len(conditions(c)) != 1 || conditions(c)[0].Reason != "Accepted" {
				return false
			}
		}
		return true
	})
	if d := store.Get(gvk.GatewayClass, "istio", "").Spec.(*gatewayv1.GatewayClassSpec).Description; d == nil || *d != "The default Istio GatewayClass" {
		t.Errorf("description %v", d)
	}
	eventually(t, "gateway and route status", func() bool {
		g, r := store.Get(gvk.KubernetesGateway, "gw", "apps"), store.Get(gvk.HTTPRoute, "r", "apps")
		return len(conditions(g)) == 3 && len(conditions(r)) == 2
	})
	for _, c := range conditions(store.Get(gvk.KubernetesGateway, "gw", "apps")) {
		if !c.LastTransitionTime.Time.Equal(now) {
			t.Errorf("condition %s stamped %v, want %v", c.Type, c.LastTransitionTime, now)
		}
	}
	// the statuses settle: the recomputed status equals the written one
	var settled int32
	eventually(t, "writes settle", func() bool {
		n := store.writes.Load()
		time.Sleep(100 * time.Millisecond)
		settled = n
		return store.writes.Load() == n
	})
	if settled != 4 {
		t.Errorf("%d status writes, want 4 (2 classes, the Gateway, the route)", settled)
	}

	// a deleted builtin class comes back
	if err := store.Delete(gvk.GatewayClass, "istio-remote", "", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "class recreated", func() bool { return store.Get(gvk.GatewayClass, "istio-remote", "") != nil })
}

// A new term writes nothing when every status is already right.
func TestNewTermRewritesNothing(t *testing.T) {
	store, src, _ := setup(t)
	run := func() {
		w := statuswriter.New(statuswriter.Options{Store: store, Statuses: src.Statuses(), Now: func() time.Time { return now }})
		term := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(term) }()
		eventually(t, "route status", func() bool { return len(conditions(store.Get(gvk.HTTPRoute, "r", "apps"))) == 2 })
		time.Sleep(200 * time.Millisecond)
		close(term)
		wg.Wait()
	}
	run()
	first := store.writes.Load()
	if first != 2 {
		t.Errorf("first term: %d writes, want 2", first)
	}
	run()
	if n := store.writes.Load(); n != first {
		t.Errorf("second term rewrote %d unchanged statuses", n-first)
	}
}
