package validation

import (
	"fmt"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/security"
)

// gwSemanticsAnnotation marks Gateways generated from Gateway API objects,
// whose names and hosts follow Gateway API rules.
const gwSemanticsAnnotation = "internal.istio.io/gateway-semantics"

// ValidateGateway checks a Gateway.
func ValidateGateway(cfg config.Config) (Warning, error) {
	gw, ok := cfg.Spec.(*networking.Gateway)
	if !ok {
		return nil, netCannotCast("Gateway", cfg.Spec)
	}
	if gw == nil {
		gw = &networking.Gateway{}
	}
	r := &Report{}
	spec := Path("spec")
	gatewaySemantics := cfg.Annotations[gwSemanticsAnnotation] == "gateway"
	if cfg.Name != "" && !gatewaySemantics && !netIsLabel(cfg.Name) {
		r.Errorf("metadata.name", "invalid gateway name: %q (must be a DNS-1123 label, no dots)", cfg.Name)
	}
	if len(gw.GetServers()) == 0 {
		r.Errorf(spec.Field("servers"), "gateway must have at least one server")
	}
	portNames := map[string]int{}
	for i, s := range gw.GetServers() {
		sp := spec.Field("servers").Index(i)
		if s == nil {
			r.Errorf(sp, "server may not be nil")
			continue
		}
		gwCheckServer(r, sp, s, gatewaySemantics)
		if s.GetPort() == nil {
			continue
		}
		name := s.GetPort().GetName()
		if prev, dup := portNames[name]; dup && name != "" {
			r.Errorf(sp.Field("port").Field("name"), "port names in servers must be unique: duplicate name %s (also used by servers[%d])", name, prev)
		} else {
			portNames[name] = i
		}
		if s.GetTls().GetHttpsRedirect() && !netProtoIsHTTP(s.GetPort().GetProtocol()) {
			r.Warnf(sp.Field("tls").Field("httpsRedirect"), "tls.httpsRedirect should only be used with http servers")
		}
	}
	WarnSelectorLabels(r, spec.Field("selector"), gw.GetSelector())
	return r.Result()
}

// gwCheckServer validates one server: hosts, port, bind and TLS.
func gwCheckServer(r *Report, p Path, s *networking.Server, gatewaySemantics bool) {
	if len(s.GetHosts()) == 0 {
		r.Errorf(p.Field("hosts"), "server config must contain at least one host")
	}
	for i, h := range s.GetHosts() {
		r.Add(p.Field("hosts").Index(i), gwCheckHost(h, gatewaySemantics))
	}
	portOK := gwCheckPort(r, p.Field("port"), s.GetPort(), s.GetBind())
	if bind := s.GetBind(); strings.HasPrefix(bind, netUnixPrefix) {
		r.Add(p.Field("bind"), netCheckUnixAddress(strings.TrimPrefix(bind, netUnixPrefix)))
		if s.GetPort().GetNumber() != 0 {
			r.Errorf(p.Field("port").Field("number"), "port number must be 0 for unix domain socket: bind %q", bind)
		}
	} else if bind != "" {
		r.Add(p.Field("bind"), netCheckIP(bind))
	}
	netCheckServerTLS(r, p.Field("tls"), s.GetTls())
	if !portOK {
		return
	}
	protocol := s.GetPort().GetProtocol()
	tls := s.GetTls()
	switch {
	case netProtoIsTLS(protocol) && tls == nil:
		r.Errorf(p.Field("tls"), "server must have TLS settings for HTTPS/TLS protocols")
	case !netProtoIsTLS(protocol) && tls != nil && netProtoIsHTTP(protocol):
		// a plain-text HTTP server may only carry httpsRedirect
		passthrough := tls.GetMode() == networking.ServerTLSSettings_PASSTHROUGH ||
			tls.GetMode() == networking.ServerTLSSettings_AUTO_PASSTHROUGH
		if !passthrough || tls.GetCaCertificates() != "" || tls.GetPrivateKey() != "" || tls.GetServerCertificate() != "" {
			r.Errorf(p.Field("tls"), "server cannot have TLS settings for plain text HTTP ports")
		}
	case !netProtoIsTLS(protocol) && tls != nil:
		r.Errorf(p.Field("tls"), "server cannot have TLS settings for non HTTPS/TLS ports")
	}
}

