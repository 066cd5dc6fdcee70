package inject

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // the encoder whose output Istio's PROXY_CONFIG carries
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// templateFuncs are sprig's text functions plus those Istio's injection
// templates add (the latter win on a name clash: indent, toYaml, contains).
var templateFuncs = func() template.FuncMap {
	m := sprig.TxtFuncMap()
	for k, v := range istioFuncs() {
		m[k] = v
	}
	return m
}()

func istioFuncs() template.FuncMap {
	return template.FuncMap{
		"formatDuration":         func(d *durationpb.Duration) string { return d.AsDuration().String() },
		"isset":                  isset,
		"excludeInboundPort":     excludeInboundPort,
		"includeInboundPorts":    includeInboundPorts,
		"kubevirtInterfaces":     func(s string) string { return s },
		"excludeInterfaces":      func(s string) string { return s },
		"applicationPorts":       applicationPorts,
		"annotation":             annotationOr,
		"valueOrDefault":         valueOrDefault,
		"toJSON":                 stringMapJSON,
		"fromJSON":               fromJSON,
		"structToJSON":           structToJSON,
		"protoToJSON":            protoToJSON,
		"toYaml":                 toYAML,
		"indent":                 indentAfterFirst,
		"directory":              func(p string) string { d, _ := path.Split(p); return d },
		"contains":               func(needle, haystack string) bool { return strings.Contains(haystack, needle) },
		"toLower":                strings.ToLower,
		"appendMultusNetwork":    appendMultusNetwork,
		"env":                    envOr,
		"omit":                   omitKeys,
		"strdict":                strdict,
		"toJsonMap":              func(ms ...map[string]string) string { b, _ := json.Marshal(mergeMaps(ms...)); return string(b) },
		"mergeMaps":              mergeMaps,
		"omitNil":                omitNil,
		"otelResourceAttributes": otelResourceAttributes,
	}
}

func isset(m map[string]string, key string) bool {
	_, ok := m[key]
	return ok
}

// envOr reads istiod's environment at render time, as Istio's template
// function does (the one environment read outside bootstrap: templates ask
// for it by name).
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// annotationOr is the annotation's value, or the default formatted with %v.
func annotationOr(meta metav1.ObjectMeta, name string, def any) string {
	if v, ok := meta.Annotations[name]; ok {
		return v
	}
	return fmt.Sprint(def)
}

func valueOrDefault(v, def any) any {
	if v == nil || v == "" {
		return def
	}
	return v
}

// excludeInboundPort adds port to a comma-separated list unless it is
// already there (or is empty or 0).
func excludeInboundPort(port any, list string) string {
	p := strings.TrimSpace(fmt.Sprint(port))
	if p == "" || p == "0" {
		return list
	}
	var out []string
	for _, q := range strings.Split(list, ",") {
		if q == p {
			return list
		}
		if q = strings.TrimSpace(q); q != "" {
			out = append(out, q)
		}
	}
	return strings.Join(append(out, p), ",")
}

// containerPorts lists the TCP container ports of the containers keep selects.
func containerPorts(cs []corev1.Container, keep func(corev1.Container) bool) string {
	var out []string
	for _, c := range cs {
		if !keep(c) {
			continue
		}
		for _, p := range c.Ports {
			if p.Protocol == corev1.ProtocolUDP || p.Protocol == corev1.ProtocolSCTP {
				continue
			}
			out = append(out, strconv.Itoa(int(p.ContainerPort)))
		}
	}
	return strings.Join(out, ",")
}

func includeInboundPorts(cs []corev1.Container) string {
	return containerPorts(cs, func(corev1.Container) bool { return true })
}

func applicationPorts(cs []corev1.Container) string {
	return containerPorts(cs, func(c corev1.Container) bool { return c.Name != ProxyContainerName })
}

func stringMapJSON(m map[string]string) string {
	if m == nil {
		return "{}"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// fromJSON decodes JSON; undecodable text gives the string "{}" (Istio's
// quirk, kept: templates range over the result).
func fromJSON(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		scope.Warnf("template fromJSON: cannot decode %q: %v", s, err)
		return "{}"
	}
	return v
}

func structToJSON(v any) string {
	if v == nil {
		return "{}"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// protoToJSON renders a message as jsonpb does (Istio's encoder); a
// ProxyConfig loses the fields equal to the defaults first.
func protoToJSON(m proto.Message) string {
	if pc, ok := m.(*meshconfig.ProxyConfig); ok {
		if pc == nil {
			return "{}"
		}
		m = withoutDefaults(pc)
	}
	if m == nil {
		return "{}"
	}
	s, err := (&jsonpb.Marshaler{}).MarshalToString(protoadapt.MessageV1Of(m))
	if err != nil {
		scope.Warnf("template protoToJSON: %v", err)
		return "{}"
	}
	return s
}

func toYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// indentAfterFirst indents every line but the first by n spaces (Istio's
// indent; sprig's nindent and friends are unchanged).
func indentAfterFirst(n int, s string) string {
	lines := strings.Split(s, "\n")
	pad := strings.Repeat(" ", max(n, 0))
	for i := 1; i < len(lines); i++ {
		lines[i] = pad + lines[i]
	}
	return strings.Join(lines, "\n")
}

func omitKeys(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// strdict is sprig's dict with string values (usable as labels).
func strdict(kv ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		if i+1 < len(kv) {
			out[kv[i]] = kv[i+1]
		} else {
			out[kv[i]] = ""
		}
	}
	return out
}

func mergeMaps(ms ...map[string]string) map[string]string {
	if len(ms) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// omitNil drops nil values from maps and lists, recursively; a map or list
// left empty becomes nil itself.
func omitNil(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if !hasNil(x) {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e = omitNil(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if !hasNil(x) {
			return x
		}
		out := make([]any, 0, len(x))
		for _, e := range x {
			if e = omitNil(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

// hasNil reports whether omitNil would change v.
func hasNil(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range x {
			if hasNil(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasNil(e) {
				return true
			}
		}
	}
	return false
}
