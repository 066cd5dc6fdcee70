package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/types/known/wrapperspb"
	istio "istio.io/api/networking/v1alpha3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config/security"
)

// Secret and ConfigMap keys of certificates, as Istio reads them.
const (
	keyGenericCert   = "cert"
	keyGenericKey    = "key"
	keyGenericCACert = "cacert"
	keyTLSCert       = "tls.crt"
	keyTLSKey        = "tls.key"
	keyTLSCACert     = "ca.crt"
)

// frontendTLS is the client validation that applies to a port.
func (g *gatewayState) frontendTLS(port gatewayv1.PortNumber) *gatewayv1.TLSConfig {
	if g.spec.TLS == nil || g.spec.TLS.Frontend == nil {
		return nil
	}
	f := g.spec.TLS.Frontend
	for i := range f.PerPort {
		if f.PerPort[i].Port == port {
			return &f.PerPort[i].TLS
		}
	}
	return &f.Default
}

// autoPassthrough reports whether a passthrough listener is the
// multi-network AUTO_PASSTHROUGH one: the listener asks for it, or the
// Gateway is a network gateway and the listener is on its gateway port.
func (g *gatewayState) autoPassthrough(l gatewayv1.Listener) bool {
	if l.TLS == nil {
		return false
	}
	if string(l.TLS.Options[optionListenerProtocol]) == listenerAutoPassthrough {
		return true
	}
	if _, ok := g.cfg.Labels[labelTopologyNetwork]; !ok {
		return false
	}
	want := defaultAutoPassthroughPrt
	if p, ok := g.cfg.Labels[labelNetworkingGwPort]; ok {
		want = p
	}
	return fmt.Sprint(l.Port) == want
}

// buildTLS translates a listener's tls section; the settings are returned
// even with an error, which the listener's status reports.
func (g *gatewayState) buildTLS(l gatewayv1.Listener) (*istio.ServerTLSSettings, *ConfigError) {
	t := l.TLS
	if t == nil {
		return nil, nil
	}
	out := &istio.ServerTLSSettings{}
	switch orDefault(t.Mode, gatewayv1.TLSModeTerminate) {
	case gatewayv1.TLSModeTerminate:
		if done, err := g.terminate(out, l); done || err != nil {
			return out, err
		}
	case gatewayv1.TLSModePassthrough:
		out.Mode = istio.ServerTLSSettings_PASSTHROUGH
		if g.autoPassthrough(l) {
			out.Mode = istio.ServerTLSSettings_AUTO_PASSTHROUGH
		}
	}
	if opt := string(t.Options[optionCipherSuites]); opt != "" {
		var suites []string
		for _, s := range strings.Split(opt, ",") {
			suites = append(suites, strings.TrimSpace(s))
		}
		if c := security.FilterCipherSuites(suites); len(c) > 0 {
			out.CipherSuites = c
		}
	}
	return out, nil
}

// terminate fills the settings of a terminating listener; done means they
// are complete (the workload certificate modes).
func (g *gatewayState) terminate(out *istio.ServerTLSSettings, l gatewayv1.Listener) (bool, *ConfigError) {
	t := l.TLS
	out.Mode = istio.ServerTLSSettings_SIMPLE
	switch t.Options[optionTLSTerminateMode] {
	case "MUTUAL":
		out.Mode = istio.ServerTLSSettings_MUTUAL
	case "OPTIONAL_MUTUAL":
		out.Mode = istio.ServerTLSSettings_OPTIONAL_MUTUAL
	case "ISTIO_SIMPLE":
		out.CredentialName = credentialBuiltin
		return true, nil
	case "ISTIO_MUTUAL":
		out.Mode = istio.ServerTLSSettings_ISTIO_MUTUAL
		return true, nil
	}
	if len(t.CertificateRefs) > 2 {
		return false, &ConfigError{Reason: string(gatewayv1.ListenerReasonInvalidCertificateRef),
			Message: "TLS mode can only support up to 2 server certificates"}
	}
	names := make([]string, len(t.CertificateRefs))
	validCount := 0
	var combined *ConfigError
	for i, ref := range t.CertificateRefs {
		cred, err := g.certificateRef(ref)
		if err == nil {
			names[i] = cred
			validCount++
		} else {
			combined = joinErrors(combined, err)
		}
	}
	if validCount == 0 {
		return false, combined
	}
	if validCount == 1 {
		out.CredentialName = names[0]
	} else {
		out.CredentialNames = names
	}
	return false, g.clientValidation(out, l)
}

