package authn_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/meshplane/istiod/tests/golden"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/tests/refdata"
)

// refPolicy is the policy reference: what Istio 1.31 sent productpage and
// ratings for input/policy.yaml.
type refPolicy struct {
	dir  string
	push *model.PushContext
}

func loadRefPolicy(t *testing.T) refPolicy {
	t.Helper()
	dir := refdata.Dir(t, "policy")
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	m := meshOf(t, string(read("input/mesh.yaml")))
	return refPolicy{dir: dir, push: pushOf(t, m, parseConfigs(t, read("input/policy.yaml")))}
}

// virtualInbound returns the reference chains of virtualInbound, without
// the blackhole (which carries no policy).
func (r refPolicy) virtualInbound(t *testing.T, pod string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "real", "sidecar-"+pod, "listeners.json"))
	if err != nil {
		t.Fatal(err)
	}
	var listeners []map[string]any
	if err := json.Unmarshal(b, &listeners); err != nil {
		t.Fatal(err)
	}
	for _, l := range listeners {
		if l["name"] != "virtualInbound" {
			continue
		}
		var out []map[string]any
		for _, fc := range l["filterChains"].([]any) {
			fc := fc.(map[string]any)
			if fc["name"] != "virtualInbound-blackhole" {
				out = append(out, fc)
			}
		}
		return out
	}
	t.Fatalf("%s: no virtualInbound", pod)
	return nil
}

var (
	productpageLabels = map[string]string{"app": "productpage", "version": "v1", "security.istio.io/tlsMode": "istio",
		"service.istio.io/canonical-name": "productpage", "service.istio.io/canonical-revision": "v1"}
	ratingsLabels = map[string]string{"app": "ratings", "version": "v1", "security.istio.io/tlsMode": "istio",
		"service.istio.io/canonical-name": "ratings", "service.istio.io/canonical-revision": "v1"}
	reviewsLabels = map[string]string{"app": "reviews", "version": "v1", "security.istio.io/tlsMode": "istio"}
)

// wantChain is a chain as the listener builder would emit it from this
// package's data.
type wantChain struct {
	name   string
	port   uint32
	chain  authn.Chain
	socket any
}

// expectedChains lays out a proxy's virtualInbound chains from the policy:
// the passthrough ones, then each target port's, as Istio orders them.
func expectedChains(t *testing.T, pol authn.Policy, tls authn.InboundTLS, ports []uint32, protos map[uint32]protocol.Instance) []wantChain {
	var out []wantChain
	add := func(name string, port uint32, c authn.Chain) {
		w := wantChain{name: name, port: port, chain: c}
		if ts := tls.For(c); ts != nil {
			w.socket = jsonOf(t, ts)
		}
		out = append(out, w)
	}
	for _, pc := range pol.Passthrough(ports, authn.ChainOptions{}) {
		for _, c := range pc.Chains {
			name := "virtualInbound"
			if c.Protocol == authn.ListenerHTTP {
				name = "virtualInbound-catchall-http"
			}
			add(name, pc.Port, c)
		}
	}
	for _, p := range ports {
		for _, c := range pol.InboundChains(p, authn.ListenerProtocolOf(protos[p]), authn.ChainOptions{}) {
			add("0.0.0.0_"+strconv.Itoa(int(p)), p, c)
		}
	}
	return out
}

func (w wantChain) match() map[string]any {
	m := map[string]any{"transportProtocol": w.chain.TransportProtocol}
	if w.port != 0 {
		m["destinationPort"] = float64(w.port)
	}
	if len(w.chain.ApplicationProtocols) > 0 {
		var alpn []any
		for _, a := range w.chain.ApplicationProtocols {
			alpn = append(alpn, a)
		}
		m["applicationProtocols"] = alpn
	}
	return m
}

// compareChains checks name, match and transport socket of every chain,
// path by path.
func compareChains(t *testing.T, pod string, got []wantChain, ref []map[string]any) {
	t.Helper()
	if len(got) != len(ref) {
		names := []string{}
		for _, r := range ref {
			names = append(names, r["name"].(string))
		}
		t.Fatalf("%s: %d chains, reference has %d: %v", pod, len(got), len(ref), names)
	}
	for i, w := range got {
		r := ref[i]
		if r["name"] != w.name {
			t.Errorf("%s chain %d: name %s, reference %v", pod, i, w.name, r["name"])
		}
		if d := golden.Diff("", w.match(), r["filterChainMatch"]); len(d) > 0 {
			t.Errorf("%s chain %d (%s) filterChainMatch:\n%s", pod, i, w.name, joinLines(d))
		}
		if d := golden.Diff("", w.socket, r["transportSocket"]); len(d) > 0 {
			t.Errorf("%s chain %d (%s) transportSocket:\n%s", pod, i, w.name, joinLines(d))
		}
	}
}

