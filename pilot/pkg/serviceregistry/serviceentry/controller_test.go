package serviceentry_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

func TestDNSServiceEntryOneServicePerHost(t *testing.T) {
	f := newFixture(t, se("ns1", "google", &networking.ServiceEntry{
		Hosts:      []string{"www.googleapis.com", "api.example.com"},
		Ports:      []*networking.ServicePort{{Number: 443, Name: "https", Protocol: "TLS"}},
		Resolution: networking.ServiceEntry_DNS,
		Location:   networking.ServiceEntry_MESH_EXTERNAL,
		ExportTo:   []string{"."},
	}))
	svcs := f.reg.Services()
	if len(svcs) != 2 {
		t.Fatalf("services: %d", len(svcs))
	}
	s := svcs[0]
	if s.Hostname != "www.googleapis.com" || s.Resolution != model.DNSLB || !s.MeshExternal ||
		s.DefaultAddress != model.UnspecifiedIP || s.Attributes.ServiceRegistry != model.External ||
		s.Attributes.ObjectName != "google" || s.Attributes.Name != "www.googleapis.com" ||
		s.Ports[0].Protocol != "TLS" || !s.CreationTime.Equal(created) {
		t.Fatalf("service: %+v", s)
	}
	if _, ok := s.Attributes.ExportTo["."]; !ok {
		t.Fatalf("exportTo: %v", s.Attributes.ExportTo)
	}
	f.eventually("host endpoints", func() bool { return len(f.endpoints("api.example.com", "ns1")) == 1 })
	ep := f.endpoints("www.googleapis.com", "ns1")[0]
	if ep.FirstAddress() != "www.googleapis.com" || ep.EndpointPort != 443 || ep.LegacyClusterPortKey != 443 ||
		ep.ServicePortName != "https" || ep.Namespace != "ns1" || ep.WorkloadName != "google" ||
		ep.TLSMode != "disabled" || ep.HealthStatus != 0 || ep.Locality.ClusterID != "Kubernetes" {
		t.Fatalf("host endpoint: %+v", ep)
	}
}