// certificateRef checks one certificateRef and returns its credential name.
func (g *gatewayState) certificateRef(ref gatewayv1.SecretObjectReference) (string, *ConfigError) {
	if normalizeKind(ref.Group, ref.Kind, kindSecret) != kindSecret {
		return "", &ConfigError{Reason: string(gatewayv1.ListenerReasonInvalidCertificateRef),
			Message: fmt.Sprintf("invalid certificate reference %v, only secret is allowed", secretRefString(ref))}
	}
	ns := string(orDefault(ref.Namespace, gatewayv1.Namespace(g.cfg.Namespace)))
	if err := checkKeyPair(g.ctx, ns, string(ref.Name)); err != "" {
		return "", &ConfigError{Reason: string(gatewayv1.ListenerReasonInvalidCertificateRef),
			Message: fmt.Sprintf("invalid certificate reference %v, %s", secretRefString(ref), err)}
	}
	if ns != g.cfg.Namespace && !g.ctx.Allowed(kindGateway, g.cfg.Namespace, kindSecret, ns, string(ref.Name)) {
		return "", &ConfigError{Reason: string(gatewayv1.ListenerReasonRefNotPermitted),
			Message: fmt.Sprintf("certificateRef %v/%v not accessible to a Gateway in namespace %q (missing a ReferenceGrant?)",
				ref.Name, ns, g.cfg.Namespace)}
	}
	return credentialGatewaySecret + "://" + ns + "/" + string(ref.Name), nil
}

// checkKeyPair explains what is wrong with Secret ns/name as a certificate
// and key, "" when nothing is.
func checkKeyPair(ctx Context, ns, name string) string {
	data, ok := ctx.Secret(ns, name)
	if !ok {
		return fmt.Sprintf("secret %v/%v not found", ns, name)
	}
	cert, key, err := certAndKey(data)
	if err != "" {
		return err
	}
	if _, e := tls.X509KeyPair(cert, key); e != nil {
		return fmt.Sprintf("the certificate is malformed: %v", e)
	}
	return ""
}

func hasValues(d map[string][]byte, keys ...string) bool {
	for _, k := range keys {
		if len(d[k]) == 0 {
			return false
		}
	}
	return true
}

func hasKeys(d map[string][]byte, keys ...string) bool {
	for _, k := range keys {
		if _, ok := d[k]; !ok {
			return false
		}
	}
	return true
}

func keysMessage(d map[string][]byte) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) < 3 {
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s, and %d more...", strings.Join(keys[:3], ", "), len(keys)-3)
}

// certAndKey reads a certificate and key in either of the layouts Istio
// reads (cert/key, or tls.crt/tls.key).
func certAndKey(d map[string][]byte) (cert, key []byte, err string) {
	switch {
	case hasValues(d, keyGenericCert, keyGenericKey):
		return d[keyGenericCert], d[keyGenericKey], ""
	case hasValues(d, keyTLSCert, keyTLSKey):
		return d[keyTLSCert], d[keyTLSKey], ""
	case hasKeys(d, keyGenericCert, keyGenericKey):
		return nil, nil, fmt.Sprintf("found keys %q and %q, but they were empty", keyGenericCert, keyGenericKey)
	case hasKeys(d, keyTLSCert, keyTLSKey):
		return nil, nil, fmt.Sprintf("found keys %q and %q, but they were empty", keyTLSCert, keyTLSKey)
	}
	return nil, nil, fmt.Sprintf("found secret, but didn't have expected keys (%s and %s) or (%s and %s); found: %s",
		keyGenericCert, keyGenericKey, keyTLSCert, keyTLSKey, keysMessage(d))
}

