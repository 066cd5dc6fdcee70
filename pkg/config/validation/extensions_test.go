package validation_test

import (
	"strings"
	"testing"

	extensions "istio.io/api/extensions/v1alpha1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config/validation"
)

const secSHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestValidateWasmPlugin(t *testing.T) {
	sel := &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "a"}}
	cases := []secCase{
		{name: "valid oci", spec: &extensions.WasmPlugin{
			Selector: sel, Url: "oci://ghcr.io/org/filter:v1", Sha256: secSHA,
			Phase: extensions.PluginPhase_AUTHN, PluginName: "filter",
			VmConfig: &extensions.VmConfig{Env: []*extensions.EnvVar{
				{Name: "A", Value: "x"}, {Name: "POD_NAME", ValueFrom: extensions.EnvValueSource_HOST},
			}},
			Match: []*extensions.WasmPlugin_TrafficSelector{{
				Mode: typev1beta1.WorkloadMode_SERVER, Ports: []*typev1beta1.PortSelector{{Number: 8080}},
			}},
		}},
		{name: "no scheme means oci", spec: &extensions.WasmPlugin{Url: "ghcr.io/org/filter:v1"}},
		{name: "file url", spec: &extensions.WasmPlugin{Url: "file:///opt/filters/f.wasm"}},
		{name: "https url", spec: &extensions.WasmPlugin{Url: "https://example.com/f.wasm"}},
		{name: "typed nil", spec: (*extensions.WasmPlugin)(nil), wantErr: []string{"spec.url: url field needs to be set"}},
		{name: "wrong type", spec: &extensions.TrafficExtension{}, wantErr: []string{"cannot cast to WasmPlugin"}},
		{name: "missing url", spec: &extensions.WasmPlugin{}, wantErr: []string{"spec.url: url field needs to be set"}},
		{name: "bad scheme", spec: &extensions.WasmPlugin{Url: "ftp://example.com/f.wasm"},
			wantErr: []string{"spec.url: url contains unsupported scheme: ftp"}},
		{name: "bad sha", spec: &extensions.WasmPlugin{Url: "oci://r/f", Sha256: "ABC"},
			wantErr: []string{"spec.sha256: sha256 field must be 64 characters long"}},
		{name: "uppercase sha", spec: &extensions.WasmPlugin{Url: "oci://r/f", Sha256: strings.ToUpper(secSHA)},
			wantErr: []string{"spec.sha256: sha256 field must match [a-f0-9]{64} pattern"}},
		{name: "sha mismatch with url digest", spec: &extensions.WasmPlugin{
			Url: "oci://r/f@sha256:" + strings.Repeat("a", 64), Sha256: secSHA,
		}, wantErr: []string{"spec.sha256: sha256"}},
		{name: "selector and targetRef", spec: &extensions.WasmPlugin{
			Url: "oci://r/f", Selector: sel,
			TargetRefs: []*typev1beta1.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "gw"}},
		}, wantErr: []string{"spec.targetRefs: only one of targetRefs or workloadSelector can be set"}},
		{name: "vm env and match problems", spec: &extensions.WasmPlugin{
			Url: "oci://r/f",
			VmConfig: &extensions.VmConfig{Env: []*extensions.EnvVar{
				{Name: ""}, {Name: "A"}, {Name: "A"},
				{Name: "B", ValueFrom: extensions.EnvValueSource_HOST, Value: "x"}, nil,
			}},
			Match: []*extensions.WasmPlugin_TrafficSelector{
				{Ports: []*typev1beta1.PortSelector{{Number: 0}, nil}}, nil,
			},
			ImagePullSecret: strings.Repeat("s", 254),
			PluginName:      strings.Repeat("p", 257),
			Phase:           9,
		}, wantErr: []string{
			"spec.vmConfig.env[0].name: spec.vmConfig.env invalid: env name must not be empty",
			"spec.vmConfig.env[2].name: duplicate env \"A\"",
			"spec.vmConfig.env[3].value: value may only be set when valueFrom is INLINE",
			"spec.vmConfig.env[4]: env must not be null",
			"spec.match[0].ports[0].number: spec.Match[0].Ports[0] is out of range: 0",
			"spec.match[0].ports[1]: spec.Match[0].Ports[1] is nil",
			"spec.match[1]: spec.Match[1] is nil",
			"spec.imagePullSecret: imagePullSecret field must be less than 253 characters long",
			"spec.pluginName: pluginName field must be less than 255 characters long",
			"spec.phase: unknown phase 9",
		}},
	}
	secRun(t, validation.ValidateWasmPlugin, cases)
}

