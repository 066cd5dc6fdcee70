package differential

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
)

// Worlds is a mesh applied to both worlds, for a test that drives the
// control planes itself (a VM's stream, health reports, objects written
// while it runs) rather than comparing one proxy's snapshot: it reaches
// each world's API server, each control plane's plaintext xDS port and
// log, and fetches what a proxy would be sent, normalised as Run
// compares it. See Fixture.With.
type Worlds struct {
	planes [2]*plane
}

// With restarts both control planes with c's mesh config and environment
// (when they run otherwise), applies c's objects (and a sentinel) to both
// worlds, waits until c's proxy, fetched from each control plane, is sent
// the sentinel's cluster (both have read the objects), and calls fn. What
// the case made, and whatever is left in its namespaces, is removed when
// fn returns. Like Run, it holds the fixture for its duration; c's
// Allowed entries are the caller's to apply.
func (f *Fixture) With(t *testing.T, c Case, fn func(w *Worlds)) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	objs, err := parseObjects(c.Objects)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := c.Proxy.resolve(objs)
	if err != nil {
		t.Fatal(err)
	}
	host := sentinelHost(c.Name)
	sentinel, err := parseObjects(sentinelObject(host, proxy.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	ctx, done := f.prepare(t, planeConfig{mesh: c.Mesh, env: strings.Join(c.Env, "\n")}, objs, sentinel, !c.NoAutoEndpoints)
	defer done()
	w := &Worlds{planes: [2]*plane{f.plane(Ours), f.plane(Istio)}}
	var wg sync.WaitGroup
	var errs [2]error
	for i, p := range w.planes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = awaitSentinel(ctx, p, proxy, host)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", w.planes[i].flavor, err)
		}
	}
	fn(w)
}

// awaitSentinel fetches the proxy's snapshot from p until it holds the
// sentinel of host, or caseTimeout passes.
func awaitSentinel(ctx context.Context, p *plane, proxy Proxy, host string) error {
	deadline := time.Now().Add(caseTimeout)
	for {
		s, err := p.snapshot(ctx, proxy)
		if err == nil && hasSentinel(s, host) {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("the sentinel %s never arrived", host)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

func (w *Worlds) plane(fl Flavor) *plane {
	if fl == Istio {
		return w.planes[1]
	}
	return w.planes[0]
}

// Kube is the API server of fl's world (its clients are the harness's:
// what they write is the case's to clean up, and its namespaces are
// swept when the case ends).
func (w *Worlds) Kube(fl Flavor) *kube.Env { return w.plane(fl).kube }

// GRPC is the plaintext xDS address of fl's control plane.
func (w *Worlds) GRPC(fl Flavor) string { return w.plane(fl).grpc }

// HTTP is the HTTP (debug) address of fl's control plane.
func (w *Worlds) HTTP(fl Flavor) string { return w.plane(fl).http }

// Monitoring is the monitoring (/metrics) address of fl's control plane.
func (w *Worlds) Monitoring(fl Flavor) string { return w.plane(fl).monitoring }

// LogTail is the last n bytes of the output of fl's control plane.
func (w *Worlds) LogTail(fl Flavor, n int64) string { return w.plane(fl).logTail(n) }

// Alive reports the exit of fl's control plane as an error.
func (w *Worlds) Alive(fl Flavor) error { return w.plane(fl).alive() }

// Snapshot is what fl's control plane sends the proxy, over a fresh
// stream (see Run: cds, eds, lds, rds by name), rendered as JSON and
// normalised as Run compares it.
func (w *Worlds) Snapshot(ctx context.Context, fl Flavor, p Proxy) (map[string]map[string]any, error) {
	r, err := p.resolve(nil)
	if err != nil {
		return nil, err
	}
	return w.plane(fl).snapshot(ctx, r)
}

// ADSConfig is the ADS client configuration of the proxy (its defaults
// resolved; see Proxy): the node ID and metadata Istio's agent sends, for
// a test that opens its own stream.
func (p Proxy) ADSConfig() (adsc.Config, error) {
	r, err := p.resolve(nil)
	if err != nil {
		return adsc.Config{}, err
	}
	return r.config(), nil
}

// Compare lists every difference between two snapshots as Snapshot
// returns them (or parts of them), in type, name, path order.
func Compare(ours, istio map[string]map[string]any) []Difference {
	return compareSnapshots(ours, istio)
}
