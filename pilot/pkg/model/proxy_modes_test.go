package model_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

func TestDiscoverIPMode(t *testing.T) {
	for _, c := range []struct {
		addrs []string
		want  model.IPMode
	}{
		{nil, model.IPv4},
		{[]string{"10.1.0.9"}, model.IPv4},
		{[]string{"fd00::9"}, model.IPv6},
		{[]string{"10.1.0.9", "fd00::9"}, model.Dual},
		{[]string{"fd00::9", "10.1.0.9"}, model.Dual},
		// what does not parse is skipped
		{[]string{"fd00::9", "not-an-ip"}, model.IPv6},
		{[]string{"not-an-ip"}, model.IPv4},
	} {
		if got := model.DiscoverIPMode(c.addrs); got != c.want {
			t.Errorf("%v: %v, want %v", c.addrs, got, c.want)
		}
	}
}

func TestInterception(t *testing.T) {
	for mode, want := range map[string]model.InterceptionMode{
		"": model.InterceptionRedirect, "REDIRECT": model.InterceptionRedirect, "TPROXY": model.InterceptionTproxy,
		"NONE": model.InterceptionNone, "tproxy": model.InterceptionRedirect, "bogus": model.InterceptionRedirect,
	} {
		p := &model.Proxy{Metadata: &model.NodeMetadata{InterceptionMode: mode}}
		if got := p.Interception(); got != want {
			t.Errorf("%q: %s, want %s", mode, got, want)
		}
	}
	if got := (&model.Proxy{}).Interception(); got != model.InterceptionRedirect {
		t.Errorf("no metadata: %s", got)
	}
}

func TestProxyIPModeFromNode(t *testing.T) {
	p, err := model.ParseServiceNodeWithMetadata("sidecar~10.1.0.9~a.ns~ns.svc.cluster.local", nil)
	if err != nil {
		t.Fatal(err)
	}
	p.IPAddresses = append(p.IPAddresses, "fd00::9")
	if p.IPMode() != model.Dual {
		t.Errorf("IPv4 node with an IPv6 instance IP: %v", p.IPMode())
	}
}

func TestProxyConfigOrDefault(t *testing.T) {
	def := &meshconfig.ProxyConfig{DiscoveryAddress: "istiod:15012"}
	md, _ := structpb.NewStruct(map[string]any{"PROXY_CONFIG": map[string]any{
		"connectionSettings": map[string]any{"httpIdleTimeout": "30s"}, "someFutureField": true}})
	p, err := model.ParseServiceNodeWithMetadata("sidecar~10.1.0.9~a.ns~ns.svc.cluster.local", md)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ProxyConfigOrDefault(def).GetConnectionSettings().GetHttpIdleTimeout().AsDuration(); got != 30*time.Second {
		t.Errorf("PROXY_CONFIG with an unknown field: idle timeout %v, want 30s", got)
	}
	for name, raw := range map[string]string{"none": "", "not an object": `"x"`} {
		q := &model.Proxy{Metadata: &model.NodeMetadata{ProxyConfig: []byte(raw)}}
		if got := q.ProxyConfigOrDefault(def); got != def {
			t.Errorf("%s: %v, want the default", name, got)
		}
	}
}