// rootCert reads a CA bundle (cacert or ca.crt).
func rootCert(d map[string][]byte) ([]byte, string) {
	switch {
	case hasValues(d, keyGenericCACert):
		return d[keyGenericCACert], ""
	case hasValues(d, keyTLSCACert):
		return d[keyTLSCACert], ""
	case hasKeys(d, keyGenericCACert):
		return nil, fmt.Sprintf("found key %q, but it was empty", keyGenericCACert)
	case hasKeys(d, keyTLSCACert):
		return nil, fmt.Sprintf("found key %q, but it was empty", keyTLSCACert)
	}
	return nil, fmt.Sprintf("found secret, but didn't have expected keys %s or %s; found: %s",
		keyGenericCACert, keyTLSCACert, keysMessage(d))
}

// clientValidation applies spec.tls.frontend client certificate validation
// to a terminating listener.
func (g *gatewayState) clientValidation(out *istio.ServerTLSSettings, l gatewayv1.Listener) *ConfigError {
	ft := g.frontendTLS(l.Port)
	if ft == nil || ft.Validation == nil || len(ft.Validation.CACertificateRefs) == 0 {
		return nil
	}
	if len(ft.Validation.CACertificateRefs) > 1 {
		return &ConfigError{Reason: string(gatewayv1.ListenerReasonInvalidCACertificateRef), Message: "only one caCertificateRef is supported"}
	}
	ref := ft.Validation.CACertificateRefs[0]
	ns, name, err := g.caCertificateRef(ref)
	if err != nil {
		return err
	}
	if ns != g.cfg.Namespace && !g.ctx.Allowed(kindGateway, g.cfg.Namespace, normalizeKind(&ref.Group, &ref.Kind, GroupKind{}), ns, string(ref.Name)) {
		return &ConfigError{Reason: string(gatewayv1.ListenerReasonRefNotPermitted),
			Message: fmt.Sprintf("caCertificateRef %v/%v not accessible to a Gateway in namespace %q (missing a ReferenceGrant?)",
				ns, ref.Name, g.cfg.Namespace)}
	}
	out.Mode = istio.ServerTLSSettings_MUTUAL
	out.InsecureSkipVerify = wrapperspb.Bool(false)
	if ft.Validation.Mode == gatewayv1.AllowInsecureFallback {
		out.Mode = istio.ServerTLSSettings_OPTIONAL_MUTUAL
		out.InsecureSkipVerify = wrapperspb.Bool(true)
	}
	out.CaCertCredentialName = name
	switch l.TLS.Options[optionTLSTerminateMode] {
	case "MUTUAL":
		out.Mode, out.InsecureSkipVerify = istio.ServerTLSSettings_MUTUAL, wrapperspb.Bool(false)
	case "OPTIONAL_MUTUAL":
		out.Mode, out.InsecureSkipVerify = istio.ServerTLSSettings_OPTIONAL_MUTUAL, wrapperspb.Bool(false)
	}
	return nil
}

