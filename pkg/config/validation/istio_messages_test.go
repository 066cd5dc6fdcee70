package validation_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/validation"
)

// istioCase is an object (its spec as YAML) and the reason texts Istio
// 1.31's validation gives for it (pkg/config/validation, its agent and
// envoyfilter packages, pkg/config/security, pkg/config/labels): each must
// appear verbatim in one of our errors (or warnings), a field path in front
// being ours. The inputs follow Istio's own tests
// (pkg/config/validation/validation_test.go).
type istioCase struct {
	name        string
	kind        config.GroupVersionKind
	objName     string // default "test"
	labels      map[string]string
	annotations map[string]string
	spec        string
	errs        []string
	warns       []string
}

func runIstioCases(t *testing.T, cases []istioCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sch, ok := collections.Pilot.FindByGroupKind(tc.kind)
			if !ok {
				t.Fatalf("no schema for %v", tc.kind)
			}
			spec, err := sch.NewInstance()
			if err != nil {
				t.Fatal(err)
			}
			js, err := yaml.YAMLToJSON([]byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			if dropped, err := config.ApplyJSON(spec, js); err != nil || len(dropped) > 0 {
				t.Fatalf("decoding the spec: %v (dropped %v)", err, dropped)
			}
			name := tc.objName
			if name == "" {
				name = "test"
			}
			cfg := config.Config{Meta: config.Meta{GroupVersionKind: tc.kind, Name: name, Namespace: "default",
				Labels: tc.labels, Annotations: tc.annotations}, Spec: spec}
			warn, verr := sch.ValidateConfig(cfg)
			expectContains(t, "error", verr, tc.errs)
			expectContains(t, "warning", warn, tc.warns)
		})
	}
}

func expectContains(t *testing.T, what string, got error, want []string) {
	t.Helper()
	var lines []string
	for _, p := range validation.Problems(got) {
		lines = append(lines, p.Error())
	}
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l, w)
		}
		if !found {
			t.Errorf("no %s holds Istio's %q; got:\n  %s", what, w, strings.Join(lines, "\n  "))
		}
	}
}

