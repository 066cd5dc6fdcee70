package listener_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/gateway"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/security"
	"github.com/meshplane/istiod/pkg/config/validation"
)

// cipherCandidates are every known suite, BoringSSL's PSK suites, an
// unknown name, operators and repeats.
func cipherCandidates() []string {
	return append(security.CipherSuites(), "ECDHE-PSK-AES128-CBC-SHA", "ECDHE-PSK-AES256-CBC-SHA",
		"ECDHE-PSK-CHACHA20-POLY1305", "PSK-AES128-CBC-SHA", "PSK-AES256-CBC-SHA", "BOGUS", "!aNULL",
		"AES128-SHA", "PSK-AES128-CBC-SHA")
}

func gatewayServerTLSParams(t *testing.T, tls *networking.ServerTLSSettings, defaults *meshconfig.MeshConfig_TLSConfig) *tlsv3.TlsParameters {
	t.Helper()
	gw := config.Config{Meta: config.Meta{Namespace: "ns", Name: "edge"}, Spec: &networking.Gateway{
		Selector: map[string]string{"istio": "ingressgateway"},
		Servers: []*networking.Server{{Port: &networking.Port{Number: 443, Name: "https", Protocol: "HTTPS"},
			Hosts: []string{"a.example.com"}, Tls: tls}}}}
	proxy := &model.Proxy{Type: model.Router, Labels: map[string]string{"istio": "ingressgateway"}, ConfigNamespace: "ns"}
	ls := listener.BuildGateway(listener.GatewayOptions{Merged: gateway.Merge(gateway.Select([]config.Config{gw}, proxy, nil), proxy),
		TLSInputs: listener.GatewayTLS{Defaults: defaults}})
	if len(ls) != 1 || len(ls[0].FilterChains) != 1 || ls[0].FilterChains[0].TransportSocket == nil {
		t.Fatalf("want one listener with one TLS chain, got %v", ls)
	}
	ctx := &tlsv3.DownstreamTlsContext{}
	if err := ls[0].FilterChains[0].TransportSocket.GetTypedConfig().UnmarshalTo(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx.GetCommonTlsContext().GetTlsParams()
}

// The gateway listener builder, the Sidecar ingress TLS and validation
// judge cipher suites by the one list of pkg/config/security: the
// listeners keep what it accepts, once each, in order, and validation
// warns about exactly the rest (Istio filters both listeners with
// FilterCipherSuites and validates with IsValidCipherSuite).
func TestCipherSuitesAgree(t *testing.T) {
	in := cipherCandidates()
	want := security.FilterCipherSuites(in)
	tls := &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "cert", CipherSuites: in}

	if got := gatewayServerTLSParams(t, tls, nil).GetCipherSuites(); !reflect.DeepEqual(got, want) {
		t.Errorf("gateway listener suites:\n got %v\nwant %v", got, want)
	}
	if got := listener.SidecarIngressTLS(tls, listener.GatewayTLS{}).GetCommonTlsContext().GetTlsParams().GetCipherSuites(); !reflect.DeepEqual(got, want) {
		t.Errorf("sidecar ingress suites:\n got %v\nwant %v", got, want)
	}
	if !reflect.DeepEqual(tls.CipherSuites, in) {
		t.Errorf("the server's settings were modified: %v", tls.CipherSuites)
	}

	// what the listeners drop, each once, is what validation calls invalid
	var dropped []string
	for _, s := range in {
		if !slices.Contains(want, s) && !slices.Contains(dropped, s) {
			dropped = append(dropped, s)
		}
	}
	slices.Sort(dropped)
	warn, err := validation.ValidateGateway(config.Config{Meta: config.Meta{Namespace: "ns", Name: "edge"},
		Spec: &networking.Gateway{Servers: []*networking.Server{{Port: &networking.Port{Number: 443, Name: "https", Protocol: "HTTPS"},
			Hosts: []string{"a.example.com"}, Tls: tls}}}})
	if err != nil {
		t.Fatal(err)
	}
	if wantWarn := fmt.Sprintf("ignoring invalid cipher suites: %v", dropped); warn == nil || !strings.Contains(warn.Error(), wantWarn) {
		t.Errorf("validation: %v\nwant a warning %q", warn, wantWarn)
	}
}

// A server whose suites are all dropped keeps the mesh's tlsDefaults, as
// in Istio (an empty list does not replace them).
func TestCipherSuitesAllDroppedKeepDefaults(t *testing.T) {
	defaults := &meshconfig.MeshConfig_TLSConfig{CipherSuites: []string{"ECDHE-RSA-AES256-GCM-SHA384"}}
	tls := &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "cert",
		CipherSuites: []string{"PSK-AES128-CBC-SHA", "BOGUS"}}
	if got := gatewayServerTLSParams(t, tls, defaults).GetCipherSuites(); !reflect.DeepEqual(got, defaults.CipherSuites) {
		t.Errorf("suites %v, want the defaults %v", got, defaults.CipherSuites)
	}
}
