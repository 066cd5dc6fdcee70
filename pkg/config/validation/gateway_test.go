package validation_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/validation"
)

func gwServer(port uint32, protocol, name string, tls *networking.ServerTLSSettings, hosts ...string) *networking.Server {
	return &networking.Server{Port: &networking.Port{Number: port, Protocol: protocol, Name: name}, Hosts: hosts, Tls: tls}
}

func gwSpec(servers ...*networking.Server) *networking.Gateway {
	return &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: servers}
}

func gwSimple(t *networking.ServerTLSSettings) *networking.Gateway {
	return gwSpec(gwServer(443, "HTTPS", "https", t, "a.example.com"))
}

func TestValidateGatewayValid(t *testing.T) {
	netRun(t, validation.ValidateGateway, []netCase{
		{name: "http and https", spec: gwSpec(
			gwServer(80, "HTTP", "http", &networking.ServerTLSSettings{HttpsRedirect: true}, "*"),
			gwServer(443, "https", "https", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "cert"},
				"ns1/a.example.com", "./b.example.com", "*/*.example.com"),
		)},
		{name: "mutual with files", spec: gwSimple(&networking.ServerTLSSettings{
			Mode: networking.ServerTLSSettings_MUTUAL, ServerCertificate: "/c.pem", PrivateKey: "/k.pem", CaCertificates: "/ca.pem",
		})},
		{name: "passthrough and tcp", spec: gwSpec(
			gwServer(443, "TLS", "tls", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_PASSTHROUGH}, "a.example.com"),
			gwServer(15443, "TLS", "mtls", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_AUTO_PASSTHROUGH}, "*.local"),
			gwServer(27017, "MONGO", "mongo", nil, "db.example.com"),
			gwServer(8080, "GRPC", "grpc", nil, "10.0.0.1"),
		)},
	})
}