func TestIstioMessagesGateway(t *testing.T) {
	gw := gvk.Gateway
	runIstioCases(t, []istioCase{
		{name: "name with dots", kind: gw, objName: "my.gateway", spec: `{servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]}`,
			errs: []string{`invalid gateway name: "my.gateway"`}},
		{name: "no servers", kind: gw, spec: `{}`, errs: []string{"gateway must have at least one server"}},
		{name: "server problems", kind: gw, spec: `
servers:
- port: {number: 0, protocol: FTP}
- port: {number: 80, name: http, protocol: HTTP, targetPort: 8080}
  hosts: ["a.example.com"]`, errs: []string{
			"server config must contain at least one host",
			`invalid protocol "FTP", supported protocols are HTTP, HTTP2, GRPC, GRPC-WEB, MONGO, REDIS, MYSQL, TCP`,
			"port number 0 must be in the range 1..65535",
			"port name must be set",
			"targetPort has no impact on Gateways",
		}},
		{name: "hosts", kind: gw, spec: `
servers:
- port: {number: 80, name: http, protocol: HTTP}
  hosts: ["foo", "Bad_NS/a.com", "ns/*foo.com", "/a.com", "ns/a_b.com", "*.1.2.3"]`, errs: []string{
			"short names (non FQDN) are not allowed",
			`invalid namespace value "Bad_NS" in gateway`,
			`partial wildcard "*foo.com" not allowed`,
			"config namespace and dnsName in host entry cannot be empty",
			`domain name "a_b.com" invalid (label "a_b" invalid)`,
			`domain name "1.2.3" invalid (top level domain "3" cannot be all-numeric)`,
		}},
		{name: "duplicate port names", kind: gw, spec: `
servers:
- {port: {number: 80, name: web, protocol: HTTP}, hosts: [a.com]}
- {port: {number: 8080, name: web, protocol: HTTP}, hosts: [b.com]}`,
			errs: []string{"port names in servers must be unique: duplicate name web"}},
		{name: "bind", kind: gw, spec: `
servers:
- {port: {number: 80, name: a, protocol: HTTP}, hosts: [a.com], bind: "unix://relative"}
- {port: {number: 81, name: b, protocol: HTTP}, hosts: [a.com], bind: "not-an-ip"}`, errs: []string{
			"relative is not an absolute path to a file",
			"port number must be 0 for unix domain socket",
			"not-an-ip is not a valid IP",
		}},
		{name: "tls on plain ports", kind: gw, spec: `
servers:
- {port: {number: 443, name: a, protocol: HTTPS}, hosts: [a.com]}
- {port: {number: 80, name: b, protocol: HTTP}, hosts: [a.com], tls: {httpsRedirect: true, serverCertificate: /c}}
- {port: {number: 90, name: c, protocol: TCP}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: c}}
- {port: {number: 443, name: d, protocol: TLS}, hosts: [a.com], tls: {httpsRedirect: true, mode: PASSTHROUGH}}`, errs: []string{
			"server must have TLS settings for HTTPS/TLS protocols",
			"server cannot have TLS settings for plain text HTTP ports",
			"server cannot have TLS settings for non HTTPS/TLS ports",
		}, warns: []string{"tls.httpsRedirect should only be used with http servers"}},
		{name: "istio mutual", kind: gw, spec: `
servers:
- port: {number: 443, name: a, protocol: HTTPS}
  hosts: [a.com]
  tls: {mode: ISTIO_MUTUAL, serverCertificate: /c, privateKey: /k, caCertificates: /ca, credentialName: x, credentialNames: [yy],
        tlsCertificates: [{serverCertificate: /c, privateKey: /k}]}`, errs: []string{
			"ISTIO_MUTUAL TLS cannot have associated server certificate",
			"ISTIO_MUTUAL TLS cannot have associated private key",
			"ISTIO_MUTUAL TLS cannot have associated CA bundle",
			"ISTIO_MUTUAL TLS cannot have associated tlsCertificates",
			"ISTIO_MUTUAL TLS cannot have associated credentialName",
			"ISTIO_MUTUAL TLS cannot have associated credentialNames",
		}},
		{name: "certificates", kind: gw, spec: `
servers:
- {port: {number: 443, name: a, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE}}
- {port: {number: 444, name: b, protocol: HTTPS}, hosts: [a.com], tls: {mode: MUTUAL, serverCertificate: /c, privateKey: /k}}
- {port: {number: 445, name: c, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: x, serverCertificate: /c, privateKey: /k}}
- {port: {number: 446, name: d, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: x, caCrl: /crl}}
- {port: {number: 447, name: e, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, serverCertificate: /c, privateKey: /k, caCrl: /crl}}
- port: {number: 448, name: f, protocol: HTTPS}
  hosts: [a.com]
  tls: {mode: SIMPLE, tlsCertificates: [{serverCertificate: /a, privateKey: /a}, {serverCertificate: /b, privateKey: /b}, {serverCertificate: /c, privateKey: /c}]}`,
			errs: []string{
				"SIMPLE TLS requires a server certificate",
				"SIMPLE TLS requires a private key",
				"MUTUAL TLS requires a client CA bundle",
				"only one of credential_name, credential_names, server_certificate/private_key, tls_certificates should be specified",
				"CRL is not supported with credentialName. CRL has to be specified in the credential",
				"CRL is not supported with SIMPLE TLS",
			}, warns: []string{"SIMPLE TLS can support up to 2 server certificates"}},
		{name: "tls warnings", kind: gw, spec: `
servers:
- port: {number: 443, name: a, protocol: HTTPS}
  hosts: [a.com]
  tls: {mode: SIMPLE, credentialName: x, minProtocolVersion: TLSV1_0}
- port: {number: 444, name: b, protocol: HTTPS}
  hosts: [a.com]
  tls: {mode: SIMPLE, credentialName: x, cipherSuites: [NOPE, ECDHE-RSA-AES128-GCM-SHA256, ECDHE-RSA-AES128-GCM-SHA256]}
- port: {number: 445, name: c, protocol: TLS}
  hosts: [a.com]
  tls: {mode: PASSTHROUGH, credentialName: x}`, warns: []string{
			"TLS version below TLSV1_2 require setting compatible ciphers as by default they no longer include compatible ciphers.",
			"ignoring invalid cipher suites: [NOPE]",
			"ignoring duplicate cipher suites: [ECDHE-RSA-AES128-GCM-SHA256]",
			"PASSTHROUGH mode does not use certificates, they will be ignored",
		}},
	})
}