func TestResolutionAndLocation(t *testing.T) {
	cases := map[networking.ServiceEntry_Resolution]model.Resolution{
		networking.ServiceEntry_NONE:            model.Passthrough,
		networking.ServiceEntry_STATIC:          model.ClientSideLB,
		networking.ServiceEntry_DNS:             model.DNSLB,
		networking.ServiceEntry_DNS_ROUND_ROBIN: model.DNSRoundRobinLB,
		networking.ServiceEntry_DYNAMIC_DNS:     model.DynamicDNS,
	}
	for in, want := range cases {
		f := newFixture(t, se("ns1", "x", &networking.ServiceEntry{Hosts: []string{"x.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			Resolution: in, Location: networking.ServiceEntry_MESH_INTERNAL}))
		if s := f.service("x.example"); s.Resolution != want || s.MeshExternal {
			t.Errorf("%v: resolution %v mesh external %v", in, s.Resolution, s.MeshExternal)
		}
	}
}

func TestAddresses(t *testing.T) {
	f := newFixture(t, se("ns1", "vip", &networking.ServiceEntry{
		Hosts: []string{"db.internal"}, Ports: []*networking.ServicePort{{Number: 5432, Name: "tcp", Protocol: "TCP"}},
		Addresses:  []string{"10.1.0.1/32", "10.2.0.0/16", "not-an-ip", "fd00::1"},
		Resolution: networking.ServiceEntry_NONE, Location: networking.ServiceEntry_MESH_INTERNAL,
	}))
	s := f.service("db.internal")
	want := []string{"10.1.0.1", "10.2.0.0/16", "fd00::1"}
	got := s.ClusterVIPs.For("Kubernetes")
	if s.DefaultAddress != "10.1.0.1" || len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("addresses: default %s vips %v", s.DefaultAddress, got)
	}
	f.eventually("bad address reported", func() bool { return f.board.Count("warning") == 1 })
}

func TestAutoAllocatedAddressesFromStatus(t *testing.T) {
	c := se("ns1", "auto", &networking.ServiceEntry{Hosts: []string{"a.example"}, Ports: []*networking.ServicePort{httpPort(80)},
		Resolution: networking.ServiceEntry_DNS})
	c.Status = &networking.ServiceEntryStatus{Addresses: []*networking.ServiceEntryAddress{
		{Host: "a.example", Value: "240.240.0.1"}, {Host: "a.example", Value: "2001:2::1"}}}
	f := newFixture(t, c)
	if s := f.service("a.example"); s.AutoAllocatedIPv4Address != "240.240.0.1" || s.AutoAllocatedIPv6Address != "2001:2::1" {
		t.Fatalf("auto-allocated: %+v", s)
	}
}

func TestInlineEndpoints(t *testing.T) {
	f := newFixture(t, se("ns1", "vm", &networking.ServiceEntry{
		Hosts: []string{"vm.example"},
		Ports: []*networking.ServicePort{httpPort(80), {Number: 9090, Name: "grpc", Protocol: "GRPC", TargetPort: 19090}},
		Endpoints: []*networking.WorkloadEntry{
			{Address: "1.1.1.1", Ports: map[string]uint32{"http": 8080}, Labels: map[string]string{"app": "vm"},
				Weight: 3, Locality: "r/z", Network: "n1", ServiceAccount: "vm-sa"},
			{Address: "unix:///var/run/sock"},
			{Address: "bad address!"},
		},
		Resolution: networking.ServiceEntry_STATIC, Location: networking.ServiceEntry_MESH_INTERNAL,
	}))
	f.eventually("endpoints", func() bool { return len(f.endpoints("vm.example", "ns1")) == 4 })
	eps := f.endpoints("vm.example", "ns1")
	a := eps[0]
	if a.FirstAddress() != "1.1.1.1" || a.EndpointPort != 8080 || a.LbWeight != 3 || a.Locality.Label != "r/z" ||
		a.Network != "n1" || a.ServiceAccount != "spiffe://td.example/ns/ns1/sa/vm-sa" || a.TLSMode != "istio" ||
		a.Labels["app"] != "vm" || a.Labels[model.RegionLabel] != "r" || a.WorkloadName != "vm-0" {
		t.Fatalf("inline endpoint: %+v", a)
	}
	if g := eps[2]; g.ServicePortName != "grpc" || g.EndpointPort != 19090 {
		t.Fatalf("targetPort fallback: %+v", g)
	}
	if u := eps[1]; u.FirstAddress() != "/var/run/sock" || u.EndpointPort != 0 || u.TLSMode != "disabled" {
		t.Fatalf("unix endpoint: %+v", u)
	}
	f.eventually("bad endpoint reported", func() bool { return f.board.Count("warning") == 1 })
}

func TestWorkloadSelectorPicksEntriesAndPods(t *testing.T) {
	sel := &networking.WorkloadSelector{Labels: map[string]string{"app": "vm"}}
	f := newFixture(t,
		se("ns1", "vm", &networking.ServiceEntry{Hosts: []string{"vm.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			WorkloadSelector: sel, Resolution: networking.ServiceEntry_STATIC, Location: networking.ServiceEntry_MESH_INTERNAL}),
		// spec labels and metadata labels are merged
		we("ns1", "vm-1", map[string]string{"app": "vm"}, &networking.WorkloadEntry{Address: "2.2.2.2", Labels: map[string]string{"v": "1"}}),
		we("ns1", "other", nil, &networking.WorkloadEntry{Address: "2.2.2.3", Labels: map[string]string{"app": "other"}}),
		we("ns2", "vm-elsewhere", nil, &networking.WorkloadEntry{Address: "2.2.2.4", Labels: map[string]string{"app": "vm"}}),
	)
	f.eventually("entry selected", func() bool { return len(f.endpoints("vm.example", "ns1")) == 1 })
	if e := f.endpoints("vm.example", "ns1")[0]; e.FirstAddress() != "2.2.2.2" || e.Labels["v"] != "1" || e.WorkloadName != "vm-1" {
		t.Fatalf("endpoint: %+v", e)
	}
	seq := f.pushes.Seq()
	f.pods.Set(model.WorkloadInstance{Name: "pod-1", Namespace: "ns1", Labels: map[string]string{"app": "vm"},
		PortMap:  map[string]uint32{"http": 8080},
		Endpoint: &model.IstioEndpoint{Addresses: []string{"10.0.0.5"}, Namespace: "ns1", WorkloadName: "pod", TLSMode: "istio"}})
	f.eventually("pod selected", func() bool { return len(f.endpoints("vm.example", "ns1")) == 2 })
	// pods first, as Istio orders the selected workloads by kind
	if p := f.endpoints("vm.example", "ns1")[0]; p.FirstAddress() != "10.0.0.5" || p.EndpointPort != 8080 {
		t.Fatalf("pod endpoint: %+v", p)
	}
	push := f.wait(f.pushes, seq, "push", func(e model.XDSEvent) bool { return e.Type == model.XDSEventConfig })
	if push.Push.Full {
		t.Fatalf("a new workload is an endpoint-only change: %+v", push.Push)
	}
}

func TestWorkloadEntryDNSAddressOnlyForDNSEntries(t *testing.T) {
	sel := &networking.WorkloadSelector{Labels: map[string]string{"app": "db"}}
	f := newFixture(t,
		se("ns1", "static", &networking.ServiceEntry{Hosts: []string{"s.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			WorkloadSelector: sel, Resolution: networking.ServiceEntry_STATIC}),
		se("ns1", "dns", &networking.ServiceEntry{Hosts: []string{"d.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			WorkloadSelector: sel, Resolution: networking.ServiceEntry_DNS}),
		we("ns1", "db", nil, &networking.WorkloadEntry{Address: "db.vm.example.com", Labels: map[string]string{"app": "db"}}),
	)
	f.eventually("dns entry", func() bool { return len(f.endpoints("d.example", "ns1")) == 1 })
	if n := len(f.endpoints("s.example", "ns1")); n != 0 {
		t.Fatalf("a DNS-named workload must not serve a STATIC entry: %d", n)
	}
}

func TestInvalidWorkloadEntryAddressIsReported(t *testing.T) {
	sel := &networking.WorkloadSelector{Labels: map[string]string{"app": "vm"}}
	f := newFixture(t,
		se("ns1", "vm", &networking.ServiceEntry{Hosts: []string{"vm.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			WorkloadSelector: sel, Resolution: networking.ServiceEntry_STATIC}),
		we("ns1", "bad", nil, &networking.WorkloadEntry{Address: "300.1.1.1:80", Labels: map[string]string{"app": "vm"}}),
		we("ns1", "good", nil, &networking.WorkloadEntry{Address: "3.3.3.3", Labels: map[string]string{"app": "vm"}}),
	)
	f.eventually("good endpoint", func() bool { return len(f.endpoints("vm.example", "ns1")) == 1 })
	f.eventually("warning", func() bool {
		for _, p := range f.board.List() {
			if p.Object == "WorkloadEntry ns1/bad" {
				return true
			}
		}
		return false
	})
}

func TestWorkloadGroupTemplate(t *testing.T) {
	sel := &networking.WorkloadSelector{Labels: map[string]string{"app": "vm"}}
	entry := we("ns1", "vm-10.0.0.9", nil, &networking.WorkloadEntry{Address: "10.0.0.9"})
	entry.Annotations = map[string]string{"istio.io/autoRegistrationGroup": "vms"}
	f := newFixture(t,
		se("ns1", "vm", &networking.ServiceEntry{Hosts: []string{"vm.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			WorkloadSelector: sel, Resolution: networking.ServiceEntry_STATIC}),
		wg("ns1", "vms", &networking.WorkloadGroup{
			Metadata: &networking.WorkloadGroup_ObjectMeta{Labels: map[string]string{"app": "vm"}},
			Template: &networking.WorkloadEntry{Ports: map[string]uint32{"http": 8081}, ServiceAccount: "vm-sa", Network: "vpc"},
		}),
		entry,
	)
	f.eventually("templated entry", func() bool { return len(f.endpoints("vm.example", "ns1")) == 1 })
	e := f.endpoints("vm.example", "ns1")[0]
	if e.EndpointPort != 8081 || e.ServiceAccount != "spiffe://td.example/ns/ns1/sa/vm-sa" || e.Network != "vpc" || e.WorkloadName != "vms" {
		t.Fatalf("endpoint from template: %+v", e)
	}
}

// Only an entry with the health-check annotation set to true is
// health-checked, and it is healthy once its Healthy condition is True, as
// in Istio.
func TestUnhealthyWorkloadEntry(t *testing.T) {
	sel := &networking.WorkloadSelector{Labels: map[string]string{"app": "vm"}}
	for _, tc := range []struct {
		name, annotation, condition string
		unhealthy                   bool
	}{
		{"no annotation, False", "", "False", false},
		{"annotation false, False", "false", "False", false},
		{"annotation true, False", "true", "False", true},
		{"annotation true, no condition", "true", "", true},
		{"annotation true, True", "true", "True", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := we("ns1", "vm-1", nil, &networking.WorkloadEntry{Address: "4.4.4.4", Labels: map[string]string{"app": "vm"}})
			if tc.annotation != "" {
				e.Annotations = map[string]string{"proxy.istio.io/health-checks-enabled": tc.annotation}
			}
			if tc.condition != "" {
				e.Status = healthStatus(tc.condition)
			}
			f := newFixture(t, se("ns1", "vm", &networking.ServiceEntry{Hosts: []string{"vm.example"},
				Ports: []*networking.ServicePort{httpPort(80)}, WorkloadSelector: sel}), e)
			f.eventually("endpoint", func() bool { return len(f.endpoints("vm.example", "ns1")) == 1 })
			if got := f.endpoints("vm.example", "ns1")[0].HealthStatus; (got == model.UnHealthy) != tc.unhealthy {
				t.Fatalf("health: %d, want unhealthy=%v", got, tc.unhealthy)
			}
		})
	}
}

// Two ServiceEntries of one host in one namespace: one service (the
// oldest), endpoints merged; the host goes when both go.
func TestSharedHost(t *testing.T) {
	older := se("ns1", "b-old", &networking.ServiceEntry{Hosts: []string{"h.example"}, Ports: []*networking.ServicePort{httpPort(80)},
		Endpoints: []*networking.WorkloadEntry{{Address: "5.5.5.1"}}, Resolution: networking.ServiceEntry_STATIC})
	older.CreationTimestamp = created.Add(-1)
	f := newFixture(t, older, se("ns1", "a-new", &networking.ServiceEntry{Hosts: []string{"h.example"},
		Ports: []*networking.ServicePort{httpPort(8080)}, Endpoints: []*networking.WorkloadEntry{{Address: "5.5.5.2"}},
		Resolution: networking.ServiceEntry_STATIC}))
	if svcs := f.reg.Services(); len(svcs) != 1 || svcs[0].Attributes.ObjectName != "b-old" {
		t.Fatalf("services: %+v", svcs)
	}
	f.eventually("merged", func() bool { return len(f.endpoints("h.example", "ns1")) == 2 })
	f.remove(gvk.ServiceEntry, "ns1", "b-old")
	f.eventually("one left", func() bool { return len(f.endpoints("h.example", "ns1")) == 1 })
	seq := f.rec.Seq()
	f.remove(gvk.ServiceEntry, "ns1", "a-new")
	// the update that made a-new the winner may still be in flight: wait for the delete
	e := f.wait(f.rec, seq, "delete", func(e model.XDSEvent) bool {
		return e.Type == model.XDSEventService && e.Event == model.EventDelete
	})
	if e.Hostname != "h.example" {
		t.Fatalf("event: %+v", e)
	}
	f.eventually("gone", func() bool { _, ok := f.index.ShardsFor("h.example", "ns1"); return !ok })
}

func TestServiceEntryChangesAreFull(t *testing.T) {
	spec := &networking.ServiceEntry{Hosts: []string{"x.example"}, Ports: []*networking.ServicePort{httpPort(80)},
		Resolution: networking.ServiceEntry_DNS}
	f := newFixture(t, se("ns1", "x", spec))
	seq := f.rec.Seq()
	spec2 := &networking.ServiceEntry{Hosts: []string{"x.example"}, Ports: []*networking.ServicePort{httpPort(80), {Number: 81, Name: "tcp", Protocol: "TCP"}},
		Resolution: networking.ServiceEntry_DNS}
	f.update(se("ns1", "x", spec2))
	e := f.wait(f.rec, seq, "full", func(e model.XDSEvent) bool { return e.Type == model.XDSEventConfig })
	if !e.Push.Full {
		t.Fatalf("push: %+v", e.Push)
	}
	if _, ok := e.Push.ConfigsUpdated[model.ServiceConfigKey("x.example", "ns1")]; !ok {
		t.Fatalf("keys: %v", e.Push.ConfigsUpdated)
	}
}

func TestBadPortsReported(t *testing.T) {
	f := newFixture(t, se("ns1", "x", &networking.ServiceEntry{Hosts: []string{"x.example"},
		Ports: []*networking.ServicePort{httpPort(80), {Number: 0, Name: "zero"}, {Number: 80, Name: "dup"}}}))
	if p := f.service("x.example").Ports; len(p) != 1 {
		t.Fatalf("ports: %v", p)
	}
	f.eventually("warnings", func() bool { return f.board.Count("warning") == 2 })
}

func TestGetProxyServiceTargets(t *testing.T) {
	sel := &networking.WorkloadSelector{Labels: map[string]string{"app": "vm"}}
	f := newFixture(t,
		se("ns1", "vm", &networking.ServiceEntry{Hosts: []string{"vm.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			WorkloadSelector: sel, Resolution: networking.ServiceEntry_STATIC}),
		we("ns1", "vm-1", nil, &networking.WorkloadEntry{Address: "6.6.6.6", Labels: map[string]string{"app": "vm"},
			Ports: map[string]uint32{"http": 8080}}))
	f.eventually("endpoint", func() bool { return len(f.endpoints("vm.example", "ns1")) == 1 })
	got := f.reg.GetProxyServiceTargets(&model.ProxyQuery{IPAddresses: []string{"6.6.6.6"}})
	if len(got) != 1 || got[0].Service.Hostname != "vm.example" || got[0].Port.TargetPort != 8080 || got[0].Port.Port.Port != 80 {
		t.Fatalf("targets: %+v", got)
	}
}

// A DNS service's endpoints are inline in its clusters, so a change of its
// endpoints alone is a full push naming it; a STATIC service's is not.
func TestDNSEndpointChangeIsFull(t *testing.T) {
	sel := &networking.WorkloadSelector{Labels: map[string]string{"app": "db"}}
	f := newFixture(t,
		se("ns1", "dns", &networking.ServiceEntry{Hosts: []string{"d.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			WorkloadSelector: sel, Resolution: networking.ServiceEntry_DNS}),
		se("ns1", "static", &networking.ServiceEntry{Hosts: []string{"s.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			WorkloadSelector: sel, Resolution: networking.ServiceEntry_STATIC}),
		we("ns1", "db", nil, &networking.WorkloadEntry{Address: "10.0.0.1", Labels: map[string]string{"app": "db"}}),
	)
	f.eventually("endpoints", func() bool {
		return len(f.endpoints("d.example", "ns1")) == 1 && len(f.endpoints("s.example", "ns1")) == 1
	})
	seq := f.rec.Seq()
	f.update(we("ns1", "db", nil, &networking.WorkloadEntry{Address: "10.0.0.2", Labels: map[string]string{"app": "db"}}))
	e := f.wait(f.rec, seq, "full push for the DNS host", func(e model.XDSEvent) bool {
		return e.Type == model.XDSEventConfig && e.Push.Full
	})
	if _, ok := e.Push.ConfigsUpdated[model.ServiceConfigKey("d.example", "ns1")]; !ok {
		t.Errorf("full push names %v, not the DNS host", e.Push.ConfigsUpdated)
	}
	if _, ok := e.Push.ConfigsUpdated[model.ServiceConfigKey("s.example", "ns1")]; ok {
		t.Errorf("full push names the STATIC host: %v", e.Push.ConfigsUpdated)
	}
}
