package validation_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/validation"
)

func sePorts(ports ...*networking.ServicePort) []*networking.ServicePort { return ports }

func sePort(n uint32, protocol, name string) *networking.ServicePort {
	return &networking.ServicePort{Number: n, Protocol: protocol, Name: name}
}

func TestValidateServiceEntryValid(t *testing.T) {
	netRun(t, validation.ValidateServiceEntry, []netCase{
		{name: "external https by DNS", spec: &networking.ServiceEntry{
			Hosts: []string{"api.example.com"}, Ports: sePorts(sePort(443, "TLS", "tls")),
			Resolution: networking.ServiceEntry_DNS, Location: networking.ServiceEntry_MESH_EXTERNAL,
		}},
		{name: "wildcard with NONE", spec: &networking.ServiceEntry{
			Hosts: []string{"*.example.com"}, Ports: sePorts(sePort(80, "HTTP", "http")),
			Resolution: networking.ServiceEntry_NONE,
		}},
		{name: "static endpoints", spec: &networking.ServiceEntry{
			Hosts: []string{"db.internal"}, Addresses: []string{"240.0.0.1", "10.1.0.0/16"},
			Ports:      sePorts(sePort(5432, "TCP", "pg")),
			Resolution: networking.ServiceEntry_STATIC, Location: networking.ServiceEntry_MESH_INTERNAL,
			Endpoints: []*networking.WorkloadEntry{
				{Address: "10.1.0.5", Ports: map[string]uint32{"pg": 15432}, Labels: map[string]string{"app": "db"}},
				{Address: "unix:///var/run/db.sock"},
			},
		}},
		{name: "dns endpoints by name", spec: &networking.ServiceEntry{
			Hosts: []string{"svc.example.com"}, Ports: sePorts(sePort(80, "HTTP", "http")),
			Resolution: networking.ServiceEntry_DNS_ROUND_ROBIN,
			Endpoints:  []*networking.WorkloadEntry{{Address: "lb.example.com"}},
		}},
		{name: "workload selector", spec: &networking.ServiceEntry{
			Hosts: []string{"vm.internal"}, Ports: sePorts(sePort(8080, "HTTP", "http")),
			Resolution:       networking.ServiceEntry_STATIC,
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "vm"}},
		}},
		{name: "dynamic dns", spec: &networking.ServiceEntry{
			Hosts: []string{"*.example.com"}, Ports: sePorts(sePort(443, "TLS", "tls")),
			Resolution: networking.ServiceEntry_DYNAMIC_DNS,
		}},
	})
}

