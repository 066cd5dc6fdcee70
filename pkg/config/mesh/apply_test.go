package mesh_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/config/mesh"
)

// customBase is a non-default base, as left by an earlier source.
func customBase() *meshconfig.MeshConfig {
	m := mesh.DefaultMeshConfig()
	m.DefaultConfig.ProxyMetadata = map[string]string{"BASE": "1", "SHARED": "base"}
	m.DefaultConfig.ProxyHeaders = &meshconfig.ProxyConfig_ProxyHeaders{
		ForwardedClientCert: meshconfig.ForwardClientCertDetails_SANITIZE,
		Server:              &meshconfig.ProxyConfig_ProxyHeaders_Server{Value: "base"},
	}
	m.TrustDomainAliases = []string{"b.local", "a.local"}
	m.DefaultProviders = &meshconfig.MeshConfig_DefaultProviders{Tracing: []string{"zipkin"}}
	return m
}

type applyCase struct {
	name  string
	yaml  string
	base  func() *meshconfig.MeshConfig
	check func(t *testing.T, got *meshconfig.MeshConfig)
}

var applyCases = []applyCase{
	{
		name: "scalar override keeps the rest",
		yaml: "trustDomain: my.domain\n",
		check: func(t *testing.T, got *meshconfig.MeshConfig) {
			want := mesh.DefaultMeshConfig()
			want.TrustDomain = "my.domain"
			if !proto.Equal(got, want) {
				t.Errorf("got %v", mustJSON(t, got))
			}
		},
	},
	{
		name: "zero value overrides a default",
		yaml: "enableTracing: false\ningressClass: \"\"\n",
		check: func(t *testing.T, got *meshconfig.MeshConfig) {
			if got.EnableTracing || got.IngressClass != "" {
				t.Errorf("enableTracing=%v ingressClass=%q", got.EnableTracing, got.IngressClass)
			}
		},
	},
	{
		name: "explicit null changes nothing",
		yaml: "trustDomain: null\ndefaultConfig: null\n",
		check: func(t *testing.T, got *meshconfig.MeshConfig) {
			if !proto.Equal(got, mesh.DefaultMeshConfig()) {
				t.Errorf("got %v", mustJSON(t, got))
			}
		},
	},
	{
		name: "empty document is the base",
		yaml: "",
		base: customBase,
		check: func(t *testing.T, got *meshconfig.MeshConfig) {
			want := customBase()
			want.TrustDomainAliases = []string{"a.local", "b.local"}
			if !proto.Equal(got, want) {
				t.Errorf("got %v", mustJSON(t, got))
			}
		},
	},
	{
		name: "repeated fields and nested messages are replaced",
		yaml: "defaultServiceExportTo: [\".\"]\noutboundTrafficPolicy:\n  mode: REGISTRY_ONLY\nlocalityLbSetting: {}\n",
		check: func(t *testing.T, got *meshconfig.MeshConfig) {
			if !slices.Equal(got.DefaultServiceExportTo, []string{"."}) {
				t.Errorf("defaultServiceExportTo = %v", got.DefaultServiceExportTo)
			}
			if got.GetOutboundTrafficPolicy().GetMode() != meshconfig.MeshConfig_OutboundTrafficPolicy_REGISTRY_ONLY {
				t.Errorf("outbound = %v", got.GetOutboundTrafficPolicy())
			}
			if got.GetLocalityLbSetting() == nil || got.GetLocalityLbSetting().GetEnabled() != nil {
				t.Errorf("localityLbSetting = %v, want an empty message", got.GetLocalityLbSetting())
			}
		},
	},
	{
		name: "defaultConfig merges field by field",
		yaml: `defaultConfig:
  discoveryAddress: istiod.other.svc:15012
  drainDuration: 10s
  proxyMetadata:
    NEW: "2"
    SHARED: overlay
  proxyHeaders:
    requestId:
      disabled: true
`,
		base: customBase,
		check: func(t *testing.T, got *meshconfig.MeshConfig) {
			pc := got.GetDefaultConfig()
			if pc.GetDiscoveryAddress() != "istiod.other.svc:15012" || pc.GetDrainDuration().AsDuration() != 10*time.Second {
				t.Errorf("overrides not applied: %v", mustJSON(t, pc))
			}
			if pc.GetStatusPort() != 15020 || pc.GetTerminationDrainDuration().AsDuration() != 5*time.Second ||
				pc.GetServiceCluster() != "istio-proxy" {
				t.Errorf("base proxy fields lost: %v", mustJSON(t, pc))
			}
			wantMeta := map[string]string{"BASE": "1", "SHARED": "overlay", "NEW": "2"}
			if len(pc.ProxyMetadata) != 3 || pc.ProxyMetadata["BASE"] != "1" || pc.ProxyMetadata["SHARED"] != "overlay" || pc.ProxyMetadata["NEW"] != "2" {
				t.Errorf("proxyMetadata = %v, want %v", pc.ProxyMetadata, wantMeta)
			}
			ph := pc.GetProxyHeaders()
			if !ph.GetRequestId().GetDisabled().GetValue() || ph.GetServer().GetValue() != "base" ||
				ph.GetForwardedClientCert() != meshconfig.ForwardClientCertDetails_SANITIZE {
				t.Errorf("proxyHeaders = %v", mustJSON(t, ph))
			}
		},
	},
	{
		name: "defaultProviders merges field by field",
		yaml: "defaultProviders:\n  metrics: [prometheus]\n",
		base: customBase,
		check: func(t *testing.T, got *meshconfig.MeshConfig) {
			dp := got.GetDefaultProviders()
			if !slices.Equal(dp.GetTracing(), []string{"zipkin"}) || !slices.Equal(dp.GetMetrics(), []string{"prometheus"}) {
				t.Errorf("defaultProviders = %v", mustJSON(t, dp))
			}
		},
	},
	{
		name: "extensionProviders merge by name",
		yaml: `extensionProviders:
- name: envoy
  envoyFileAccessLog:
    path: /dev/stderr
- name: otel
  opentelemetry:
    service: otel.observability.svc.cluster.local
    port: 4317
`,
		check: func(t *testing.T, got *meshconfig.MeshConfig) {
			var names []string
			for _, p := range got.ExtensionProviders {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, []string{"prometheus", "stackdriver", "envoy", "otel"}) {
				t.Errorf("providers = %v", names)
			}
			if p := got.ExtensionProviders[2].GetEnvoyFileAccessLog().GetPath(); p != "/dev/stderr" {
				t.Errorf("envoy provider path = %q", p)
			}
		},
	},
	{
		name: "trustDomainAliases are a sorted union",
		yaml: "trustDomainAliases: [c.local, a.local]\n",
		base: customBase,
		check: func(t *testing.T, got *meshconfig.MeshConfig) {
			if !slices.Equal(got.TrustDomainAliases, []string{"a.local", "b.local", "c.local"}) {
				t.Errorf("aliases = %v", got.TrustDomainAliases)
			}
		},
	},
	{
		name: "proto field names are accepted",
		yaml: "trust_domain: snake.local\n",
		check: func(t *testing.T, got *meshconfig.MeshConfig) {
			if got.TrustDomain != "snake.local" {
				t.Errorf("trustDomain = %q", got.TrustDomain)
			}
		},
	},
}