func TestIstioMessagesDestinationRule(t *testing.T) {
	dr := gvk.DestinationRule
	runIstioCases(t, []istioCase{
		{name: "host", kind: dr, spec: `{host: ""}`, errs: []string{"empty domain name not allowed"}},
		{name: "bad host", kind: dr, spec: `{host: "a_b.com"}`, errs: []string{`domain name "a_b.com" invalid (label "a_b" invalid)`}},
		{name: "subsets", kind: dr, spec: `
host: reviews
subsets:
- {name: v1}
- {name: v1}
- {name: ""}
- {name: "V_2"}
- {name: v3, labels: {"bad key!": x, version: "not valid!"}}`, errs: []string{
			"duplicate subset names: v1",
			"subset name cannot be empty",
			"subset name is invalid: V_2",
			`invalid tag key: "bad key!"`,
			`invalid tag value: "not valid!"`,
		}},
		{name: "traffic policy", kind: dr, spec: `{host: reviews, trafficPolicy: {}}`, errs: []string{"traffic policy must have at least one field"}},
		{name: "tunnel and proxy protocol", kind: dr, spec: `
host: reviews
trafficPolicy: {tunnel: {protocol: CONNECT, targetHost: a.com, targetPort: 80}, proxyProtocol: {}}`,
			errs: []string{"tunnel and proxyProtocol must not be set together"}},
		{name: "tunnel", kind: dr, spec: `
host: reviews
trafficPolicy: {tunnel: {protocol: GET, targetHost: "a_b", targetPort: 0}}`, errs: []string{
			`tunnel protocol must be "CONNECT" or "POST"`,
			`tunnel target host must be valid FQDN or IP address: domain name "a_b" invalid (label "a_b" invalid); a_b is not a valid IP`,
			"tunnel target port is invalid: port number 0 must be in the range 1..65535",
		}},
		{name: "connection pool", kind: dr, spec: `
host: reviews
trafficPolicy:
  connectionPool:
    http: {http1MaxPendingRequests: -1, http2MaxRequests: -1, maxRequestsPerConnection: -1, maxRetries: -1, maxConcurrentStreams: -1,
           h2UpgradePolicy: UPGRADE, useClientProtocol: true, http2KeepAlive: {}}
    tcp: {maxConnections: -1}`, errs: []string{
			"http1 max pending requests must be non-negative",
			"http2 max requests must be non-negative",
			"max requests per connection must be non-negative",
			"max retries must be non-negative",
			"max concurrent streams must be non-negative",
			"use client protocol must not be true when H2UpgradePolicy is UPGRADE",
			"http2 keepalive interval is required",
			"http2 keepalive timeout is required",
			"max connections must be non-negative",
		}},
		{name: "empty connection pool", kind: dr, spec: `{host: reviews, trafficPolicy: {connectionPool: {}}}`,
			errs: []string{"connection pool must have at least one field"}},
		{name: "durations", kind: dr, spec: `
host: reviews
trafficPolicy: {connectionPool: {tcp: {connectTimeout: 0.0001s, maxConnectionDuration: 1.0005s}}}`, errs: []string{
			"duration must be greater than 1ms",
			"only durations to ms precision are supported",
		}},
		{name: "outlier detection", kind: dr, spec: `
host: reviews
trafficPolicy:
  outlierDetection: {consecutiveErrors: 5, consecutiveLocalOriginFailures: 3, maxEjectionPercent: 150, minHealthPercent: -1}`,
			errs: []string{
				"outlier detection consecutive local origin failures is specified, but split external local origin errors is set to false",
				"percentage 150 is not in range 0..100",
				"percentage -1 is not in range 0..100",
			}, warns: []string{"outlier detection consecutive errors is deprecated, use consecutiveGatewayErrors or consecutive5xxErrors instead"}},
		{name: "load balancer", kind: dr, spec: `
host: reviews
trafficPolicy:
  loadBalancer:
    consistentHash:
      httpCookie: {ttl: 0s, attributes: [{name: ""}, {name: a}, {name: a}]}
      minimumRingSize: 1024
      maglev: {tableSize: 10}`, errs: []string{
			"name required for HttpCookie",
			"cookie attribute name cannot be empty",
			"duplicate cookie attribute name: a",
			"only one of MinimumRingSize or Maglev/Ringhash can be specified",
			"tableSize must be a prime number for maglev",
		}, warns: []string{"consistent hash MinimumRingSize is deprecated, use ConsistentHashLB's RingHash configuration instead"}},
		{name: "maglev bounds", kind: dr, spec: `
host: reviews
trafficPolicy: {loadBalancer: {consistentHash: {useSourceIp: true, maglev: {tableSize: 5000011}}}}`,
			errs: []string{"tableSize must be less than 5000011 for maglev"}},
		{name: "warmup", kind: dr, spec: `
host: reviews
trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN, warmup: {minimumPercent: 150, aggression: 0}}}`, errs: []string{
			"duration is required",
			"minimumPercent value should be less than or equal to 100",
			"aggression should be greater than 0",
		}},
		{name: "locality", kind: dr, spec: `
host: reviews
trafficPolicy:
  outlierDetection: {interval: 1s}
  loadBalancer:
    localityLbSetting:
      distribute:
      - {from: "a/b/*", to: {"a/b": 50, "c/*": 40}}
      - {from: "x/*/z", to: {"a": 100}}`, errs: []string{
			"total locality weight 90 != 100",
			"locality x/*/z wildcard '*' number can not exceed 1 and must be in the end",
		}},
		{name: "locality failover", kind: dr, spec: `
host: reviews
trafficPolicy:
  loadBalancer:
    localityLbSetting:
      failoverPriority: [topology.kubernetes.io/zone]
      failover: [{from: a, to: a}]`, errs: []string{
			"can not simultaneously set 'failover' and topology label 'topology.kubernetes.io/zone' in 'failover_priority'",
		}},
		{name: "locality failover regions", kind: dr, spec: `
host: reviews
trafficPolicy:
  loadBalancer:
    localityLbSetting:
      failover: [{from: a, to: a}, {from: a/b, to: c}, {from: "*", to: c}]`, errs: []string{
			"locality lb failover settings must specify different regions",
			"locality lb failover only specify region",
			"locality lb failover region should not contain '*' wildcard",
		}, warns: []string{"outlier detection policy must be provided for failover"}},
		{name: "distribute and failover", kind: dr, spec: `
host: reviews
trafficPolicy:
  loadBalancer:
    localityLbSetting:
      distribute: [{from: a, to: {b: 100}}]
      failover: [{from: a, to: b}]`, errs: []string{"can not simultaneously specify 'distribute' and 'failover'"}},
		{name: "zone aware", kind: dr, spec: `
host: reviews
trafficPolicy:
  outlierDetection: {interval: 1s}
  loadBalancer:
    localityLbSetting: {enabled: true}
    zoneAwareLbSetting:
      failoverPriority: [topology.kubernetes.io/region]
      failover: [{from: a, to: a}, {from: a/b, to: c}, {from: "*", to: c}]`, errs: []string{
			"only one of localityLbSetting and zoneAwareLbSetting can be set",
			"'failover_priority' for zone aware lb must not use topology label 'topology.kubernetes.io/region'; region- and zone-level routing are handled automatically",
			"zone aware lb failover settings must specify different regions",
			"zone aware lb failover only specifies region; zone and subzone failover are handled automatically",
			"zone aware lb failover region should not contain '*' wildcard",
		}},
		{name: "port level settings", kind: dr, spec: `
host: reviews
trafficPolicy: {portLevelSettings: [{loadBalancer: {simple: ROUND_ROBIN}}, {port: {number: 80}}]}`, errs: []string{
			"portTrafficPolicy must have valid port",
			"port traffic policy must have at least one field",
		}},
		{name: "client tls", kind: dr, spec: `
host: reviews
trafficPolicy:
  portLevelSettings:
  - {port: {number: 1}, tls: {mode: SIMPLE, insecureSkipVerify: true, caCertificates: /ca}}
  - {port: {number: 2}, tls: {mode: MUTUAL, insecureSkipVerify: true, subjectAltNames: [a], clientCertificate: /c, privateKey: /k}}
  - {port: {number: 3}, tls: {mode: SIMPLE, credentialName: c, caCertificates: /ca}}
  - {port: {number: 4}, tls: {mode: MUTUAL}}
  - {port: {number: 5}, tls: {mode: SIMPLE, credentialName: "configmap://other/ca"}}
  - {port: {number: 6}, tls: {mode: SIMPLE, credentialName: "configmap://ca"}}`, errs: []string{
			"cannot specify CaCertificates or CredentialName or SubjectAltNames when InsecureSkipVerify is set true",
			"cannot specify CaCertificates or SubjectAltNames when InsecureSkipVerify is set true",
			"cannot specify client certificates or CA certificate or CA CRL If credentialName is set",
			"client certificate required for mutual tls",
			"private key required for mutual tls",
			`invalid configmap:// credentialName: namespace must match the configuration namespace "default"`,
			`invalid configmap:// credentialName: invalid resource name "configmap://ca". Expected namespace and name`,
		}},
		{name: "exportTo", kind: dr, spec: `{host: reviews, exportTo: [default, ".", "~", "Bad_NS", "*"]}`, errs: []string{
			"duplicate entries in exportTo: . and current namespace default",
			"exportTo ~ (none) is not allowed for Istio configuration objects",
			"only .,*, or a valid DNS 1123 label is allowed as exportTo entry",
			"cannot have both public (*) and non-public exportTo values for a resource",
		}},
		{name: "exportTo with selector", kind: dr, spec: `{host: reviews, workloadSelector: {matchLabels: {app: a}}, exportTo: [a, a]}`, errs: []string{
			"duplicate entries in exportTo for entry a",
			"destination rule with workload selector cannot have exportTo beyond current namespace",
		}},
		{name: "exportTo with selector and others", kind: dr, spec: `{host: reviews, workloadSelector: {matchLabels: {app: a}}, exportTo: [., a]}`,
			errs: []string{"destination rule with workload selector cannot have multiple entries in exportTo"}},
		{name: "selector", kind: dr, spec: `{host: reviews, workloadSelector: {matchLabels: {"": x, app: "a*"}}}`, errs: []string{
			`empty key is not supported in selector: "=x"`,
			`wildcard is not supported in selector: "app=a*"`,
		}},
		{name: "empty selector", kind: dr, spec: `{host: reviews, workloadSelector: {}}`, warns: []string{"workload selector specified without labels"}},
	})
}
