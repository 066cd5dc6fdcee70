package differential

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/golden"
)

// Held is a mesh applied to both worlds with one proxy connected to both
// control planes and kept connected (it ACKs every response), so that
// what each says about its connections can be read over HTTP. See
// Fixture.Hold.
type Held struct {
	// Proxy is the connected proxy, its defaults resolved.
	Proxy   Proxy
	planes  [2]*plane
	clients [2]*heldStream
}

// Hold applies objects (and a sentinel) to both worlds, connects the
// proxy to both control planes until each has sent it the sentinel's
// cluster, and calls fn with the proxy still connected. The control
// planes run with the fixture's default mesh config and environment. The
// connections are closed and the objects removed when fn returns. Like
// Run, it holds the fixture for its duration.
func (f *Fixture) Hold(t *testing.T, name, objects string, p Proxy, fn func(h *Held)) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	objs, err := parseObjects(objects)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := p.resolve(objs)
	if err != nil {
		t.Fatal(err)
	}
	host := sentinelHost(name)
	sentinel, err := parseObjects(sentinelObject(host, proxy.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	// the control planes as the fixture starts them (a case before may
	// have restarted them with a mesh config or environment of its own)
	ctx, done := f.prepare(t, planeConfig{}, objs, sentinel, true)
	defer done()
	h := &Held{Proxy: proxy, planes: [2]*plane{f.plane(Ours), f.plane(Istio)}}
	var wg sync.WaitGroup
	var errs [2]error
	for i, pl := range h.planes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.clients[i], errs[i] = hold(ctx, pl, proxy.config(), host)
		}()
	}
	wg.Wait()
	var drains sync.WaitGroup
	// the streams close before their readers are waited for, also when
	// the test ends with t.Fatal
	defer func() {
		for _, c := range h.clients {
			if c != nil {
				_ = c.Close()
			}
		}
		drains.Wait()
	}()
	for _, c := range h.clients {
		if c == nil {
			continue
		}
		// keep acknowledging pushes, and following them as Envoy does,
		// until the stream is closed
		drains.Add(1)
		go func() {
			defer drains.Done()
			follow(c)
		}()
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", h.planes[i].flavor, err)
		}
	}
	fn(h)
}