func TestApplyMeshConfig(t *testing.T) {
	for _, tc := range applyCases {
		t.Run(tc.name, func(t *testing.T) {
			base := mesh.DefaultMeshConfig()
			if tc.base != nil {
				base = tc.base()
			}
			before := proto.Clone(base)
			got, warns, err := mesh.ApplyMeshConfig(tc.yaml, base)
			if err != nil {
				t.Fatal(err)
			}
			if !warns.Empty() {
				t.Errorf("unexpected warnings %v", warns.Messages())
			}
			if !proto.Equal(base, before) {
				t.Error("base was modified")
			}
			tc.check(t, got)
		})
	}
}

type problemCase struct {
	name        string
	yaml        string
	wantErr     []string // substrings of the error; nil means success
	wantDropped []string
	wantWarn    []string // substrings of validation warnings
}

var problemCases = []problemCase{
	{
		name:        "unknown field ignored and reported",
		yaml:        "trustDomainz: my.domain\n",
		wantDropped: []string{"trustDomainz"},
	},
	{
		name:        "unknown nested field reported with its path",
		yaml:        "defaultConfig:\n  drainDurationz: 1s\n",
		wantDropped: []string{"defaultConfig.drainDurationz"},
	},
	{
		name:    "type error names the field",
		yaml:    "trustDomain: 123\n",
		wantErr: []string{"trustDomain", "number"},
	},
	{
		name:    "unknown enum value names the field",
		yaml:    "outboundTrafficPolicy:\n  mode: ALLOW_ALL\n",
		wantErr: []string{"outboundTrafficPolicy.mode", "ALLOW_ALL"},
	},
	{
		name:    "validation error fails",
		yaml:    "proxyListenPort: 70000\n",
		wantErr: []string{"proxyListenPort"},
	},
	{
		name:    "not YAML",
		yaml:    "trustDomain: [unclosed\n",
		wantErr: []string{"invalid mesh config"},
	},
	{
		name:    "not a mapping",
		yaml:    "- a\n- b\n",
		wantErr: []string{"mapping"},
	},
	{
		name: "extension provider with port 0 is only a warning",
		yaml: `extensionProviders:
- name: otel
  opentelemetry:
    service: otel.observability.svc.cluster.local
    portz: 4317
`,
		wantDropped: []string{"extensionProviders[0].opentelemetry.portz"},
		wantWarn:    []string{"extensionProviders[3]", "port"},
	},
}