func TestValidateGatewayInvalid(t *testing.T) {
	netRun(t, validation.ValidateGateway, []netCase{
		{name: "no servers", spec: &networking.Gateway{}, errs: []string{"spec.servers: gateway must have at least one server"}},
		{name: "null server", spec: gwSpec(nil), errs: []string{"spec.servers[0]: server may not be nil"}},
		{name: "server without hosts and port", spec: gwSpec(&networking.Server{}), errs: []string{
			"spec.servers[0].hosts: server config must contain at least one host",
			"spec.servers[0].port: port is required",
		}},
		{name: "port problems", spec: gwSpec(&networking.Server{
			Port: &networking.Port{Number: 0, Protocol: "FTP", TargetPort: 8080}, Hosts: []string{"a.com"},
		}), errs: []string{
			`spec.servers[0].port.protocol: invalid protocol "FTP"`,
			"spec.servers[0].port.number: port number 0 must be in the range 1..65535",
			"spec.servers[0].port.targetPort: targetPort has no impact on Gateways",
			"spec.servers[0].port.name: port name must be set",
		}},
		{name: "bad hosts", spec: gwSpec(gwServer(80, "HTTP", "http", nil, "foo", "Bad_NS/a.com", "ns/*foo.com", "~/a.com")),
			errs: []string{
				`spec.servers[0].hosts[0]: short names (non FQDN) are not allowed: "foo"`,
				`spec.servers[0].hosts[1]: host "Bad_NS/a.com": invalid namespace value "Bad_NS" in gateway`,
				`spec.servers[0].hosts[2]: host "ns/*foo.com": partial wildcard "*foo.com" not allowed`,
				`spec.servers[0].hosts[3]: host "~/a.com": invalid namespace value "~" in gateway`,
			}},
		{name: "duplicate port names", spec: gwSpec(gwServer(80, "HTTP", "web", nil, "a.com"), gwServer(8080, "HTTP", "web", nil, "b.com")),
			errs: []string{"spec.servers[1].port.name: port names in servers must be unique: duplicate name web"}},
		{name: "https without tls", spec: gwSimple(nil),
			errs: []string{"spec.servers[0].tls: server must have TLS settings for HTTPS/TLS protocols"}},
		{name: "tls on tcp", spec: gwSpec(gwServer(9000, "TCP", "tcp", &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "c"}, "a.com")),
			errs: []string{"spec.servers[0].tls: server cannot have TLS settings for non HTTPS/TLS ports"}},
		{name: "certificates on plain http", spec: gwSpec(gwServer(80, "HTTP", "http", &networking.ServerTLSSettings{HttpsRedirect: true, ServerCertificate: "/c"}, "a.com")),
			errs: []string{"spec.servers[0].tls: server cannot have TLS settings for plain text HTTP ports"}, anyWarn: true},
		{name: "simple without certificates", spec: gwSimple(&networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE}),
			errs: []string{
				"spec.servers[0].tls.serverCertificate: SIMPLE TLS requires a server certificate",
				"spec.servers[0].tls.privateKey: SIMPLE TLS requires a private key",
			}},
		{name: "mutual without CA", spec: gwSimple(&networking.ServerTLSSettings{
			Mode: networking.ServerTLSSettings_MUTUAL, ServerCertificate: "/c", PrivateKey: "/k",
		}), errs: []string{"spec.servers[0].tls.caCertificates: MUTUAL TLS requires a client CA bundle"}},
		{name: "two certificate sources", spec: gwSimple(&networking.ServerTLSSettings{
			Mode: networking.ServerTLSSettings_SIMPLE, ServerCertificate: "/c", PrivateKey: "/k", CredentialName: "cert",
		}), errs: []string{"spec.servers[0].tls: only one of credential_name, credential_names, server_certificate/private_key, tls_certificates should be specified"}},
		{name: "istio mutual with credential", spec: gwSimple(&networking.ServerTLSSettings{
			Mode: networking.ServerTLSSettings_ISTIO_MUTUAL, CredentialName: "cert",
		}), errs: []string{"spec.servers[0].tls.credentialName: ISTIO_MUTUAL TLS cannot have associated credentialName"}},
		{name: "bad unix bind", spec: gwSpec(&networking.Server{
			Port: &networking.Port{Number: 80, Protocol: "HTTP", Name: "h"}, Hosts: []string{"a.com"}, Bind: "unix://relative",
		}), errs: []string{
			`spec.servers[0].bind: unix address relative is not an absolute path to a file`,
			`spec.servers[0].port.number: port number must be 0 for unix domain socket: bind "unix://relative"`,
		}},
		// Istio does not check the syntax of selector labels.
		{name: "bad selector warns", spec: &networking.Gateway{Selector: map[string]string{"app": "bad value!"},
			Servers: []*networking.Server{gwServer(80, "HTTP", "http", nil, "a.com")}},
			warns: []string{`spec.selector: invalid label value "bad value!"`, "the selector matches no workload"}},
		{name: "httpsRedirect on tls server warns", spec: gwSpec(gwServer(443, "TLS", "tls",
			&networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_PASSTHROUGH, HttpsRedirect: true}, "a.com")),
			warns: []string{"spec.servers[0].tls.httpsRedirect: tls.httpsRedirect should only be used with http servers"}},
		{name: "passthrough with certs and bad ciphers warn", spec: gwSpec(gwServer(443, "TLS", "tls",
			&networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_PASSTHROUGH, ServerCertificate: "/c", CipherSuites: []string{"NOPE"}}, "a.com")),
			warns: []string{
				"spec.servers[0].tls: PASSTHROUGH mode does not use certificates, they will be ignored",
				"spec.servers[0].tls.cipherSuites: ignoring invalid cipher suites: [NOPE]",
			}},
		// Istio's list leaves out BoringSSL's PSK suites, which the listeners
		// drop; each list is sorted, an entry once, in Istio's words.
		{name: "psk, unknown and repeated ciphers warn", spec: gwSimple(&networking.ServerTLSSettings{
			Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "cert", CipherSuites: []string{
				"PSK-AES256-CBC-SHA", "ECDHE-PSK-CHACHA20-POLY1305", "AES128-SHA", "ZZZ", "PSK-AES256-CBC-SHA", "AES128-SHA", "AES128-SHA", "!aNULL"},
		}), warns: []string{
			"spec.servers[0].tls.cipherSuites: ignoring invalid cipher suites: [ECDHE-PSK-CHACHA20-POLY1305 PSK-AES256-CBC-SHA ZZZ]",
			"spec.servers[0].tls.cipherSuites: ignoring duplicate cipher suites: [AES128-SHA]",
		}},
		{name: "each psk cipher warns", spec: gwSimple(&networking.ServerTLSSettings{
			Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "cert", CipherSuites: []string{
				"ECDHE-PSK-AES128-CBC-SHA", "ECDHE-PSK-AES256-CBC-SHA", "ECDHE-PSK-CHACHA20-POLY1305", "PSK-AES128-CBC-SHA", "PSK-AES256-CBC-SHA"},
		}), warns: []string{"spec.servers[0].tls.cipherSuites: ignoring invalid cipher suites: " +
			"[ECDHE-PSK-AES128-CBC-SHA ECDHE-PSK-AES256-CBC-SHA ECDHE-PSK-CHACHA20-POLY1305 PSK-AES128-CBC-SHA PSK-AES256-CBC-SHA]"}},
	})
}

func TestValidateGatewayName(t *testing.T) {
	spec := gwSpec(gwServer(80, "HTTP", "http", nil, "a.com"))
	_, err := validation.ValidateGateway(config.Config{Meta: config.Meta{Name: "my.gateway", Namespace: "default"}, Spec: spec})
	netExpect(t, "error", err, []string{`metadata.name: invalid gateway name: "my.gateway"`})
	_, err = validation.ValidateGateway(config.Config{Meta: config.Meta{
		Name: "my.gateway", Namespace: "default",
		Annotations: map[string]string{"internal.istio.io/gateway-semantics": "gateway"},
	}, Spec: spec})
	netExpect(t, "error", err, nil)
}
