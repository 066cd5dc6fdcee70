package validation

import (
	"net/url"
	"strings"

	extensions "istio.io/api/extensions/v1alpha1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
)

const (
	secMaxPullSecretLen  = 253
	secMaxPluginNameLen  = 256
	secMaxEnvNameLen     = 256
	secMaxLuaInlineBytes = 65536
)

// secWasmModule holds the module fields WasmPlugin and TrafficExtension.wasm share.
type secWasmModule struct {
	url          string
	sha256       string
	pullPolicy   extensions.PullPolicy
	pullSecret   string
	pluginName   string
	failStrategy extensions.FailStrategy
	vm           *extensions.VmConfig
	pluginType   extensions.PluginType
	// maxNameText is how Istio words the pluginName limit for the kind
	maxNameText string
}

// ValidateWasmPlugin checks a WasmPlugin.
func ValidateWasmPlugin(cfg config.Config) (Warning, error) {
	in, ok := cfg.Spec.(*extensions.WasmPlugin)
	if !ok {
		return nil, secCastError("WasmPlugin", cfg.Spec)
	}
	if in == nil {
		in = &extensions.WasmPlugin{}
	}
	r := &Report{}
	secPolicyAttachment(r, secSpec, in.GetSelector(), in.GetTargetRef(), in.GetTargetRefs())
	secWasmFields(r, secSpec, secWasmModule{
		url: in.GetUrl(), sha256: in.GetSha256(), pullPolicy: in.GetImagePullPolicy(),
		pullSecret: in.GetImagePullSecret(), pluginName: in.GetPluginName(),
		failStrategy: in.GetFailStrategy(), vm: in.GetVmConfig(), pluginType: in.GetType(),
		maxNameText: "less than 255",
	})
	if !secEnumKnown(in.GetPhase(), extensions.PluginPhase_name) {
		r.Errorf(secSpec.Field("phase"), "unknown phase %d", int32(in.GetPhase()))
	}
	for i, m := range in.GetMatch() {
		p := secSpec.Field("match").Index(i)
		if m == nil {
			r.Errorf(p, "spec.Match[%d] is nil", i)
			continue
		}
		secTrafficSelector(r, p, i, m.GetMode(), m.GetPorts())
	}
	return r.Result()
}

// ValidateTrafficExtension checks a TrafficExtension.
func ValidateTrafficExtension(cfg config.Config) (Warning, error) {
	in, ok := cfg.Spec.(*extensions.TrafficExtension)
	if !ok {
		return nil, secCastError("TrafficExtension", cfg.Spec)
	}
	if in == nil {
		in = &extensions.TrafficExtension{}
	}
	r := &Report{}
	secPolicyAttachment(r, secSpec, in.GetSelector(), nil, in.GetTargetRefs())
	if !secEnumKnown(in.GetPhase(), extensions.TrafficExtension_ExecutionPhase_name) {
		r.Errorf(secSpec.Field("phase"), "unknown phase %d", int32(in.GetPhase()))
	}
	for i, m := range in.GetMatch() {
		p := secSpec.Field("match").Index(i)
		if m == nil {
			r.Errorf(p, "spec.Match[%d] is nil", i)
			continue
		}
		secTrafficSelector(r, p, i, m.GetMode(), m.GetPorts())
	}
	switch fc := in.GetFilterConfig().(type) {
	case *extensions.TrafficExtension_Wasm:
		if fc.Wasm == nil {
			r.Errorf(secSpec.Field("wasm"), "wasm must not be null")
			break
		}
		w := fc.Wasm
		p := secSpec.Field("wasm")
		secWasmFields(r, p, secWasmModule{
			url: w.GetUrl(), sha256: w.GetSha256(), pullPolicy: w.GetImagePullPolicy(),
			pullSecret: w.GetImagePullSecret(), pluginName: w.GetPluginName(),
			failStrategy: w.GetFailStrategy(), vm: w.GetVmConfig(), pluginType: w.GetType(),
			maxNameText: "less than 256",
		})
	case *extensions.TrafficExtension_Lua:
		secLuaConfig(r, secSpec.Field("lua"), fc.Lua)
	default:
		r.Errorf(secSpec, "exactly one of wasm or lua must be set")
	}
	return r.Result()
}

func secLuaConfig(r *Report, p Path, lua *extensions.LuaConfig) {
	if lua == nil {
		r.Errorf(p, "lua config cannot be nil")
		return
	}
	code := lua.GetInlineCode()
	switch {
	case code == "":
		r.Errorf(p.Field("inlineCode"), "lua.inlineCode cannot be empty")
	case len(code) > secMaxLuaInlineBytes:
		r.Errorf(p.Field("inlineCode"), "lua.inlineCode exceeds maximum size of 64KB (found %d bytes; use a wasm filter instead)", len(code))
	case !strings.Contains(code, "envoy_on_request") && !strings.Contains(code, "envoy_on_response"):
		r.Warnf(p.Field("inlineCode"), "inlineCode defines neither envoy_on_request nor envoy_on_response and will do nothing")
	}
}