func TestValidateServiceEntryInvalid(t *testing.T) {
	netRun(t, validation.ValidateServiceEntry, []netCase{
		{name: "no hosts", spec: &networking.ServiceEntry{Ports: sePorts(sePort(80, "HTTP", "http"))},
			errs: []string{"spec.hosts: service entry must have at least one host"}},
		{name: "bad hosts", spec: &networking.ServiceEntry{Hosts: []string{"*", "a..b"}, Ports: sePorts(sePort(80, "HTTP", "http"))},
			errs: []string{"spec.hosts[0]: invalid host *", `spec.hosts[1]: invalid host "a..b"`}},
		{name: "partial wildcard warns", spec: &networking.ServiceEntry{Hosts: []string{"*foo.com"}, Ports: sePorts(sePort(80, "HTTP", "http"))},
			warns: []string{`spec.hosts[0]: partial wildcard "*foo.com" not allowed`}},
		{name: "ports", spec: &networking.ServiceEntry{Hosts: []string{"a.com"}, Ports: sePorts(
			sePort(80, "HTTP", "http"), sePort(80, "HTTP", "web"), sePort(81, "HTTP", "http"), sePort(0, "FTP", ""), nil,
		)}, errs: []string{
			"spec.ports[1].number: service entry port 80 already defined",
			`spec.ports[2].name: service entry port name "http" already defined`,
			"spec.ports[3].name: invalid port name: (empty; a DNS-1123 label is required)",
			`spec.ports[3].protocol: unsupported protocol: FTP (supported: HTTP, HTTPS, HTTP2, GRPC, GRPC-WEB, HTTP_PROXY, TCP, TLS, MONGO, REDIS, MYSQL, UDP)`,
			"spec.ports[3].number: port number 0 must be in the range 1..65535",
			"spec.ports[4]: service entry port may not be null",
		}},
		{name: "addresses", spec: &networking.ServiceEntry{
			Hosts: []string{"a.com"}, Addresses: []string{"not-an-ip", "10.0.0.0/8"}, Ports: sePorts(sePort(80, "HTTP", "http")),
			Resolution: networking.ServiceEntry_DNS,
		}, errs: []string{
			`spec.addresses[0]: not-an-ip is not a valid IP`,
			"spec.addresses: CIDR addresses are allowed only for NONE/STATIC resolution types",
		}},
		{name: "NONE with endpoints", spec: &networking.ServiceEntry{
			Hosts: []string{"a.com"}, Ports: sePorts(sePort(80, "HTTP", "http")),
			Endpoints: []*networking.WorkloadEntry{{Address: "1.1.1.1"}},
		}, errs: []string{"spec.endpoints: no endpoints should be provided for resolution type none"}},
		{name: "STATIC endpoint must be an IP", spec: &networking.ServiceEntry{
			Hosts: []string{"a.com"}, Ports: sePorts(sePort(80, "HTTP", "http")), Resolution: networking.ServiceEntry_STATIC,
			Endpoints: []*networking.WorkloadEntry{{Address: "host.example.com"}, {Address: "1.1.1.1", Ports: map[string]uint32{"grpc": 9090}}, nil},
		}, errs: []string{
			`spec.endpoints[0].address: endpoint address "host.example.com" is not a valid IP address`,
			`spec.endpoints[1].ports[grpc]: endpoint port 9090 is not defined by the service entry (no service port is named "grpc")`,
			"spec.endpoints[2]: endpoint cannot be nil",
		}},
		{name: "DNS wildcard without endpoints", spec: &networking.ServiceEntry{
			Hosts: []string{"*.example.com"}, Ports: sePorts(sePort(80, "HTTP", "http")), Resolution: networking.ServiceEntry_DNS,
		}, errs: []string{`spec.hosts[0]: hosts must be FQDN or contain only prefix wildcards if no endpoints are provided for resolution mode DNS, domain name "*.example.com" invalid (label "*" invalid)`}},
		{name: "DNS_ROUND_ROBIN with two endpoints", spec: &networking.ServiceEntry{
			Hosts: []string{"a.com"}, Ports: sePorts(sePort(80, "HTTP", "http")), Resolution: networking.ServiceEntry_DNS_ROUND_ROBIN,
			Endpoints: []*networking.WorkloadEntry{{Address: "1.1.1.1"}, {Address: "b.example.com"}},
		}, errs: []string{"spec.endpoints: there must only be 0 or 1 endpoint for resolution mode DNS_ROUND_ROBIN"}},
		{name: "selector and endpoints", spec: &networking.ServiceEntry{
			Hosts: []string{"a.com"}, Ports: sePorts(sePort(80, "HTTP", "http")), Resolution: networking.ServiceEntry_STATIC,
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "a"}},
			Endpoints:        []*networking.WorkloadEntry{{Address: "1.1.1.1"}},
		}, errs: []string{"spec: only one of WorkloadSelector or Endpoints is allowed in Service Entry"}},
		{name: "multiple hosts with tcp", spec: &networking.ServiceEntry{
			Hosts: []string{"a.com", "b.com"}, Ports: sePorts(sePort(5432, "TCP", "pg")), Resolution: networking.ServiceEntry_DNS,
		}, errs: []string{"spec.ports[0]: multiple hosts provided with non-HTTP, non-TLS ports"}},
		{name: "dynamic dns needs wildcard", spec: &networking.ServiceEntry{
			Hosts: []string{"a.com"}, Ports: sePorts(sePort(443, "TLS", "tls")), Resolution: networking.ServiceEntry_DYNAMIC_DNS,
		}, errs: []string{`spec.hosts[0]: host must be wildcarded for resolution mode DYNAMIC_DNS (got "a.com")`}},
		{name: "unknown resolution and exportTo", spec: &networking.ServiceEntry{
			Hosts: []string{"a.com"}, Ports: sePorts(sePort(80, "HTTP", "http")), Resolution: 42, ExportTo: []string{"~", "ns"},
		}, errs: []string{"spec.resolution: unsupported resolution type 42", "spec.exportTo: cannot export service entry to no one (~) and someone"}},
		{name: "empty selector warns", spec: &networking.ServiceEntry{
			Hosts: []string{"a.com"}, Ports: sePorts(sePort(80, "HTTP", "http")), Resolution: networking.ServiceEntry_STATIC,
			WorkloadSelector: &networking.WorkloadSelector{},
		}, warns: []string{"spec.workloadSelector: service entry: workload selector specified without labels"}},
	})
}

func TestServiceEntryAutoAllocationOptOut(t *testing.T) {
	se := &networking.ServiceEntry{Hosts: []string{"a.com"}, Ports: sePorts(sePort(5432, "TCP", "pg")), Resolution: networking.ServiceEntry_DNS}
	warn, err := validation.ValidateServiceEntry(config.Config{Meta: config.Meta{
		Name: "se", Namespace: "default", Labels: map[string]string{"networking.istio.io/enable-autoallocate-ip": "false"},
	}, Spec: se})
	netExpect(t, "error", err, nil)
	netExpect(t, "warning", warn, []string{"spec.ports[0]: addresses are required for ports serving TCP"})
	warn, _ = validation.ValidateServiceEntry(netCfg(se))
	netExpect(t, "warning", warn, nil)
}