// hold connects cfg to p and asks as Envoy does (CDS, EDS, LDS, RDS), on
// fresh streams until the clusters hold the sentinel's, and returns the
// stream, open.
func hold(ctx context.Context, p *plane, cfg adsc.Config, host string) (*heldStream, error) {
	sentinel := fmt.Sprintf("outbound|%d||%s", sentinelPort, host)
	deadline := time.Now().Add(caseTimeout)
	for {
		if err := p.alive(); err != nil {
			return nil, err
		}
		c, err := holdOnce(ctx, p.grpc, cfg)
		if err == nil && slices.Contains(c.State(heldCDS), sentinel) {
			return c, nil
		}
		if c != nil {
			_ = c.Close()
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("the sentinel %s never arrived", sentinel)
			}
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// The types a held proxy watches, in the order Envoy asks.
const (
	heldCDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	heldEDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	heldLDS = "type.googleapis.com/envoy.config.listener.v3.Listener"
	heldRDS = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

// holdWait bounds the wait for one response.
const holdWait = 15 * time.Second

// holdOnce opens a stream and asks as Envoy does: every cluster, the
// endpoints of the EDS clusters, every listener, the route configurations
// the listeners' connection managers name.
func holdOnce(ctx context.Context, addr string, cfg adsc.Config) (*heldStream, error) {
	att, err := adsc.DialUntilAccepted(ctx, addr, cfg, adsc.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}, holdWait,
		func(c *adsc.Client) error { return c.Watch(heldCDS) })
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %v", addr, err)
	}
	c := att.Client
	h := &heldStream{Client: c, names: map[string][]string{}}
	err = func() error {
		if att.First.TypeURL != heldCDS {
			if err := awaitHeld(c, heldCDS); err != nil {
				return err
			}
		}
		for _, next := range []struct {
			typ   string
			names func(*adsc.Client) []string
		}{{heldEDS, heldEDSNames}, {heldLDS, nil}, {heldRDS, heldRDSNames}} {
			var names []string
			if next.names != nil {
				if names = next.names(c); len(names) == 0 {
					continue
				}
			}
			if err := c.Watch(next.typ, names...); err != nil {
				return err
			}
			h.names[next.typ] = names
			if err := awaitHeld(c, next.typ); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return h, nil
}

// heldStream is a held proxy's stream and the names it subscribed to, by
// type.
type heldStream struct {
	*adsc.Client
	names map[string][]string
}

func awaitHeld(c *adsc.Client, typ string) error {
	for {
		r, err := c.Next(holdWait)
		if err != nil {
			return fmt.Errorf("waiting for %s: %v", typ, err)
		}
		if r.TypeURL == typ {
			return nil
		}
	}
}

// heldEDSNames and heldRDSNames are what Envoy asks EDS and RDS for
// (adsc.Client's).
func heldEDSNames(c *adsc.Client) []string { return c.EDSServiceNames() }

func heldRDSNames(c *adsc.Client) []string { return c.RouteConfigNames() }

// follow reads the responses of a held stream (Next ACKs them) and, as
// Envoy does, asks for the endpoints of the EDS clusters again when the
// clusters change and for the route configurations the listeners name
// when the listeners change, until the stream ends.
func follow(h *heldStream) {
	c := h.Client
	eds, rds := h.names[heldEDS], h.names[heldRDS]
	// what arrived while the stream was being set up
	if names := heldEDSNames(c); !slices.Equal(names, eds) {
		eds = names
		_ = c.Watch(heldEDS, names...)
	}
	if names := heldRDSNames(c); !slices.Equal(names, rds) {
		rds = names
		_ = c.Watch(heldRDS, names...)
	}
	for {
		r, err := c.Next(time.Hour)
		if err != nil {
			return
		}
		switch r.TypeURL {
		case heldCDS:
			if names := heldEDSNames(c); !slices.Equal(names, eds) {
				eds = names
				_ = c.Watch(heldEDS, names...)
			}
		case heldLDS:
			if names := heldRDSNames(c); !slices.Equal(names, rds) {
				rds = names
				_ = c.Watch(heldRDS, names...)
			}
		}
	}
}

// DebugResponse is one answer of a debug endpoint.
type DebugResponse struct {
	Code int
	Body []byte
	// JSON is the decoded body (nil when it is not JSON).
	JSON any
	// IsJSON tells whether the body decoded as JSON (an empty body does
	// not).
	IsJSON bool
}

// Get fetches path (e.g. "/debug/syncz") from the HTTP port of one
// control plane, from loopback.
func (h *Held) Get(fl Flavor, path string) (DebugResponse, error) {
	p := h.planes[0]
	if fl == Istio {
		p = h.planes[1]
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + p.http + path)
	if err != nil {
		return DebugResponse{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return DebugResponse{}, err
	}
	out := DebugResponse{Code: resp.StatusCode, Body: b}
	if len(strings.TrimSpace(string(b))) > 0 && json.Unmarshal(b, &out.JSON) == nil {
		out.IsJSON = true
	}
	return out, nil
}

// Shape is the skeleton of a decoded JSON value: "string", "number",
// "bool" or "null" for a scalar, an object's keys each with the shape of
// its value, a list as a one-element list of the merged shapes of its
// elements ("[]" for an empty list: it says nothing of its elements).
func Shape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Shape(e)
		}
		return out
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		var merged any
		for _, e := range x {
			merged = mergeShapes(merged, Shape(e))
		}
		return []any{merged}
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// mergeShapes joins the shapes of two elements of one list: objects key
// by key (a key one lacks takes the other's shape), lists element-wise, a
// null or an empty list gives way to the other, and different scalars
// become "a|b".
func mergeShapes(a, b any) any {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a == "null" || a == "[]":
		if b != nil && b != "null" {
			return b
		}
		return a
	case b == "null" || b == "[]":
		return a
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		out := make(map[string]any, len(am))
		for _, k := range golden.UnionKeys(am, bm) {
			out[k] = mergeShapes(am[k], bm[k])
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok {
		return []any{mergeShapes(al[0], bl[0])}
	}
	as, bs := fmt.Sprint(a), fmt.Sprint(b)
	if as == bs {
		return a
	}
	parts := strings.Split(as+"|"+bs, "|")
	sort.Strings(parts)
	return strings.Join(slices.Compact(parts), "|")
}

// ShapeDifferences lists where the shapes of two answers of one endpoint
// differ, as Differences of Type endpoint: a key one has and the other
// lacks, a different scalar type, an object against a list. A null or an
// empty list on one side matches anything on the other (a list without
// elements, or an absent pointer, says nothing of the type).
func ShapeDifferences(endpoint string, ours, istio any) []Difference {
	var out []Difference
	walkShapes(endpoint, "", Shape(ours), Shape(istio), &out)
	return out
}

func walkShapes(endpoint, path string, o, i any, out *[]Difference) {
	if o == "null" || i == "null" || o == "[]" || i == "[]" {
		return
	}
	om, ook := o.(map[string]any)
	im, iok := i.(map[string]any)
	if ook && iok {
		for _, k := range golden.UnionKeys(om, im) {
			ov, oin := om[k]
			iv, iin := im[k]
			p := joinPath(path, k)
			if !oin || !iin {
				*out = append(*out, Difference{Type: endpoint, Path: p, Ours: orAbsent(ov, oin), Istio: orAbsent(iv, iin)})
				continue
			}
			walkShapes(endpoint, p, ov, iv, out)
		}
		return
	}
	ol, ook := o.([]any)
	il, iok := i.([]any)
	if ook && iok {
		walkShapes(endpoint, path+"[]", ol[0], il[0], out)
		return
	}
	if fmt.Sprint(o) != fmt.Sprint(i) {
		*out = append(*out, Difference{Type: endpoint, Path: path, Ours: o, Istio: i})
	}
}

func orAbsent(v any, present bool) any {
	if !present {
		return nil
	}
	return v
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Covers tells whether an allowed difference covers d (see Allowed: Type
// names the endpoint here).
func (a Allowed) Covers(d Difference) bool { return a.covers(d) }
