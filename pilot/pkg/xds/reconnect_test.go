package xds_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
)

// Sidecars that reconnect at once over the new-stream limit are refused
// with ResourceExhausted, back off and try again until each is served; a
// reconnect that declares the versions it holds gets none of them again.
func TestReconnectOverRateLimit(t *testing.T) {
	s := newServer(t, true)
	s.DS.SetRequestLimit(2) // 2 streams/s: at most ~3 of 6 within the first second's wait
	first := dial(t, s, adsc.Config{Delta: true})
	if err := first.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	next(t, first)
	held := first.Versions(xds.ClusterType)
	if len(held) != 2 {
		t.Fatalf("held %v, want 2 clusters", held)
	}

	const n = 6
	attempts := make([]adsc.Attempt, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := adsc.Config{Delta: true, NodeID: fmt.Sprintf("sidecar~10.0.1.%d~app-%d.default~default.svc.cluster.local", i+1, i)}
			attempts[i], errs[i] = adsc.DialUntilAccepted(context.Background(), s.Addr, cfg,
				adsc.Backoff{Initial: 50 * time.Millisecond, Max: 400 * time.Millisecond}, timeout,
				func(c *adsc.Client) error { return c.WatchWithInitialVersions(xds.ClusterType, held) })
		}()
	}
	wg.Wait()
	refused := 0
	for i, a := range attempts {
		if errs[i] != nil {
			t.Fatalf("sidecar %d: %v", i, errs[i])
		}
		t.Cleanup(func() { a.Client.Close() })
		refused += a.Refused
		if len(a.First.Resources) != 0 || len(a.First.Removed) != 0 {
			t.Errorf("sidecar %d holding every cluster got %v, removed %v; want an empty response", i, a.First.Resources, a.First.Removed)
		}
	}
	if refused == 0 {
		t.Errorf("%d streams at once under a limit of 2/s: none refused", n)
	}
}