// caCertificateRef checks a CA ConfigMap or Secret and returns its
// namespace and SDS resource name.
func (g *gatewayState) caCertificateRef(ref gatewayv1.ObjectReference) (string, string, *ConfigError) {
	ns := string(orDefault(ref.Namespace, gatewayv1.Namespace(g.cfg.Namespace)))
	key := ns + "/" + string(ref.Name)
	bad := func(reason, format string, args ...any) (string, string, *ConfigError) {
		return "", "", &ConfigError{Reason: reason, Message: fmt.Sprintf("invalid CA certificate reference %v, ", objectRefString(ref)) +
			fmt.Sprintf(format, args...)}
	}
	var bundle []byte
	var kind, why string
	switch normalizeKind(&ref.Group, &ref.Kind, GroupKind{}) {
	case kindConfigMap:
		kind = credentialConfigMap
		cm, ok := g.ctx.ConfigMap(ns, string(ref.Name))
		if !ok {
			return bad(string(gatewayv1.ListenerReasonInvalidCACertificateRef), "configmap %v not found", key)
		}
		d := make(map[string][]byte, len(cm))
		for k, v := range cm {
			d[k] = []byte(v)
		}
		bundle, why = rootCert(d)
	case kindSecret:
		kind = credentialGatewaySecret
		d, ok := g.ctx.Secret(ns, string(ref.Name))
		if !ok {
			return bad(string(gatewayv1.ListenerReasonInvalidCACertificateRef), "secret %v not found", key)
		}
		bundle, why = rootCert(d)
	default:
		return bad(string(gatewayv1.ListenerReasonInvalidCACertificateKind), "only secret and configmap are allowed")
	}
	if why != "" {
		return bad(string(gatewayv1.ListenerReasonInvalidCACertificateRef), "%s", why)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(bundle) {
		return bad(string(gatewayv1.ListenerReasonInvalidCACertificateRef), "the bundle is malformed")
	}
	return ns, fmt.Sprintf("%s://%s/%s%s", kind, ns, ref.Name, credentialCASuffix), nil
}

// clientCertificateError checks spec.tls.backend.clientCertificateRef, the
// certificate the Gateway presents to backends.
func (g *gatewayState) clientCertificateError() *ConfigError {
	if g.spec.TLS == nil || g.spec.TLS.Backend == nil || g.spec.TLS.Backend.ClientCertificateRef == nil {
		return nil
	}
	ref := *g.spec.TLS.Backend.ClientCertificateRef
	reason := string(gatewayv1.GatewayReasonInvalidClientCertificateRef)
	if normalizeKind(ref.Group, ref.Kind, kindSecret) != kindSecret {
		return &ConfigError{Reason: reason, Message: fmt.Sprintf("invalid clientCertificateRef %v, only secret is allowed", secretRefString(ref))}
	}
	ns := string(orDefault(ref.Namespace, gatewayv1.Namespace(g.cfg.Namespace)))
	if _, ok := g.ctx.Secret(ns, string(ref.Name)); !ok {
		return &ConfigError{Reason: reason, Message: fmt.Sprintf("invalid clientCertificateRef %v, secret %v/%v not found",
			secretRefString(ref), ns, ref.Name)}
	}
	if err := checkKeyPair(g.ctx, ns, string(ref.Name)); err != "" {
		return &ConfigError{Reason: reason, Message: fmt.Sprintf("invalid clientCertificateRef %v, %s", secretRefString(ref), err)}
	}
	if ns != g.cfg.Namespace && !g.ctx.Allowed(kindGateway, g.cfg.Namespace, kindSecret, ns, string(ref.Name)) {
		return &ConfigError{Reason: string(gatewayv1.GatewayReasonRefNotPermitted),
			Message: fmt.Sprintf("clientCertificateRef %v/%v not accessible to a Gateway in namespace %q (missing a ReferenceGrant?)",
				ref.Name, ns, g.cfg.Namespace)}
	}
	return nil
}

func objectRefString(ref gatewayv1.ObjectReference) string {
	return fmt.Sprintf("%s/%s/%s.%s", ref.Group, ref.Kind, ref.Name, orDefault(ref.Namespace, ""))
}

func secretRefString(ref gatewayv1.SecretObjectReference) string {
	return fmt.Sprintf("%s/%s/%s.%s", orDefault(ref.Group, ""), orDefault(ref.Kind, ""), ref.Name, orDefault(ref.Namespace, ""))
}

func joinErrors(a, b *ConfigError) *ConfigError {
	if b == nil {
		return a
	}
	if a == nil {
		return b
	}
	return &ConfigError{Reason: a.Reason, Message: a.Message + "; " + b.Message}
}
