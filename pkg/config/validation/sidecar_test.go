package validation_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config/validation"
)

func scEgress(hosts ...string) *networking.IstioEgressListener {
	return &networking.IstioEgressListener{Hosts: hosts}
}

func scIngress(port uint32, endpoint string) *networking.IstioIngressListener {
	return &networking.IstioIngressListener{
		Port:            &networking.SidecarPort{Number: port, Protocol: "HTTP", Name: "http"},
		DefaultEndpoint: endpoint,
	}
}

func TestValidateSidecarValid(t *testing.T) {
	netRun(t, validation.ValidateSidecar, []netCase{
		{name: "namespace default", spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			scEgress("./*", "istio-system/*", "*/*.example.com", "~/*"),
		}}},
		{name: "full", spec: &networking.Sidecar{
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "ratings"}},
			Ingress: []*networking.IstioIngressListener{
				scIngress(9080, "127.0.0.1:8080"), scIngress(9081, "0.0.0.0:8081"), scIngress(9082, "[::1]:8082"),
				scIngress(9083, "unix:///var/run/app.sock"), scIngress(9084, ""),
			},
			Egress: []*networking.IstioEgressListener{
				{Port: &networking.SidecarPort{Number: 9080, Protocol: "HTTP", Name: "egresshttp"}, Hosts: []string{"prod-us1/*"}},
				{Port: &networking.SidecarPort{Number: 0, Name: "uds"}, Bind: "unix:///var/run/egress.sock", Hosts: []string{"*/*.svc.local"}},
				scEgress("istio-system/*"),
			},
			OutboundTrafficPolicy: &networking.OutboundTrafficPolicy{
				Mode:        networking.OutboundTrafficPolicy_ALLOW_ANY,
				EgressProxy: &networking.Destination{Host: "egress.example.com", Port: &networking.PortSelector{Number: 443}},
			},
		}},
		{name: "outbound policy only", spec: &networking.Sidecar{OutboundTrafficPolicy: &networking.OutboundTrafficPolicy{}}},
	})
}