func TestApplyMeshConfigProblems(t *testing.T) {
	for _, tc := range problemCases {
		t.Run(tc.name, func(t *testing.T) {
			got, warns, err := mesh.ApplyMeshConfig(tc.yaml, mesh.DefaultMeshConfig())
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("want an error, got %v", mustJSON(t, got))
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(warns.Dropped, tc.wantDropped) {
				t.Errorf("dropped = %v, want %v", warns.Dropped, tc.wantDropped)
			}
			joined := strings.Join(warns.Messages(), "\n")
			for _, s := range tc.wantWarn {
				if !strings.Contains(joined, s) {
					t.Errorf("warnings %q do not mention %q", joined, s)
				}
			}
			if len(tc.wantWarn) == 0 && len(warns.Validation) != 0 {
				t.Errorf("unexpected validation warnings %v", warns.Validation)
			}
			if got.TrustDomain != mesh.DefaultTrustDomain {
				t.Errorf("trustDomain = %q", got.TrustDomain)
			}
		})
	}
}

func TestApplyMeshNetworks(t *testing.T) {
	cases := []struct {
		name     string
		yaml     string
		wantErr  string
		wantNets []string
	}{
		{name: "empty", yaml: "", wantNets: nil},
		{
			name: "one network",
			yaml: `networks:
  net1:
    endpoints:
    - fromRegistry: cluster1
    gateways:
    - address: 1.2.3.4
      port: 15443
`,
			wantNets: []string{"net1"},
		},
		{name: "type error", yaml: "networks: 3\n", wantErr: "networks"},
		{
			name:    "validation error",
			yaml:    "networks:\n  net1:\n    gateways:\n    - address: 1.2.3.4\n      port: 0\n",
			wantErr: "port",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mesh.ApplyMeshNetworks(tc.yaml)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Networks == nil {
				t.Fatal("nil network map")
			}
			var names []string
			for n := range got.Networks {
				names = append(names, n)
			}
			if !slices.Equal(names, tc.wantNets) {
				t.Errorf("networks = %v, want %v", names, tc.wantNets)
			}
		})
	}
	_, warns, err := mesh.ParseMeshNetworks("networkz: {}\n")
	if err != nil || !slices.Equal(warns.Dropped, []string{"networkz"}) {
		t.Errorf("ParseMeshNetworks dropped = %v, err %v", warns.Dropped, err)
	}
}
