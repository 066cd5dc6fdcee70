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
	})
	if !secEnumKnown(in.GetPhase(), extensions.PluginPhase_name) {
		r.Errorf(secSpec.Field("phase"), "unknown phase %d", int32(in.GetPhase()))
	}
	for i, m := range in.GetMatch() {
		p := secSpec.Field("match").Index(i)
		if m == nil {
			r.Errorf(p, "match must not be null")
			continue
		}
		secTrafficSelector(r, p, m.GetMode(), m.GetPorts())
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
			r.Errorf(p, "match must not be null")
			continue
		}
		secTrafficSelector(r, p, m.GetMode(), m.GetPorts())
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
		})
	case *extensions.TrafficExtension_Lua:
		secLuaConfig(r, secSpec.Field("lua"), fc.Lua)
	default:
		r.Errorf(secSpec, "exactly one of wasm or lua must be set")
	}
	return r.Result()
}

func secLuaConfig(r *Report, p Path, lua *extensions.LuaConfig) {
	code := lua.GetInlineCode()
	switch {
	case strings.TrimSpace(code) == "":
		r.Errorf(p.Field("inlineCode"), "inlineCode is required")
	case len(code) > secMaxLuaInlineBytes:
		r.Errorf(p.Field("inlineCode"), "inlineCode must be at most %d bytes (64KB), found %d; use a wasm filter instead",
			secMaxLuaInlineBytes, len(code))
	case !strings.Contains(code, "envoy_on_request") && !strings.Contains(code, "envoy_on_response"):
		r.Warnf(p.Field("inlineCode"), "inlineCode defines neither envoy_on_request nor envoy_on_response and will do nothing")
	}
}

func secTrafficSelector(r *Report, p Path, mode typev1beta1.WorkloadMode, ports []*typev1beta1.PortSelector) {
	if !secEnumKnown(mode, typev1beta1.WorkloadMode_name) {
		r.Errorf(p.Field("mode"), "unknown workload mode %d", int32(mode))
	}
	for j, port := range ports {
		pp := p.Field("ports").Index(j)
		if port == nil {
			r.Errorf(pp, "port must not be null")
			continue
		}
		r.Add(pp.Field("number"), CheckPort(port.GetNumber()))
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
		r.Errorf(p.Field("imagePullSecret"), "imagePullSecret field must be at most %d characters long", secMaxPullSecretLen)
	}
	if len(m.pluginName) > secMaxPluginNameLen {
		r.Errorf(p.Field("pluginName"), "pluginName field must be at most %d characters long", secMaxPluginNameLen)
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
			return errorfSec("failed to parse url %q: %v", raw, err)
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
			r.Errorf(ep.Field("name"), "env name must not be empty")
		case len(name) > secMaxEnvNameLen:
			r.Errorf(ep.Field("name"), "env name must be at most %d characters long", secMaxEnvNameLen)
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