func TestValidateSidecarInvalid(t *testing.T) {
	netRun(t, validation.ValidateSidecar, []netCase{
		{name: "empty", spec: &networking.Sidecar{}, errs: []string{"spec: sidecar: empty configuration provided"}},
		{name: "egress hosts", spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			scEgress("foo.com", "Bad_NS/*", "ns/foo", "ns/*foo.com", "/a.com"),
		}}, errs: []string{
			`spec.egress[0].hosts[0]: invalid egress host "foo.com": host must be of form namespace/dnsName`,
			`spec.egress[0].hosts[1]: invalid egress host "Bad_NS/*": invalid namespace value "Bad_NS" in sidecar`,
			`spec.egress[0].hosts[2]: invalid egress host "ns/foo": short names (non FQDN) are not allowed`,
			`spec.egress[0].hosts[3]: invalid egress host "ns/*foo.com": partial wildcard "*foo.com" not allowed`,
			`spec.egress[0].hosts[4]: invalid egress host "/a.com": config namespace and dnsName in host entry cannot be empty`,
		}},
		{name: "egress without hosts", spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{{}}},
			errs: []string{"spec.egress[0].hosts: sidecar: egress listener must contain at least one host"}},
		{name: "catch-all listeners", spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			scEgress("*/*"), scEgress("ns/*"),
		}}, errs: []string{
			"spec.egress[0]: sidecar: the egress listener with empty port should be the last listener in the list",
			"spec.egress[1]: sidecar: egress can have only one listener with empty port",
		}},
		{name: "egress ports", spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			{Port: &networking.SidecarPort{Number: 80, Protocol: "FTP"}, Bind: "not-an-ip", Hosts: []string{"*/*"}},
			{Port: &networking.SidecarPort{Number: 80, Protocol: "HTTP"}, Hosts: []string{"ns/*"}},
			{Port: &networking.SidecarPort{Number: 0}, Bind: "10.0.0.1", CaptureMode: networking.CaptureMode_IPTABLES, Hosts: []string{"ns/*"}},
		}}, errs: []string{
			`spec.egress[0].port.protocol: unsupported protocol: FTP (supported: HTTP, HTTPS, HTTP2, GRPC, GRPC-WEB, HTTP_PROXY, TCP, TLS, MONGO, REDIS, MYSQL, UDP)`,
			`spec.egress[0].bind: not-an-ip is not a valid IP`,
			"spec.egress[1].port.number: sidecar: ports on IP bound listeners must be unique (duplicate 80)",
			"spec.egress[2].bind: sidecar: ports with 0 value must have a unix domain socket bind address",
			"spec.egress[2].captureMode: sidecar: captureMode must be DEFAULT/NONE for unix domain socket listeners",
		}},
		{name: "ingress", spec: &networking.Sidecar{Ingress: []*networking.IstioIngressListener{
			{}, nil, scIngress(8080, "10.0.0.1:80"), scIngress(8080, "127.0.0.1:http"), scIngress(0, "unix://rel"),
		}}, errs: []string{
			"spec.ingress[0].port: sidecar: port is required for ingress listeners",
			"spec.ingress[1]: sidecar: ingress may not be null",
			`spec.ingress[2].defaultEndpoint: sidecar: defaultEndpoint must be of form 127.0.0.1:<port>,0.0.0.0:<port>,[::1]:port,[::]:port,unix://filepath or unset`,
			"spec.ingress[3].port.number: sidecar: ports on IP bound listeners must be unique (duplicate 8080)",
			`spec.ingress[3].defaultEndpoint: sidecar: defaultEndpoint port (http) is not a number: strconv.Atoi: parsing "http": invalid syntax`,
			"spec.ingress[4].port.number: port number 0 must be in the range 1..65535",
			`spec.ingress[4].defaultEndpoint: unix address rel is not an absolute path to a file`,
		}},
		{name: "ingress tls", spec: &networking.Sidecar{Ingress: []*networking.IstioIngressListener{{
			Port: &networking.SidecarPort{Number: 443, Protocol: "HTTPS", Name: "https"},
			Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_ISTIO_MUTUAL, HttpsRedirect: true,
				SubjectAltNames: []string{"a"}},
		}}}, errs: []string{
			"spec.ingress[0].tls.mode: configuration is invalid: cannot set mode to ISTIO_MUTUAL in sidecar ingress tls",
			"spec.ingress[0].tls.httpsRedirect: sidecar: httpsRedirect is not supported",
			"spec.ingress[0].tls.subjectAltNames: sidecar: subjectAltNames is not supported in ingress tls",
		}},
		{name: "egress proxy needs ALLOW_ANY", spec: &networking.Sidecar{OutboundTrafficPolicy: &networking.OutboundTrafficPolicy{
			EgressProxy: &networking.Destination{Host: "egress.example.com"},
		}}, errs: []string{"spec.outboundTrafficPolicy.egressProxy: sidecar: egress_proxy must be set only with ALLOW_ANY outbound_traffic_policy mode"}},
		{name: "egress proxy port", spec: &networking.Sidecar{OutboundTrafficPolicy: &networking.OutboundTrafficPolicy{
			Mode: networking.OutboundTrafficPolicy_ALLOW_ANY, EgressProxy: &networking.Destination{Host: "egress.example.com"},
		}}, errs: []string{"spec.outboundTrafficPolicy.egressProxy.port: sidecar: egress_proxy port must be non-nil"}},
		{name: "selector", spec: &networking.Sidecar{
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "*"}},
			Egress:           []*networking.IstioEgressListener{scEgress("*/*")},
		}, errs: []string{`spec.workloadSelector.labels[app]: wildcard is not supported in selector: "app=*"`}},
		// Istio rejects empty keys and wildcards in selectors, not labels
		// that are no Kubernetes labels.
		{name: "selector label syntax warns", spec: &networking.Sidecar{
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "bad value!", "bad key!": "x"}},
			Egress:           []*networking.IstioEgressListener{scEgress("*/*")},
		}, warns: []string{
			`spec.workloadSelector.labels[app]: invalid label value "bad value!"`,
			`spec.workloadSelector.labels[bad key!]: invalid label key "bad key!"`,
		}},
		{name: "empty selector key", spec: &networking.Sidecar{
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"": "x"}},
			Egress:           []*networking.IstioEgressListener{scEgress("*/*")},
		}, errs: []string{`spec.workloadSelector.labels: empty key is not supported in selector: "=x"`}},
		{name: "duplicate hosts warn", spec: &networking.Sidecar{Egress: []*networking.IstioEgressListener{
			scEgress("ns/*", "ns/a.com", "*/*"),
		}}, warns: []string{
			"spec.egress[0].hosts[1]: duplicated egress host: ns/a.com",
			"spec.egress[0].hosts: `*/*` host select all resources, no other hosts can be added",
		}},
		{name: "empty selector and http pool on tcp warn", spec: &networking.Sidecar{
			WorkloadSelector: &networking.WorkloadSelector{},
			Ingress: []*networking.IstioIngressListener{{
				Port:           &networking.SidecarPort{Number: 5432, Protocol: "TCP", Name: "pg"},
				ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxRetries: 1}},
			}},
		}, warns: []string{
			"spec.workloadSelector: sidecar: workload selector specified without labels",
			`spec.ingress[0].connectionPool.http: sidecar: HTTP connection pool settings are configured for port 5432 ("pg")`,
		}},
	})
}