// gwCheckPort validates a server port; it reports whether the port is usable
// for the protocol checks that follow.
func gwCheckPort(r *Report, p Path, port *networking.Port, bind string) bool {
	if port == nil {
		r.Errorf(p, "port is required")
		return false
	}
	ok := true
	if _, known := netParseProtocol(port.GetProtocol()); !known {
		// Istio's list, which leaves some out
		r.Errorf(p.Field("protocol"), "invalid protocol %q, supported protocols are HTTP, HTTP2, GRPC, GRPC-WEB, MONGO, REDIS, MYSQL, TCP", port.GetProtocol())
		ok = false
	}
	if port.GetNumber() > 0 || !strings.HasPrefix(bind, netUnixPrefix) {
		if err := CheckPort(port.GetNumber()); err != nil {
			r.Add(p.Field("number"), err)
			ok = false
		}
	}
	//nolint:staticcheck // the deprecated field is rejected here
	if port.GetTargetPort() > 0 {
		r.Errorf(p.Field("targetPort"), "targetPort has no impact on Gateways")
	}
	if port.GetName() == "" {
		r.Errorf(p.Field("name"), "port name must be set")
	}
	return ok
}

// gwCheckHost validates a server host: "namespace/dnsName" or a plain
// dnsName (any namespace). Namespace is "*", "." or a DNS label; "~" is only
// allowed for Gateways converted from Gateway API.
func gwCheckHost(h string, gatewaySemantics bool) error {
	ns, name, qualified := strings.Cut(h, "/")
	if !qualified {
		return netCheckHostPart(h, true)
	}
	if ns == "" || name == "" {
		return fmt.Errorf("host %q: config namespace and dnsName in host entry cannot be empty", h)
	}
	if ns != "*" && ns != "." && (ns != "~" || !gatewaySemantics) && !netIsLabel(ns) {
		return fmt.Errorf("host %q: invalid namespace value %q in gateway", h, ns)
	}
	if err := netCheckHostPart(name, true); err != nil {
		return fmt.Errorf("host %q: %v", h, err)
	}
	return nil
}

// netCheckHostPart validates the dnsName of a Gateway or Sidecar host: a
// FQDN (short names are not allowed), "*" or "*.suffix"; Gateways also
// accept IP addresses.
func netCheckHostPart(h string, allowIP bool) error {
	if allowIP && netIsIP(h) {
		return nil
	}
	if h != "*" && !strings.Contains(h, ".") {
		return fmt.Errorf("short names (non FQDN) are not allowed: %q", h)
	}
	if err := netCheckPartialWildcard(h); err != nil {
		return err
	}
	if err := netCheckWildcardHost(h); err != nil {
		return fmt.Errorf("invalid host %q: %v", h, err)
	}
	return nil
}

