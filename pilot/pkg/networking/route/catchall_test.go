package route_test

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/networking/route"
)

// The last virtual host of a port's routes follows the outbound policy:
// block_all, allow_any to PassthroughCluster, or under
// ALLOW_ANY_DYNAMIC_DNS allow_any_dynamic_dns to the forward proxy.
func TestCatchAllByPolicy(t *testing.T) {
	for _, tc := range []struct {
		opts          route.Options
		vhost, target string
	}{
		{route.Options{}, "block_all", ""},
		{route.Options{AllowAny: true}, "allow_any", "PassthroughCluster"},
		{route.Options{AllowAny: true, AllowAnyDynamicDNS: true}, "allow_any_dynamic_dns", "AllowAnyDynamicDNSCluster"},
	} {
		rc := route.BuildRouteConfiguration(80, nil, tc.opts)
		vh := rc.VirtualHosts[len(rc.VirtualHosts)-1]
		if vh.Name != tc.vhost || vh.Routes[0].Name != tc.vhost {
			t.Errorf("%+v: catch-all %s/%s, want %s", tc.opts, vh.Name, vh.Routes[0].Name, tc.vhost)
		}
		if got := vh.Routes[0].GetRoute().GetCluster(); got != tc.target {
			t.Errorf("%+v: cluster %q, want %q", tc.opts, got, tc.target)
		}
		if err := rc.ValidateAll(); err != nil {
			t.Error(err)
		}
	}
}
