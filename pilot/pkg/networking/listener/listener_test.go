package listener_test

import (
	"testing"

	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

func svc(host, vip string, ports ...*model.Port) *model.Service {
	return &model.Service{Hostname: host, DefaultAddress: vip, Ports: ports, Attributes: model.ServiceAttributes{Name: host, Namespace: "ns"}}
}

func TestSidecarListeners(t *testing.T) {
	services := []*model.Service{
		svc("reviews.bookinfo.svc.cluster.local", "10.96.10.12", &model.Port{Name: "http", Port: 9080, Protocol: protocol.HTTP}),
		svc("details.bookinfo.svc.cluster.local", "10.96.10.11", &model.Port{Name: "http", Port: 9080, Protocol: protocol.HTTP}),
		svc("ratings.bookinfo.svc.cluster.local", "10.96.10.13", &model.Port{Name: "grpc", Port: 9090, Protocol: protocol.GRPC},
			&model.Port{Name: "tcp-metrics", Port: 9102, Protocol: protocol.TCP}),
		svc("dns.kube-system.svc.cluster.local", "10.96.0.10", &model.Port{Name: "dns", Port: 53, Protocol: protocol.UDP}),
	}
	self := svc("productpage.bookinfo.svc.cluster.local", "10.96.10.10", &model.Port{Name: "http", Port: 9080, Protocol: protocol.HTTP})
	ls := listener.BuildSidecarListeners(services, listener.Options{AllowAny: true, Inbound: map[int][]*model.Service{9080: {self}}})
	var names []string
	for _, l := range ls {
		if err := l.ValidateAll(); err != nil {
			t.Errorf("%s: invalid: %v", l.Name, err)
		}
		names = append(names, l.Name)
	}
	want := []string{"0.0.0.0_9080", "0.0.0.0_9090", "10.96.10.13_9102", "virtualInbound", "virtualOutbound"}
	if len(names) != len(want) {
		t.Fatalf("listeners %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("listener %d = %s, want %s", i, names[i], want[i])
		}
	}
	m := &hcm.HttpConnectionManager{}
	if err := ls[0].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(m); err != nil || m.GetRds().GetRouteConfigName() != "9080" {
		t.Errorf("HTTP listener RDS: %v %v", m.GetRds(), err)
	}
	tp := &tcpproxy.TcpProxy{}
	if err := ls[2].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil || tp.GetCluster() != "outbound|9102||ratings.bookinfo.svc.cluster.local" {
		t.Errorf("TCP listener cluster %v %v", tp.GetCluster(), err)
	}
	if err := ls[4].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil || tp.GetCluster() != "BlackHoleCluster" ||
		ls[4].FilterChains[0].FilterChainMatch.GetDestinationPort().GetValue() != 15001 {
		t.Errorf("virtualOutbound loop guard %v", tp.GetCluster())
	}
	if err := ls[4].FilterChains[1].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil || tp.GetCluster() != "PassthroughCluster" {
		t.Errorf("ALLOW_ANY fallback %v", tp.GetCluster())
	}
	inbound := ls[3]
	if len(inbound.FilterChains) != 3 || inbound.FilterChains[0].Name != "virtualInbound-blackhole" ||
		inbound.FilterChains[1].Name != "inbound|9080||" || inbound.FilterChains[1].FilterChainMatch.DestinationPort.Value != 9080 {
		t.Errorf("virtualInbound chains %v", inbound.FilterChains)
	}
	blocked := listener.BuildSidecarListeners(nil, listener.Options{})
	if err := blocked[1].FilterChains[1].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil || tp.GetCluster() != "BlackHoleCluster" {
		t.Errorf("REGISTRY_ONLY fallback %v (%s)", tp.GetCluster(), blocked[1].Name)
	}
}

func TestAccessLogFromMesh(t *testing.T) {
	svc := svc("a.ns.svc.cluster.local", "10.0.0.1", &model.Port{Name: "http", Port: 80, Protocol: protocol.HTTP})
	ls := listener.BuildSidecarListeners([]*model.Service{svc}, listener.Options{AccessLogFile: "/dev/stdout"})
	m := &hcm.HttpConnectionManager{}
	if err := ls[0].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	if len(m.AccessLog) != 1 || m.AccessLog[0].Name != "envoy.access_loggers.file" {
		t.Fatalf("access log %v", m.AccessLog)
	}
	if err := ls[0].ValidateAll(); err != nil {
		t.Fatal(err)
	}
	none := listener.BuildSidecarListeners([]*model.Service{svc}, listener.Options{})
	_ = none[0].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(m)
	if len(m.AccessLog) != 0 {
		t.Error("access log without accessLogFile")
	}
}
