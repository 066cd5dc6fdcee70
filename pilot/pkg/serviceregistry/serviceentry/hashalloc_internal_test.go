package serviceentry

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// The hashed addresses: one per service key, distinct across keys even
// where hashes collide (2,000 keys over 64,516 slots collide many times),
// none ending in .0, IPv6 beside IPv4; services that declare an address,
// pass through or have a wildcard host get none, and the input is not
// modified.
func TestHashAllocate(t *testing.T) {
	svc := func(ns, host string, res model.Resolution, addr string) *model.Service {
		return &model.Service{Hostname: host, Resolution: res, DefaultAddress: addr,
			Attributes: model.ServiceAttributes{Namespace: ns}}
	}
	var in []*model.Service
	for i := range 2000 {
		in = append(in, svc(fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("h%d.example.com", i), model.ClientSideLB, model.UnspecifiedIP))
	}
	in = append(in,
		svc("ns-0", "h0.example.com", model.DNSLB, model.UnspecifiedIP), // the key of in[0] again
		svc("ns-0", "fixed.example.com", model.ClientSideLB, "10.0.0.1"),
		svc("ns-0", "any.example.com", model.Passthrough, model.UnspecifiedIP),
		svc("ns-0", "*.wild.example.com", model.DNSLB, model.UnspecifiedIP))
	out := hashAllocate(in)
	seen := map[string]string{}
	for i, s := range out[:2000] {
		a := s.AutoAllocatedIPv4Address
		if !strings.HasPrefix(a, "240.240.") || strings.HasSuffix(a, ".0") || !strings.HasPrefix(s.AutoAllocatedIPv6Address, "2001:2::f0f0:") {
			t.Fatalf("%s: addresses %q %q", s.Key(), a, s.AutoAllocatedIPv6Address)
		}
		if k, dup := seen[a]; dup {
			t.Fatalf("%s and %s both got %s", k, s.Key(), a)
		}
		seen[a] = s.Key()
		if in[i].AutoAllocatedIPv4Address != "" {
			t.Fatalf("the input service %s was modified", in[i].Key())
		}
	}
	if again := out[2000].AutoAllocatedIPv4Address; again != out[0].AutoAllocatedIPv4Address {
		t.Errorf("the same key got %s and %s", out[0].AutoAllocatedIPv4Address, again)
	}
	for _, s := range out[2001:] {
		if s.AutoAllocatedIPv4Address != "" || s.AutoAllocatedIPv6Address != "" {
			t.Errorf("%s got %s %s", s.Key(), s.AutoAllocatedIPv4Address, s.AutoAllocatedIPv6Address)
		}
	}
	// the same services in the same order: the same addresses
	for i, s := range hashAllocate(in) {
		if s.AutoAllocatedIPv4Address != out[i].AutoAllocatedIPv4Address {
			t.Fatalf("%s: %s, then %s", s.Key(), out[i].AutoAllocatedIPv4Address, s.AutoAllocatedIPv4Address)
		}
	}
}
