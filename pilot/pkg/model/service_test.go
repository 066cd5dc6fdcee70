package model_test

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

func TestServiceEquals(t *testing.T) {
	base := func() *model.Service {
		return &model.Service{Hostname: "a.example", Ports: model.PortList{{Name: "http", Port: 80, Protocol: "HTTP"}},
			ResourceVersion: "1", Attributes: model.ServiceAttributes{Namespace: "ns", Labels: map[string]string{"a": "b"},
				ExportTo: model.NewExportTo(".")}}
	}
	a, b := base(), base()
	b.ResourceVersion = "2"
	if !a.Equals(b) {
		t.Fatal("resource version alone must not make services differ")
	}
	b.Ports = model.PortList{{Name: "http", Port: 81, Protocol: "HTTP"}}
	if a.Equals(b) {
		t.Fatal("port change")
	}
	c := base()
	c.Attributes.ExportTo = model.NewExportTo("*")
	if a.Equals(c) {
		t.Fatal("exportTo change")
	}
	if !(*model.Service)(nil).Equals(nil) || a.Equals(nil) {
		t.Fatal("nil handling")
	}
	if a.Key() != "ns/a.example" {
		t.Fatal(a.Key())
	}
	if !model.NewExportTo("~").IsNone() || model.NewExportTo("~", ".").IsNone() || model.NewExportTo() != nil {
		t.Fatal("exportTo none")
	}
}

func TestPortList(t *testing.T) {
	l := model.PortList{{Name: "http", Port: 80}, {Name: "grpc", Port: 90}}
	if p, ok := l.Get("grpc"); !ok || p.Port != 90 {
		t.Fatal("Get")
	}
	if p, ok := l.GetByPort(80); !ok || p.Name != "http" {
		t.Fatal("GetByPort")
	}
	if _, ok := l.Get("none"); ok {
		t.Fatal("Get none")
	}
}

func TestEndpointHelpers(t *testing.T) {
	if got := model.SpiffeIdentity("td", "ns", "sa"); got != "spiffe://td/ns/ns/sa/sa" {
		t.Fatal(got)
	}
	if got := model.LocalityFromLabels(map[string]string{model.LegacyLocalityLabel: "r.z.s"}); got != "r/z/s" {
		t.Fatal(got)
	}
	if got := model.LocalityFromLabels(map[string]string{model.LocalityLabel: "a.b", model.LegacyLocalityLabel: "x"}); got != "a/b" {
		t.Fatal(got)
	}
	in := map[string]string{"app": "x", model.NetworkLabel: "mine"}
	out := model.AugmentLabels(in, "c1", "r/z", "node1", "other")
	want := map[string]string{"app": "x", model.NetworkLabel: "mine", model.ClusterLabel: "c1", model.RegionLabel: "r",
		model.ZoneLabel: "z", model.HostnameLabel: "node1"}
	if len(out) != len(want) {
		t.Fatalf("labels: %v", out)
	}
	for k, v := range want {
		if out[k] != v {
			t.Fatalf("label %s: %q", k, out[k])
		}
	}
	if len(in) != 2 {
		t.Fatal("input labels modified")
	}
	if got := model.AugmentLabels(nil, "c1", "", "", ""); got[model.NetworkLabel] != "" || len(got) != 2 {
		t.Fatalf("network label always present: %v", got)
	}
	a := &model.IstioEndpoint{Addresses: []string{"1.1.1.1"}, WorkloadName: "w", ServicePortName: "http"}
	if a.Key() != "1.1.1.1/w/http" || !a.Equals(a.ShallowCopy()) {
		t.Fatal("key/equals")
	}
}