func TestReferenceModes(t *testing.T) {
	r := loadRefPolicy(t)
	root := r.push.RootNamespace()
	opts := authn.MTLSOptions{RootNamespace: root}
	pp := authn.ProxyMTLS(r.push.PeerAuthentications(sidecar("bookinfo", productpageLabels)), opts)
	if pp.Workload != authn.ModePermissive || len(pp.Ports) != 0 {
		t.Errorf("productpage: %+v, want workload PERMISSIVE", pp)
	}
	ratings := authn.ProxyMTLS(r.push.PeerAuthentications(sidecar("bookinfo", ratingsLabels)), opts)
	if ratings.Workload != authn.ModeStrict || ratings.Mode(9090) != authn.ModeStrict || ratings.Mode(9102) != authn.ModePermissive {
		t.Errorf("ratings: %+v, want STRICT with 9102 PERMISSIVE", ratings)
	}
	reviews := authn.ProxyMTLS(r.push.PeerAuthentications(sidecar("bookinfo", reviewsLabels)), opts)
	if reviews.Workload != authn.ModeDisable {
		t.Errorf("reviews: %+v, want DISABLE", reviews)
	}
	// Clients: reviews' workload DISABLE is not seen; its namespace is STRICT,
	// so the reference clusters carry tlsMode-istio/tlsMode-disabled.
	for ns, want := range map[string]authn.Mode{"bookinfo": authn.ModeStrict, "default": authn.ModePermissive, root: authn.ModePermissive} {
		if got := authn.DestinationMode(r.push, root, ns); got != want {
			t.Errorf("DestinationMode(%s) = %v, want %v", ns, got, want)
		}
	}
}

func TestReferenceChains(t *testing.T) {
	r := loadRefPolicy(t)
	root := r.push.RootNamespace()
	tls := authn.NewInboundTLS(authn.TLSOptionsFromMesh(r.push.Mesh))
	cases := []struct {
		pod    string
		labels map[string]string
		ports  []uint32
		protos map[uint32]protocol.Instance
	}{
		{"productpage", productpageLabels, []uint32{9080}, map[uint32]protocol.Instance{9080: protocol.HTTP}},
		{"ratings", ratingsLabels, []uint32{9090, 9102}, map[uint32]protocol.Instance{9090: protocol.GRPC, 9102: protocol.TCP}},
	}
	for _, c := range cases {
		t.Run(c.pod, func(t *testing.T) {
			pol := authn.ProxyMTLS(r.push.PeerAuthentications(sidecar("bookinfo", c.labels)), authn.MTLSOptions{RootNamespace: root})
			compareChains(t, c.pod, expectedChains(t, pol, tls, c.ports, c.protos), r.virtualInbound(t, c.pod))
		})
	}
}

// refJwtFilters returns the jwt_authn filters of every HTTP chain.
func refJwtFilters(chains []map[string]any) map[string]any {
	out := map[string]any{}
	for i, fc := range chains {
		for _, f := range fc["filters"].([]any) {
			f := f.(map[string]any)
			if f["name"] != "envoy.filters.network.http_connection_manager" {
				continue
			}
			for _, h := range f["typedConfig"].(map[string]any)["httpFilters"].([]any) {
				if h.(map[string]any)["name"] == authn.JwtFilterName {
					out[fc["name"].(string)+"#"+strconv.Itoa(i)] = h
				}
			}
		}
	}
	return out
}

func TestReferenceJwtFilter(t *testing.T) {
	r := loadRefPolicy(t)
	pp := sidecar("bookinfo", productpageLabels)
	f := authn.JwtFilter(r.push.RequestAuthentications(pp), authn.JWTOptions{})
	if f == nil {
		t.Fatal("productpage: no jwt_authn filter")
	}
	got := jsonOf(t, f)
	ref := refJwtFilters(r.virtualInbound(t, "productpage"))
	if len(ref) != 4 { // 0.0.0.0_9080 ×2, catch-all HTTP ×2
		t.Fatalf("reference has %d jwt_authn filters, want 4", len(ref))
	}
	for chain, want := range ref {
		if d := golden.Diff("", got, want); len(d) > 0 {
			t.Errorf("%s:\n%s", chain, joinLines(d))
		}
	}

	ratings := sidecar("bookinfo", ratingsLabels)
	if f := authn.JwtFilter(r.push.RequestAuthentications(ratings), authn.JWTOptions{}); f != nil {
		t.Errorf("ratings: jwt_authn filter %v, want none", f)
	}
	if ref := refJwtFilters(r.virtualInbound(t, "ratings")); len(ref) != 0 {
		t.Errorf("ratings reference has jwt_authn filters: %v", ref)
	}
}
