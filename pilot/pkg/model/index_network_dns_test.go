package model

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	meshconfig "istio.io/api/mesh/v1alpha1"
)

// fakeDNS answers lookups from a table a test changes.
type fakeDNS struct {
	mu      sync.Mutex
	answers map[string][]string
	errs    map[string]error
	asked   map[string]int
}

func (f *fakeDNS) lookup(_ context.Context, name string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[name]++
	if err := f.errs[name]; err != nil {
		return nil, err
	}
	return slices.Clone(f.answers[name]), nil
}

func (f *fakeDNS) set(name string, addrs []string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[name], f.errs[name] = addrs, err
}

func (f *fakeDNS) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[name]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A gateway given by hostname is resolved in the background: none until
// the first answer, which forces a push; then one gateway per address; an
// answer that changes forces a push again; a failed lookup keeps the last
// addresses; a name that does not exist has none; a name no longer asked
// for is no longer looked up.
func TestDNSGatewayResolver(t *testing.T) {
	dns := &fakeDNS{answers: map[string][]string{"gw.example.com": {"35.0.0.8", "2001:db8::1", "35.0.0.7"}},
		errs: map[string]error{}, asked: map[string]int{}}
	stop := make(chan struct{})
	defer close(stop)
	var mu sync.Mutex
	changes := 0
	r := NewDNSGatewayResolver(DNSGatewayResolverOptions{Lookup: dns.lookup, Refresh: 20 * time.Millisecond, Stop: stop,
		OnChange: func() { mu.Lock(); changes++; mu.Unlock() }})
	changed := func() int { mu.Lock(); defer mu.Unlock(); return changes }
	names := []string{"gw.example.com"}

	if got := r.Resolve(names); len(got) != 0 {
		t.Fatalf("answer before any lookup: %v", got)
	}
	waitFor(t, "first answer pushes", func() bool { return changed() == 1 })
	want := []string{"2001:db8::1", "35.0.0.7", "35.0.0.8"}
	if got := r.Resolve(names)["gw.example.com"]; !slices.Equal(got, want) {
		t.Fatalf("addresses %v, want %v", got, want)
	}

	dns.set("gw.example.com", []string{"35.0.0.9"}, nil)
	waitFor(t, "changed answer pushes", func() bool { return changed() == 2 })
	if got := r.Resolve(names)["gw.example.com"]; !slices.Equal(got, []string{"35.0.0.9"}) {
		t.Fatalf("addresses after the change %v", got)
	}

	dns.set("gw.example.com", nil, errors.New("i/o timeout"))
	n := dns.count("gw.example.com")
	waitFor(t, "lookups go on", func() bool { return dns.count("gw.example.com") > n+2 })
	if got := r.Resolve(names)["gw.example.com"]; !slices.Equal(got, []string{"35.0.0.9"}) || changed() != 2 {
		t.Fatalf("a failed lookup must keep the addresses: %v (pushes %d)", got, changed())
	}

	dns.set("gw.example.com", nil, &net.DNSError{Err: "no such host", Name: "gw.example.com", IsNotFound: true})
	waitFor(t, "vanished name pushes", func() bool { return changed() == 3 })
	if got := r.Resolve(names); len(got["gw.example.com"]) != 0 {
		t.Fatalf("a name that does not exist has no address: %v", got)
	}

	r.Resolve(nil)
	n = dns.count("gw.example.com")
	time.Sleep(100 * time.Millisecond)
	if got := dns.count("gw.example.com"); got > n+1 {
		t.Errorf("a forgotten name is still looked up (%d lookups after it went)", got-n)
	}
}

type staticResolver map[string][]string

func (s staticResolver) Resolve(names []string) map[string][]string {
	out := map[string][]string{}
	for _, n := range names {
		if a, ok := s[n]; ok {
			out[n] = a
		}
	}
	return out
}

// The snapshot's gateways with a resolver: a gateway given by hostname
// (a registry's or meshNetworks') is one gateway per address, with its
// network, cluster and ports; an unresolved one is left out; without a
// resolver hostnames are left out.
func TestNetworkGatewayIndexResolvesHostnames(t *testing.T) {
	src := &gatewaySource{gws: []NetworkGateway{
		{Network: "n2", Cluster: "c2", Addr: "35.0.0.1", Port: 15443},
		{Network: "n2", Cluster: "c2", Addr: "elb.example.com", Port: 15443, HBONEPort: 15008},
		{Network: "n2", Cluster: "c2", Addr: "unknown.example.com", Port: 15443},
	}}
	mn := &meshconfig.MeshNetworks{Networks: map[string]*meshconfig.Network{"vm": {Gateways: []*meshconfig.Network_IstioNetworkGateway{
		{Gw: &meshconfig.Network_IstioNetworkGateway_Address{Address: "vm-gw.example.com"}, Port: 443},
	}}}}
	res := staticResolver{"elb.example.com": {"52.0.0.1", "52.0.0.2"}, "vm-gw.example.com": {"192.0.2.9"}}
	env := NewEnvironment(EnvironmentOptions{NetworkGateways: src, MeshNetworks: func() *meshconfig.MeshNetworks { return mn },
		GatewayResolver: res})
	p := InitContext(env, nil, nil)
	want := []NetworkGateway{
		{Network: "vm", Addr: "192.0.2.9", Port: 443},
		{Network: "n2", Cluster: "c2", Addr: "35.0.0.1", Port: 15443},
		{Network: "n2", Cluster: "c2", Addr: "52.0.0.1", Port: 15443, HBONEPort: 15008},
		{Network: "n2", Cluster: "c2", Addr: "52.0.0.2", Port: 15443, HBONEPort: 15008},
	}
	if got := p.NetworkGateways().All(); !slices.Equal(got, want) {
		t.Fatalf("gateways %v\nwant %v", got, want)
	}
	if got := p.NetworkGateways().ScaleFactor(); got != 3 {
		t.Errorf("scale factor %d, want 3 (three gateways of n2 in c2)", got)
	}
	if got := len(p.UnresolvedNetworkGateways()); got != 4 {
		t.Errorf("unresolved gateways: %d, want 4", got)
	}
	noResolver := InitContext(NewEnvironment(EnvironmentOptions{NetworkGateways: src}), nil, nil)
	if got := noResolver.NetworkGateways().All(); len(got) != 1 || got[0].Addr != "35.0.0.1" {
		t.Errorf("without a resolver: %v", got)
	}
}