// secTrafficSelector checks match[i] of a WasmPlugin or TrafficExtension;
// Istio names it spec.Match[i] in its messages.
func secTrafficSelector(r *Report, p Path, i int, mode typev1beta1.WorkloadMode, ports []*typev1beta1.PortSelector) {
	if !secEnumKnown(mode, typev1beta1.WorkloadMode_name) {
		r.Errorf(p.Field("mode"), "unknown workload mode %d", int32(mode))
	}
	for j, port := range ports {
		pp := p.Field("ports").Index(j)
		if port == nil {
			r.Errorf(pp, "spec.Match[%d].Ports[%d] is nil", i, j)
			continue
		}
		if CheckPort(port.GetNumber()) != nil {
			r.Errorf(pp.Field("number"), "spec.Match[%d].Ports[%d] is out of range: %d (port numbers are 1..65535)", i, j, port.GetNumber())
		}
	}
}

func secWasmFields(r *Report, p Path, m secWasmModule) {
	r.Add(p.Field("url"), secWasmURL(m.url))
	if m.sha256 != "" {
		r.Add(p.Field("sha256"), secSHA256(m.sha256))
		if _, digest, ok := strings.Cut(m.url, "@sha256:"); ok && digest != m.sha256 {
			r.Errorf(p.Field("sha256"), "sha256 %q does not match the digest %q referenced in url", m.sha256, digest)
		}
	}
	if len(m.pullSecret) > secMaxPullSecretLen {
		r.Errorf(p.Field("imagePullSecret"), "imagePullSecret field must be less than %d characters long", secMaxPullSecretLen)
	}
	if len(m.pluginName) > secMaxPluginNameLen {
		// sic: Istio's bound is 256 characters for both kinds
		r.Errorf(p.Field("pluginName"), "pluginName field must be %s characters long", m.maxNameText)
	}
	if !secEnumKnown(m.pullPolicy, extensions.PullPolicy_name) {
		r.Errorf(p.Field("imagePullPolicy"), "unknown imagePullPolicy %d", int32(m.pullPolicy))
	}
	if !secEnumKnown(m.failStrategy, extensions.FailStrategy_name) {
		r.Errorf(p.Field("failStrategy"), "unknown failStrategy %d", int32(m.failStrategy))
	}
	if !secEnumKnown(m.pluginType, extensions.PluginType_name) {
		r.Errorf(p.Field("type"), "unknown plugin type %d", int32(m.pluginType))
	}
	secVMConfig(r, p.Field("vmConfig"), m.vm)
}

// secWasmURL requires a URL with scheme file, http, https or oci, or no
// scheme at all (an OCI image reference).
func secWasmURL(raw string) error {
	if raw == "" {
		return errorfSec("url field needs to be set")
	}
	u, err := url.ParseRequestURI(raw)
	if err != nil || u.Scheme == "" {
		// No scheme: an OCI reference such as ghcr.io/org/filter:v1.
		nu, nerr := url.ParseRequestURI("http://" + raw)
		if nerr != nil {
			if err == nil {
				err = nerr
			}
			return errorfSec("failed to parse url: %v", err)
		}
		if nu.Host == "" {
			return errorfSec("url %q has no registry host", raw)
		}
		return nil
	}
	switch u.Scheme {
	case "http", "https", "oci":
		if u.Host == "" {
			return errorfSec("url %q has no host", raw)
		}
	case "file":
		if u.Path == "" && u.Opaque == "" {
			return errorfSec("url %q has no file path", raw)
		}
	default:
		return errorfSec("url contains unsupported scheme: %s (must be one of file, http, https, oci)", u.Scheme)
	}
	return nil
}

func secSHA256(s string) error {
	if len(s) != 64 {
		return errorfSec("sha256 field must be 64 characters long, found %d", len(s))
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'f' || c >= '0' && c <= '9') {
			return errorfSec("sha256 field must match [a-f0-9]{64} pattern")
		}
	}
	return nil
}

func secVMConfig(r *Report, p Path, vm *extensions.VmConfig) {
	seen := map[string]bool{}
	for i, env := range vm.GetEnv() {
		ep := p.Field("env").Index(i)
		if env == nil {
			r.Errorf(ep, "env must not be null")
			continue
		}
		name := env.GetName()
		switch {
		case name == "":
			r.Errorf(ep.Field("name"), "spec.vmConfig.env invalid: env name must not be empty")
		case len(name) > secMaxEnvNameLen:
			// sic: Istio's bound is 256 characters
			r.Errorf(ep.Field("name"), "env.name field must be less than 255 characters long")
		case seen[name]:
			r.Errorf(ep.Field("name"), "duplicate env %q", name)
		}
		seen[name] = true
		if !secEnumKnown(env.GetValueFrom(), extensions.EnvValueSource_name) {
			r.Errorf(ep.Field("valueFrom"), "unknown valueFrom %d", int32(env.GetValueFrom()))
		} else if env.GetValueFrom() != extensions.EnvValueSource_INLINE && env.GetValue() != "" {
			r.Errorf(ep.Field("value"), "value may only be set when valueFrom is INLINE")
		}
	}
}