func TestValidateTrafficExtension(t *testing.T) {
	sel := &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "a"}}
	lua := func(code string) *extensions.TrafficExtension_Lua {
		return &extensions.TrafficExtension_Lua{Lua: &extensions.LuaConfig{InlineCode: code}}
	}
	wasm := func(w *extensions.WasmConfig) *extensions.TrafficExtension_Wasm {
		return &extensions.TrafficExtension_Wasm{Wasm: w}
	}
	onRequest := "function envoy_on_request(h) end"
	cases := []secCase{
		{name: "valid lua", spec: &extensions.TrafficExtension{
			Selector: sel, Phase: extensions.TrafficExtension_AUTHZ, FilterConfig: lua(onRequest),
		}},
		{name: "valid wasm", spec: &extensions.TrafficExtension{
			TargetRefs:   []*typev1beta1.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "gw"}},
			FilterConfig: wasm(&extensions.WasmConfig{Url: "oci://ghcr.io/org/filter:v1", Sha256: secSHA}),
		}},
		{name: "typed nil", spec: (*extensions.TrafficExtension)(nil), wantErr: []string{"spec: exactly one of wasm or lua must be set"}},
		{name: "wrong type", spec: &extensions.WasmPlugin{}, wantErr: []string{"cannot cast to TrafficExtension"}},
		{name: "neither wasm nor lua", spec: &extensions.TrafficExtension{Selector: sel},
			wantErr: []string{"spec: exactly one of wasm or lua must be set"}},
		{name: "null wasm", spec: &extensions.TrafficExtension{FilterConfig: wasm(nil)},
			wantErr: []string{"spec.wasm: wasm must not be null"}},
		{name: "empty lua", spec: &extensions.TrafficExtension{FilterConfig: lua("")},
			wantErr: []string{"spec.lua.inlineCode: lua.inlineCode cannot be empty"}},
		{name: "null lua", spec: &extensions.TrafficExtension{FilterConfig: &extensions.TrafficExtension_Lua{}},
			wantErr: []string{"spec.lua: lua config cannot be nil"}},
		{name: "lua too big", spec: &extensions.TrafficExtension{FilterConfig: lua(onRequest + strings.Repeat(" ", 65536))},
			wantErr: []string{"spec.lua.inlineCode: lua.inlineCode exceeds maximum size of 64KB"}},
		{name: "lua without callbacks warns", spec: &extensions.TrafficExtension{FilterConfig: lua("print('x')")},
			wantWarn: []string{"spec.lua.inlineCode: inlineCode defines neither envoy_on_request nor envoy_on_response"}},
		{name: "wasm problems", spec: &extensions.TrafficExtension{
			FilterConfig: wasm(&extensions.WasmConfig{
				Url: "gopher://x/y", Sha256: "zz", FailStrategy: 7,
				VmConfig: &extensions.VmConfig{Env: []*extensions.EnvVar{{}}},
			}),
		}, wantErr: []string{
			"spec.wasm.url: url contains unsupported scheme: gopher",
			"spec.wasm.sha256: sha256 field must be 64 characters long",
			"spec.wasm.failStrategy: unknown failStrategy 7",
			"spec.wasm.vmConfig.env[0].name: spec.vmConfig.env invalid: env name must not be empty",
		}},
		{name: "selector targetRefs phase and match", spec: &extensions.TrafficExtension{
			Selector:     sel,
			TargetRefs:   []*typev1beta1.PolicyTargetReference{{Kind: "Pod", Name: "p"}},
			Phase:        8,
			Match:        []*extensions.TrafficSelector{{Mode: 9, Ports: []*typev1beta1.PortSelector{{Number: 70000}}}},
			FilterConfig: lua(onRequest),
		}, wantErr: []string{
			"spec.targetRefs: only one of targetRefs or workloadSelector can be set",
			"spec.targetRefs[0].kind: targetRef must be to one of",
			"spec.phase: unknown phase 8",
			"spec.match[0].mode: unknown workload mode 9",
			"spec.match[0].ports[0].number: spec.Match[0].Ports[0] is out of range: 70000",
		}},
	}
	secRun(t, validation.ValidateTrafficExtension, cases)
}
