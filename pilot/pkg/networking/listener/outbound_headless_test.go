package listener_test

import (
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// A headless service's TCP and sniffed ports get a listener per endpoint,
// except the proxy's own and endpoints that are not IPs; its HTTP ports
// share the wildcard. A Kubernetes headless service without endpoints gets
// no listener; a ServiceEntry without endpoints or selector takes the
// wildcard.
func TestHeadlessListenersPerEndpoint(t *testing.T) {
	headless := func(host string, reg model.ProviderID, ports ...*model.Port) *model.Service {
		s := svc(host, model.UnspecifiedIP, ports...)
		s.Resolution, s.Attributes.ServiceRegistry = model.Passthrough, reg
		return s
	}
	sniffed := &model.Port{Name: "peer", Port: 4000, Protocol: protocol.Unsupported}
	tcp := &model.Port{Name: "tcp-admin", Port: 4001, Protocol: protocol.TCP}
	http := &model.Port{Name: "http", Port: 8080, Protocol: protocol.HTTP}
	endpoints := map[string][][]string{
		"ring.ns.svc.cluster.local": {{"10.1.0.40"}, {"10.1.0.41"}, {"10.1.0.9"}, {"ring-2.example.com"}},
	}
	ls := listener.BuildOutbound([]*model.Service{
		headless("ring.ns.svc.cluster.local", model.Kubernetes, sniffed, tcp, http),
		headless("empty.ns.svc.cluster.local", model.Kubernetes, &model.Port{Name: "tcp", Port: 5000, Protocol: protocol.TCP}),
		headless("peers.example.com", model.External, &model.Port{Name: "tcp", Port: 6000, Protocol: protocol.TCP}),
	}, listener.Options{AllowAny: true, SelfIP: "10.1.0.9", Instances: func(s *model.Service, p *model.Port) [][]string {
		return endpoints[s.Hostname]
	}})
	var names []string
	for _, l := range ls {
		if err := l.ValidateAll(); err != nil {
			t.Fatalf("%s: %v", l.Name, err)
		}
		names = append(names, l.Name)
	}
	want := "0.0.0.0_6000 0.0.0.0_8080 10.1.0.40_4000 10.1.0.40_4001 10.1.0.41_4000 10.1.0.41_4001 virtualOutbound"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("listeners\n%s\nwant\n%s", got, want)
	}
	for _, l := range ls[2:4] {
		got := sniffedChain(l.FilterChains[0])
		if l.Name == "10.1.0.40_4000" {
			got += " | " + sniffedChain(l.DefaultFilterChain)
		}
		w := map[string]string{
			"10.1.0.40_4000": "[http/1.1 h2c] -> rds:ring.ns.svc.cluster.local:4000 | [] -> tcp:outbound|4000||ring.ns.svc.cluster.local",
			"10.1.0.40_4001": "[] -> tcp:outbound|4001||ring.ns.svc.cluster.local",
		}[l.Name]
		if got != w {
			t.Errorf("%s: %s, want %s", l.Name, got, w)
		}
	}
}
