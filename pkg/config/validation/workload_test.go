package validation_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config/validation"
)

func TestValidateWorkloadEntry(t *testing.T) {
	netRun(t, validation.ValidateWorkloadEntry, []netCase{
		{name: "ip", spec: &networking.WorkloadEntry{Address: "10.0.0.1", Ports: map[string]uint32{"http": 8080},
			Labels: map[string]string{"app": "vm"}, ServiceAccount: "vm-sa", Network: "net1", Weight: 5}},
		{name: "dns name", spec: &networking.WorkloadEntry{Address: "vm1.example.com"}},
		{name: "network only warns", spec: &networking.WorkloadEntry{Network: "remote"},
			warns: []string{`spec.address: address is unset with network "remote"`}},
		{name: "address required", spec: &networking.WorkloadEntry{}, errs: []string{"spec.address: address is required"}},
		{name: "bad address", spec: &networking.WorkloadEntry{Address: "not valid"},
			errs: []string{`spec.address: endpoint address "not valid" is not a valid FQDN or an IP address`}},
		{name: "unix with ports", spec: &networking.WorkloadEntry{Address: "unix://sock", Ports: map[string]uint32{"http": 80}},
			errs: []string{`spec.address: unix address sock is not an absolute path to a file`, "spec.ports: unix endpoint unix://sock must not include ports"}},
		{name: "ports labels and service account", spec: &networking.WorkloadEntry{
			Address: "10.0.0.1", Ports: map[string]uint32{"bad_name": 80, "http": 0},
			Labels: map[string]string{"app": "bad value!"}, ServiceAccount: "Bad_SA",
		}, errs: []string{
			`spec.ports[bad_name]: invalid port name: bad_name (must be a DNS-1123 label)`,
			"spec.ports[http]: port number 0 must be in the range 1..65535",
			`spec.labels: invalid tag value: "bad value!"`,
			`spec.serviceAccount: invalid service account name "Bad_SA"`,
		}},
	})
}

func TestValidateWorkloadGroup(t *testing.T) {
	tcpProbe := func(p uint32) *networking.ReadinessProbe {
		return &networking.ReadinessProbe{HealthCheckMethod: &networking.ReadinessProbe_TcpSocket{TcpSocket: &networking.TCPHealthCheckConfig{Port: p}}}
	}
	netRun(t, validation.ValidateWorkloadGroup, []netCase{
		{name: "valid", spec: &networking.WorkloadGroup{
			Metadata: &networking.WorkloadGroup_ObjectMeta{Labels: map[string]string{"app": "vm"}, Annotations: map[string]string{"a/b": "c"}},
			Template: &networking.WorkloadEntry{Ports: map[string]uint32{"http": 8080}, ServiceAccount: "vm"},
			Probe: &networking.ReadinessProbe{PeriodSeconds: 5, HealthCheckMethod: &networking.ReadinessProbe_HttpGet{
				HttpGet: &networking.HTTPHealthCheckConfig{Path: "/ready", Port: 8080, Scheme: "HTTP"},
			}},
		}},
		{name: "template required", spec: &networking.WorkloadGroup{}, errs: []string{"spec.template: template is required"}},
		{name: "template address and labels warn", spec: &networking.WorkloadGroup{
			Template: &networking.WorkloadEntry{Address: "1.1.1.1", Labels: map[string]string{"a": "b"}},
		}, warns: []string{"spec.template.address: address should not be set in a template", "spec.template.labels: labels should not be set"}},
		{name: "metadata", spec: &networking.WorkloadGroup{
			Metadata: &networking.WorkloadGroup_ObjectMeta{Labels: map[string]string{"bad key!": "v"}, Annotations: map[string]string{"bad key!": "v"}},
			Template: &networking.WorkloadEntry{},
		}, errs: []string{`spec.metadata.labels: invalid labels: invalid tag key: "bad key!"`, "spec.metadata.annotations: "}},
		{name: "probe", spec: &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}, Probe: &networking.ReadinessProbe{
			PeriodSeconds: -1, HealthCheckMethod: &networking.ReadinessProbe_HttpGet{HttpGet: &networking.HTTPHealthCheckConfig{
				Port: 0, Scheme: "FTP", HttpHeaders: []*networking.HTTPHeader{{Name: "bad header"}},
			}},
		}}, errs: []string{
			"spec.probe.periodSeconds: periodSeconds must be non-negative",
			"spec.probe.httpGet.port: port number 0 must be in the range 1..65535",
			`spec.probe.httpGet.scheme: httpGet.scheme must be one of "HTTPS", "HTTP" (got "FTP")`,
			`spec.probe.httpGet.httpHeaders[0].name: header name bad header is not a valid header name`,
		}},
		{name: "probe without method", spec: &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}, Probe: &networking.ReadinessProbe{}},
			errs: []string{"spec.probe: unknown health check method <nil> (set one of httpGet, tcpSocket, exec or grpc)"}},
		{name: "tcp probe port and empty exec", spec: &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}, Probe: tcpProbe(70000)},
			errs: []string{"spec.probe.tcpSocket.port: port number 70000"}},
		{name: "exec probe needs a command", spec: &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}, Probe: &networking.ReadinessProbe{
			HealthCheckMethod: &networking.ReadinessProbe_Exec{Exec: &networking.ExecHealthCheckConfig{}},
		}}, errs: []string{"spec.probe.exec.command: exec.command is required"}},
	})
}
