package pushengine_test

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/xds/pushengine"
)

type proxyCalls struct{ ips []string }

func (p *proxyCalls) ProxyUpdate(clusterID, ip string) int {
	p.ips = append(p.ips, clusterID+"/"+ip)
	return 1
}

// A workload change goes to the xDS server's connections of that workload,
// never to the engine: it builds no PushContext and pushes nobody else.
func TestUpdaterSendsWorkloadChangesToTheirConnections(t *testing.T) {
	e := pushengine.New(pushengine.Options{Debounce: pushengine.DefaultDebounceOptions()})
	calls := &proxyCalls{}
	u := pushengine.Updater{Engine: e, Proxies: calls}
	u.ProxyUpdate("Kubernetes", "10.1.0.7")
	u.ProxyUpdate("Kubernetes", "10.1.0.8")
	if got := e.Stats().Inbound; got != 0 {
		t.Errorf("the engine got %d requests for workload changes", got)
	}
	if len(calls.ips) != 2 || calls.ips[0] != "Kubernetes/10.1.0.7" || calls.ips[1] != "Kubernetes/10.1.0.8" {
		t.Errorf("connections pushed for %v", calls.ips)
	}
	// without a server nothing happens, and nothing panics
	pushengine.Updater{Engine: e}.ProxyUpdate("Kubernetes", "10.1.0.9")
}
