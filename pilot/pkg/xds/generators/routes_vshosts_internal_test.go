package generators

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// On port 80 a VirtualService host that is no service of the port gets a
// host of its own (Istio's port-80 rule); on a port where it is a
// service, it does not.
func TestVirtualServiceOnlyHosts(t *testing.T) {
	_, env, _, proxies := routesEnv(t)
	push := model.InitContext(env, nil, nil)
	sc := push.SidecarScope(proxies[0])
	hosts := func(port int, name string) map[string]bool {
		out := map[string]bool{}
		for _, sr := range virtualServiceOnlyHosts(egressListenerForRoutes(sc, port, name), port) {
			if !sr.HostOnly || sr.VirtualService == nil {
				t.Errorf("%d: %s not a VirtualService host of its own", port, sr.Service.Hostname)
			}
			out[sr.Service.Hostname] = true
		}
		return out
	}
	if h := hosts(80, "80"); !h["svc-bad.c.svc.cluster.local"] || h["svc-0.b.svc.cluster.local"] {
		t.Errorf("port 80: %v, want svc-bad (no service of port 80) and no service of the port", h)
	}
	if h := hosts(9090, "9090"); len(h) != 0 {
		t.Errorf("port 9090: %v, want none (svc-bad is a service there)", h)
	}
}
