package validation_test

import (
	"testing"

	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

func TestIstioMessagesServiceEntry(t *testing.T) {
	se := gvk.ServiceEntry
	runIstioCases(t, []istioCase{
		{name: "hosts", kind: se, spec: `{ports: [{number: 80, name: http, protocol: HTTP}]}`, errs: []string{"service entry must have at least one host"}},
		{name: "bad hosts", kind: se, spec: `{hosts: ["*", "a_b.com"], ports: [{number: 80, name: http, protocol: HTTP}]}`, errs: []string{
			"invalid host *",
			`domain name "a_b.com" invalid (label "a_b" invalid)`,
		}},
		{name: "partial wildcard", kind: se, spec: `{hosts: ["*foo.com"], ports: [{number: 80, name: http, protocol: HTTP}], resolution: NONE}`,
			warns: []string{`partial wildcard "*foo.com" not allowed`}},
		{name: "selector and endpoints", kind: se, spec: `
hosts: [a.com]
workloadSelector: {labels: {app: a}}
endpoints: [{address: 1.2.3.4}]
ports: [{number: 80, name: http, protocol: HTTP}]
resolution: STATIC`, errs: []string{"only one of WorkloadSelector or Endpoints is allowed in Service Entry"}},
		{name: "selector", kind: se, spec: `{hosts: [a.com], workloadSelector: {labels: {app: "a*"}}, ports: [{number: 80, name: http, protocol: HTTP}]}`,
			errs: []string{`wildcard is not supported in selector: "app=a*"`}},
		{name: "empty selector", kind: se, spec: `{hosts: [a.com], workloadSelector: {}, ports: [{number: 80, name: http, protocol: HTTP}], resolution: STATIC}`,
			warns: []string{"service entry: workload selector specified without labels, will be applied to all services in namespace"}},
		{name: "addresses", kind: se, spec: `{hosts: [a.com], addresses: [nope, "10.0.0.0/33", "10.0.0.0/8"], ports: [{number: 80, name: http, protocol: HTTP}], resolution: DNS}`,
			errs: []string{
				"nope is not a valid IP",
				"10.0.0.0/33 is not a valid CIDR block",
				"CIDR addresses are allowed only for NONE/STATIC resolution types",
			}},
		{name: "ports", kind: se, spec: `
hosts: [a.com]
addresses: [10.0.0.1]
ports:
- {number: 80, name: http, protocol: HTTP}
- {number: 80, name: http, protocol: FTP}
- {number: 99999, name: "Bad_Name", targetPort: 70000}`, errs: []string{
			`service entry port name "http" already defined`,
			"service entry port 80 already defined",
			"unsupported protocol: FTP",
			"invalid port name: Bad_Name",
			"port number 99999 must be in the range 1..65535",
			"port number 70000 must be in the range 1..65535",
		}},
		{name: "tcp without addresses", kind: se, labels: map[string]string{"networking.istio.io/enable-autoallocate-ip": "false"},
			spec:  `{hosts: [a.com], ports: [{number: 9000, name: tcp, protocol: TCP}], resolution: DNS}`,
			warns: []string{"addresses are required for ports serving TCP (or unset) protocol when IP Autoallocation is not enabled"}},
		{name: "none with endpoints", kind: se, spec: `
hosts: [a.com]
ports: [{number: 80, name: http, protocol: HTTP}]
endpoints: [{address: 1.2.3.4}]`, errs: []string{"no endpoints should be provided for resolution type none"}},
		{name: "none with selector", kind: se, spec: `{hosts: [a.com], ports: [{number: 80, name: http, protocol: HTTP}], workloadSelector: {labels: {app: a}}}`,
			warns: []string{"workloadSelector should not be set when resolution mode is NONE"}},
		{name: "static endpoints", kind: se, spec: `
hosts: [a.com]
ports: [{number: 80, name: http, protocol: HTTP}]
resolution: STATIC
endpoints:
- {address: a.example.com}
- {address: 1.2.3.4, ports: {grpc: 8080}}
- {address: "unix://@abstract", ports: {http: 80}}
- {address: "unix://relative"}`, errs: []string{
			`endpoint address "a.example.com" is not a valid IP address`,
			"endpoint port 8080 is not defined by the service entry",
			"unix endpoint unix://@abstract must not include ports",
			"relative is not an absolute path to a file",
		}},
		{name: "dns", kind: se, spec: `
hosts: ["*.example.com"]
ports: [{number: 80, name: http, protocol: HTTP}, {number: 81, name: http2, protocol: HTTP}]
resolution: DNS`, errs: []string{
			`hosts must be FQDN or contain only prefix wildcards if no endpoints are provided for resolution mode DNS, domain name "*.example.com" invalid (label "*" invalid)`,
		}},
		{name: "dns endpoints", kind: se, spec: `
hosts: [a.com]
ports: [{number: 80, name: http, protocol: HTTP}]
resolution: DNS_ROUND_ROBIN
endpoints: [{address: "a_b.com", labels: {"bad key!": x}}, {address: b.com, ports: {"Bad_Name": 70000}}]`, errs: []string{
			`endpoint address "a_b.com" is not a valid FQDN or an IP address`,
			`invalid tag key: "bad key!"`,
			"there must only be 0 or 1 endpoint for resolution mode DNS_ROUND_ROBIN",
			"invalid port name: Bad_Name",
			"port number 70000 must be in the range 1..65535",
		}},
		{name: "dns with addresses and tcp", kind: se, spec: `
hosts: [a.com, b.com]
addresses: [10.0.0.1]
ports: [{number: 9000, name: tcp, protocol: TCP}]
resolution: DNS`, errs: []string{"multiple hosts provided with non-HTTP, non-TLS ports"},
			warns: []string{"service entry can not have more than one host specified simultaneously with address and tcp port"}},
		{name: "dynamic dns", kind: se, labels: map[string]string{"istio.io/use-waypoint": "waypoint"}, spec: `
hosts: [a.com]
addresses: [10.0.0.1]
endpoints: [{address: 1.2.3.4}]
ports: [{number: 9000, name: tcp, protocol: TCP}]
location: MESH_INTERNAL
resolution: DYNAMIC_DNS`, errs: []string{
			"host must be wildcarded for resolution mode DYNAMIC_DNS",
			"addresses cannot be set for resolution type DYNAMIC_DNS. HTTP route domains will only be generated",
			"endpoints cannot be set for resolution type DYNAMIC_DNS. Destination IP address determined from hosts",
			"only HTTP, TLS, GRPC, and HTTP2 protocols are supported for resolution type DYNAMIC_DNS",
			"location MESH_INTERNAL with resolution type DYNAMIC_DNS is not supported when using waypoints",
		}},
		{name: "exportTo", kind: se, spec: `{hosts: [a.com], ports: [{number: 80, name: http, protocol: HTTP}], exportTo: ["~", "*"]}`, errs: []string{
			"cannot have both public (*) and non-public exportTo values for a resource",
			"cannot export service entry to no one (~) and someone",
		}},
	})
}

func TestIstioMessagesSidecar(t *testing.T) {
	sc := gvk.Sidecar
	runIstioCases(t, []istioCase{
		{name: "empty", kind: sc, spec: `{}`, errs: []string{"sidecar: empty configuration provided"}},
		{name: "empty selector", kind: sc, spec: `{workloadSelector: {}, egress: [{hosts: ["*/*"]}]}`,
			warns: []string{"sidecar: workload selector specified without labels, will be applied to all services in namespace"}},
		{name: "ingress", kind: sc, spec: `
ingress:
- {}
- {port: {number: 80, protocol: HTTP, name: http, targetPort: 8080}, defaultEndpoint: "10.0.0.1:80"}
- {port: {number: 80, protocol: HTTP, name: http2}, defaultEndpoint: "127.0.0.1:http"}
- {port: {number: 81, protocol: FTP, name: "Bad_Name"}, bind: nope, defaultEndpoint: "unix://rel"}`, errs: []string{
			"sidecar: port is required for ingress listeners",
			"targetPort has no impact on Sidecars",
			"sidecar: defaultEndpoint must be of form 127.0.0.1:<port>,0.0.0.0:<port>,[::1]:port,[::]:port,unix://filepath or unset",
			"sidecar: ports on IP bound listeners must be unique",
			`sidecar: defaultEndpoint port (http) is not a number: strconv.Atoi: parsing "http": invalid syntax`,
			"unsupported protocol: FTP",
			"invalid port name: Bad_Name",
			"nope is not a valid IP",
			"rel is not an absolute path to a file",
		}},
		{name: "ingress tls", kind: sc, spec: `
ingress:
- port: {number: 443, protocol: HTTP, name: https}
  tls: {mode: ISTIO_MUTUAL, subjectAltNames: [a], httpsRedirect: true, credentialName: c, credentialNames: [d],
        tlsCertificates: [{serverCertificate: /c, privateKey: /k}]}`, errs: []string{
			"sidecar: subjectAltNames is not supported in ingress tls",
			"sidecar: httpsRedirect is not supported",
			"sidecar: credentialName is not currently supported",
			"sidecar: credentialNames is not currently supported",
			"sidecar: tls_certificates is not currently supported",
			"configuration is invalid: cannot set mode to ISTIO_MUTUAL in sidecar ingress tls",
			"server cannot have TLS settings for non HTTPS/TLS ports",
		}},
		{name: "ingress connection pool", kind: sc, spec: `
ingress: [{port: {number: 9000, protocol: TCP, name: tcp}, connectionPool: {http: {maxRetries: 1}}}]`,
			warns: []string{`sidecar: HTTP connection pool settings are configured for port 9000 ("tcp") but its protocol is not HTTP (TCP); only TCP settings will apply`}},
		{name: "egress", kind: sc, spec: `
egress:
- {hosts: ["*/*"]}
- {hosts: ["*/*"]}
- {port: {number: 80, protocol: HTTP, name: a}, hosts: []}
- {port: {number: 80, protocol: HTTP, name: b}, hosts: ["a.com", "/a.com", "Bad_NS/a.com", "ns/foo", "ns/*foo.com"]}
- {port: {number: 0, protocol: HTTP, name: c}, bind: "10.0.0.1", captureMode: IPTABLES, hosts: ["*/*"]}
- {port: {number: 0, protocol: HTTP, name: d}, bind: "unix:///a", hosts: ["*/*"]}
- {port: {number: 0, protocol: HTTP, name: e}, bind: "unix:///a", hosts: ["*/*"]}`, errs: []string{
			"sidecar: the egress listener with empty port should be the last listener in the list",
			"sidecar: egress can have only one listener with empty port",
			"sidecar: egress listener must contain at least one host",
			"sidecar: ports on IP bound listeners must be unique",
			"host must be of form namespace/dnsName",
			"config namespace and dnsName in host entry cannot be empty",
			`invalid namespace value "Bad_NS" in sidecar`,
			"short names (non FQDN) are not allowed",
			`partial wildcard "*foo.com" not allowed`,
			"sidecar: ports with 0 value must have a unix domain socket bind address",
			"sidecar: captureMode must be DEFAULT/NONE for unix domain socket listeners",
			"sidecar: unix domain socket values for listeners must be unique",
		}},
		{name: "egress host duplicates", kind: sc, spec: `{egress: [{hosts: ["*/*", "ns/a.com", "ns/a.com", "~ns/b.com"]}]}`, warns: []string{
			"duplicated egress host: ns/a.com",
			"`*/*` host select all resources, no other hosts can be added",
		}},
		{name: "outbound traffic policy", kind: sc, spec: `{outboundTrafficPolicy: {mode: REGISTRY_ONLY, egressProxy: {host: a.com}}}`,
			errs: []string{"sidecar: egress_proxy must be set only with ALLOW_ANY outbound_traffic_policy mode"}},
		{name: "egress proxy", kind: sc, spec: `{outboundTrafficPolicy: {mode: ALLOW_ANY, egressProxy: {host: "a_b", subset: "v_1"}}}`, errs: []string{
			`domain name "a_b" invalid (label "a_b" invalid)`,
			"sidecar: egress_proxy port must be non-nil",
			"subset name is invalid: v_1",
		}},
		{name: "dynamic dns", kind: sc, spec: `{outboundTrafficPolicy: {mode: 3}}`,
			errs: []string{"sidecar: ALLOW_ANY_DYNAMIC_DNS mode is only supported in MeshConfig, not in Sidecar resource"}},
	})
}

func TestIstioMessagesWorkloads(t *testing.T) {
	we, wg := gvk.WorkloadEntry, gvk.WorkloadGroup
	runIstioCases(t, []istioCase{
		{name: "address", kind: we, spec: `{}`, errs: []string{"address is required"}},
		{name: "network", kind: we, spec: `{network: n1}`, warns: []string{`address is unset with network "n1"`}},
		{name: "unix", kind: we, spec: `{address: "unix:///dir/", ports: {http: 80}}`, errs: []string{
			"/dir/ is not an absolute path to a file",
			"unix endpoint unix:///dir/ must not include ports",
		}},
		{name: "address and ports", kind: we, spec: `{address: "a_b", ports: {"@": 80, http: 99999}, labels: {"a": "b c"}}`, errs: []string{
			`endpoint address "a_b" is not a valid FQDN or an IP address`,
			"invalid port name: @",
			"port number 99999 must be in the range 1..65535",
			`invalid tag value: "b c"`,
		}},
		{name: "template", kind: wg, spec: `{}`, errs: []string{"template is required"}},
		{name: "metadata labels", kind: wg, spec: `{template: {}, metadata: {labels: {"a": "b c"}}}`,
			errs: []string{`invalid labels: invalid tag value: "b c"`}},
		{name: "probe", kind: wg, spec: `
template: {}
probe: {periodSeconds: -1, initialDelaySeconds: -1, timeoutSeconds: -1, successThreshold: -1, failureThreshold: -1,
        httpGet: {port: 0, scheme: FTP, httpHeaders: [{name: "a_b"}, {name: ""}]}}`, errs: []string{
			"periodSeconds must be non-negative",
			"initialDelaySeconds must be non-negative",
			"timeoutSeconds must be non-negative",
			"successThreshold must be non-negative",
			"failureThreshold must be non-negative",
			"port number 0 must be in the range 1..65535",
			`httpGet.scheme must be one of "HTTPS", "HTTP"`,
			"header name a_b is not a valid header name",
			"header name cannot be empty",
		}},
		{name: "tcp probe", kind: wg, spec: `{template: {}, probe: {tcpSocket: {port: 65536}}}`,
			errs: []string{"port number 65536 must be in the range 1..65535"}},
		{name: "exec probe", kind: wg, spec: `{template: {}, probe: {exec: {}}}`, errs: []string{"exec.command is required"}},
		{name: "no probe method", kind: wg, spec: `{template: {}, probe: {periodSeconds: 1}}`, errs: []string{"unknown health check method <nil>"}},
	})
}