// netCheckServerTLS validates server-side TLS settings (Gateway servers and
// Sidecar ingress listeners).
func netCheckServerTLS(r *Report, p Path, t *networking.ServerTLSSettings) {
	if t == nil {
		return
	}
	mode := t.GetMode()
	if _, ok := networking.ServerTLSSettings_TLSmode_name[int32(mode)]; !ok {
		r.Errorf(p.Field("mode"), "unknown TLS mode %d", mode)
	}
	if (t.GetMinProtocolVersion() == networking.ServerTLSSettings_TLSV1_0 ||
		t.GetMinProtocolVersion() == networking.ServerTLSSettings_TLSV1_1) && len(t.GetCipherSuites()) == 0 {
		r.Warnf(p.Field("minProtocolVersion"), "TLS version below TLSV1_2 require setting compatible ciphers as by default they no longer include compatible ciphers.")
	}
	gwCheckCiphers(r, p.Field("cipherSuites"), t.GetCipherSuites())
	certs := t.GetServerCertificate() != "" || t.GetPrivateKey() != "" || t.GetCaCertificates() != "" ||
		len(t.GetTlsCertificates()) > 0
	creds := t.GetCredentialName() != "" || len(t.GetCredentialNames()) > 0
	switch mode {
	case networking.ServerTLSSettings_ISTIO_MUTUAL:
		for _, f := range []struct {
			set         bool
			field, what string
		}{
			{t.GetServerCertificate() != "", "serverCertificate", "server certificate"},
			{t.GetPrivateKey() != "", "privateKey", "private key"},
			{t.GetCaCertificates() != "", "caCertificates", "CA bundle"},
			{len(t.GetTlsCertificates()) > 0, "tlsCertificates", "tlsCertificates"},
			{t.GetCredentialName() != "", "credentialName", "credentialName"},
			{len(t.GetCredentialNames()) > 0, "credentialNames", "credentialNames"},
		} {
			if f.set {
				r.Errorf(p.Field(f.field), "ISTIO_MUTUAL TLS cannot have associated %s", f.what)
			}
		}
		return
	case networking.ServerTLSSettings_PASSTHROUGH, networking.ServerTLSSettings_AUTO_PASSTHROUGH:
		if certs || creds || t.GetCaCrl() != "" {
			r.Warnf(p, "%v mode does not use certificates, they will be ignored", mode)
		}
		return
	}
	sources := 0
	for _, set := range []bool{t.GetServerCertificate() != "" && t.GetPrivateKey() != "", t.GetCredentialName() != "",
		len(t.GetCredentialNames()) > 0, len(t.GetTlsCertificates()) > 0} {
		if set {
			sources++
		}
	}
	if sources > 1 {
		r.Errorf(p, "only one of credential_name, credential_names, server_certificate/private_key, tls_certificates should be specified")
	}
	if t.GetCaCrl() != "" && t.GetCredentialName() != "" {
		r.Errorf(p.Field("caCrl"), "CRL is not supported with credentialName. CRL has to be specified in the credential")
	}
	if t.GetCaCrl() != "" && mode == networking.ServerTLSSettings_SIMPLE {
		r.Errorf(p.Field("caCrl"), "CRL is not supported with SIMPLE TLS")
	}
	if creds {
		// certificates are fetched from the referenced secret(s)
		return
	}
	gwCheckServerCerts(r, p, t)
}

// gwCheckServerCerts requires file based certificates for SIMPLE and
// MUTUAL/OPTIONAL_MUTUAL servers without credentialName.
func gwCheckServerCerts(r *Report, p Path, t *networking.ServerTLSSettings) {
	prefix := "SIMPLE TLS"
	if t.GetMode() == networking.ServerTLSSettings_MUTUAL || t.GetMode() == networking.ServerTLSSettings_OPTIONAL_MUTUAL {
		prefix = "MUTUAL TLS"
		if t.GetCaCertificates() == "" {
			r.Errorf(p.Field("caCertificates"), "%s requires a client CA bundle", prefix)
		}
	}
	if len(t.GetTlsCertificates()) > 2 {
		r.Warnf(p.Field("tlsCertificates"), "%s can support up to 2 server certificates", prefix)
	}
	if len(t.GetTlsCertificates()) == 0 {
		if t.GetServerCertificate() == "" {
			r.Errorf(p.Field("serverCertificate"), "%s requires a server certificate", prefix)
		}
		if t.GetPrivateKey() == "" {
			r.Errorf(p.Field("privateKey"), "%s requires a private key", prefix)
		}
		return
	}
	for i, c := range t.GetTlsCertificates() {
		if c.GetServerCertificate() == "" {
			r.Errorf(p.Field("tlsCertificates").Index(i).Field("serverCertificate"), "%s requires a server certificate", prefix)
		}
		if c.GetPrivateKey() == "" {
			r.Errorf(p.Field("tlsCertificates").Index(i).Field("privateKey"), "%s requires a private key", prefix)
		}
	}
}

// gwCheckCiphers warns, as Istio does, about the entries of
// tls.cipherSuites that are unknown (the listeners drop them) and about
// repeated ones; each list sorted, an entry once (pkg/config/security).
func gwCheckCiphers(r *Report, p Path, suites []string) {
	invalid, dups := security.CheckCipherSuites(suites)
	if len(invalid) > 0 {
		r.Warnf(p, "ignoring invalid cipher suites: %v", invalid)
	}
	if len(dups) > 0 {
		r.Warnf(p, "ignoring duplicate cipher suites: %v", dups)
	}
}
