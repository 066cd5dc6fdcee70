package analysis_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	tpb "istio.io/api/telemetry/v1alpha1"
	"istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/analysis"
)

func cfg(ns, name string, spec config.Spec) config.Config {
	return config.Config{Meta: config.Meta{Namespace: ns, Name: name}, Spec: spec}
}

func messages(ms []analysis.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.String())
	}
	return strings.Join(out, "\n")
}

func TestSidecarChecks(t *testing.T) {
	narrow := &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*", "istio-system/*"}}}}
	closed := &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}},
		OutboundTrafficPolicy: &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_REGISTRY_ONLY}}
	selected := &networking.Sidecar{WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "a"}},
		Egress: []*networking.IstioEgressListener{{Hosts: []string{"*/*"}}}}
	got := messages(analysis.Analyze([]config.Config{cfg("a", "one", narrow), cfg("a", "two", closed), cfg("a", "sel", selected),
		cfg("b", "only", closed)}, &meshconfig.MeshConfig{}))
	want := strings.Join([]string{
		`Error [IST0111] (Sidecar a/one) The Sidecars [one two] in namespace "a" have no workload selector, which can lead to undefined behavior.`,
		`Warning [MP0001] (Sidecar a/one) Sidecar egress is not a firewall: unlisted destinations still pass through (outboundTrafficPolicy is ALLOW_ANY); set outboundTrafficPolicy.mode REGISTRY_ONLY to block them`,
		`Error [IST0111] (Sidecar a/two) The Sidecars [one two] in namespace "a" have no workload selector, which can lead to undefined behavior.`,
	}, "\n")
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// REGISTRY_ONLY in the mesh: no firewall warning
	m := &meshconfig.MeshConfig{OutboundTrafficPolicy: &meshconfig.MeshConfig_OutboundTrafficPolicy{Mode: meshconfig.MeshConfig_OutboundTrafficPolicy_REGISTRY_ONLY}}
	if got := analysis.Analyze([]config.Config{cfg("b", "only", narrow)}, m); len(got) != 0 {
		t.Errorf("REGISTRY_ONLY mesh: %s", messages(got))
	}
}

func TestTelemetryChecks(t *testing.T) {
	m := &meshconfig.MeshConfig{ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{{Name: "envoy"}}}
	reenable := &tpb.Telemetry{AccessLogging: []*tpb.AccessLogging{{Disabled: wrapperspb.Bool(false)}}}
	unknown := &tpb.Telemetry{Tracing: []*tpb.Tracing{{Providers: []*tpb.ProviderRef{{Name: "zipkinn"}}}}}
	targeted := &tpb.Telemetry{TargetRefs: []*v1beta1.PolicyTargetReference{{Kind: "Gateway", Group: "gateway.networking.k8s.io", Name: "gw"}}}
	got := messages(analysis.Analyze([]config.Config{cfg("ns", "a", reenable), cfg("ns", "b", unknown), cfg("ns", "c", targeted)}, m))
	want := strings.Join([]string{
		`Error [IST0160] (Telemetry ns/a) The Telemetries [a b] in namespace "ns" have no workload selector, which can lead to undefined behavior.`,
		`Warning [MP0003] (Telemetry ns/a) spec.accessLogging[0]: disabled: false re-enables nothing: no provider is named here, by a broader Telemetry, or in meshConfig.defaultProviders`,
		`Error [IST0160] (Telemetry ns/b) The Telemetries [a b] in namespace "ns" have no workload selector, which can lead to undefined behavior.`,
		`Warning [MP0002] (Telemetry ns/b) provider "zipkinn" is not defined in meshConfig.extensionProviders: Istio ignores it`,
	}, "\n")
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// the documented re-enable idiom under a root Telemetry naming a
	// provider is fine (Istio's IST0157 would flag it)
	root := &tpb.Telemetry{AccessLogging: []*tpb.AccessLogging{{Providers: []*tpb.ProviderRef{{Name: "envoy"}}, Disabled: wrapperspb.Bool(true)}}}
	if got := analysis.Analyze([]config.Config{cfg("istio-system", "mesh", root), cfg("ns", "a", reenable)}, m); len(got) != 0 {
		t.Errorf("re-enable idiom: %s", messages(got))
	}
}
