package mesh

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	meshconfig "istio.io/api/mesh/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/validation"
)

// Warnings are the problems of a mesh document that did not stop it from
// being applied.
type Warnings struct {
	// Dropped lists unknown fields that were ignored, as paths in the
	// document (e.g. "trustDomainz", "defaultConfig.drainDurationz").
	Dropped []string
	// Validation lists validation findings that do not reject the config,
	// each naming its field path.
	Validation []error
}

// Empty reports whether there is nothing to warn about.
func (w Warnings) Empty() bool { return len(w.Dropped) == 0 && len(w.Validation) == 0 }

// Messages renders every warning as one line.
func (w Warnings) Messages() []string {
	out := make([]string, 0, len(w.Dropped)+len(w.Validation))
	for _, p := range w.Dropped {
		out = append(out, fmt.Sprintf("unknown field %q ignored", p))
	}
	for _, v := range w.Validation {
		out = append(out, v.Error())
	}
	return out
}

// ApplyMeshConfig applies a mesh YAML document on a copy of base (base is not
// modified; nil means DefaultMeshConfig) and validates the result. See the
// package documentation for the merge rules. The returned config is new and
// owned by the caller.
func ApplyMeshConfig(text string, base *meshconfig.MeshConfig) (*meshconfig.MeshConfig, Warnings, error) {
	var warns Warnings
	doc, js, err := yamlObject(text)
	if err != nil {
		return nil, warns, fmt.Errorf("invalid mesh config: %w", err)
	}
	overlay := &meshconfig.MeshConfig{}
	dropped, err := config.ApplyJSON(overlay, js)
	if err != nil {
		return nil, warns, fmt.Errorf("invalid mesh config: %w", err)
	}
	sort.Strings(dropped)
	warns.Dropped = dropped

	if base == nil {
		base = DefaultMeshConfig()
	}
	out := proto.Clone(base).(*meshconfig.MeshConfig)
	if err := mergeMesh(out, overlay, doc); err != nil {
		return nil, warns, fmt.Errorf("invalid mesh config: %w", err)
	}

	vwarn, verr := validation.ValidateMeshConfig(out)
	if verr != nil {
		return nil, warns, fmt.Errorf("invalid mesh config: %w", verr)
	}
	warns.Validation = validation.Problems(vwarn)
	return out, warns, nil
}

// Top-level MeshConfig fields that merge instead of being replaced.
const (
	fieldDefaultConfig      = "default_config"
	fieldDefaultProviders   = "default_providers"
	fieldExtensionProviders = "extension_providers"
	fieldTrustDomainAliases = "trust_domain_aliases"
)

// mergeMesh overlays the fields present in doc from overlay onto out.
func mergeMesh(out, overlay *meshconfig.MeshConfig, doc map[string]json.RawMessage) error {
	dst, src := out.ProtoReflect(), overlay.ProtoReflect()
	for fd, raw := range presentFields(src.Descriptor(), doc) {
		switch fd.Name() {
		case fieldDefaultConfig:
			sub, err := subObject(raw)
			if err != nil {
				return fmt.Errorf("defaultConfig: %w", err)
			}
			base := out.GetDefaultConfig()
			if base == nil {
				base = &meshconfig.ProxyConfig{}
			}
			out.DefaultConfig = mergeProxyConfig(base, overlay.GetDefaultConfig(), sub)
		case fieldDefaultProviders:
			sub, err := subObject(raw)
			if err != nil {
				return fmt.Errorf("defaultProviders: %w", err)
			}
			if out.DefaultProviders == nil {
				out.DefaultProviders = &meshconfig.MeshConfig_DefaultProviders{}
			}
			copyPresent(out.DefaultProviders.ProtoReflect(), overlay.GetDefaultProviders().ProtoReflect(), sub)
		case fieldExtensionProviders:
			out.ExtensionProviders = mergeProviders(out.ExtensionProviders, overlay.ExtensionProviders)
		case fieldTrustDomainAliases:
			// handled below: the union is taken whether or not the field is set
		default:
			copyField(dst, src, fd)
		}
	}
	out.TrustDomainAliases = sortedUnion(out.TrustDomainAliases, overlay.TrustDomainAliases)
	return nil
}

// mergeProxyConfig overlays the proxy config fields present in doc onto base
// (which it modifies and returns): present fields replace, proxyMetadata
// merges key by key, and proxyHeaders keeps the base sub-headers the overlay
// leaves unset.
func mergeProxyConfig(base, overlay *meshconfig.ProxyConfig, doc map[string]json.RawMessage) *meshconfig.ProxyConfig {
	origMeta := base.ProxyMetadata
	origHeaders := base.ProxyHeaders
	copyPresent(base.ProtoReflect(), overlay.ProtoReflect(), doc)
	if len(origMeta) > 0 || len(base.ProxyMetadata) > 0 {
		merged := make(map[string]string, len(origMeta)+len(base.ProxyMetadata))
		for k, v := range origMeta {
			merged[k] = v
		}
		for k, v := range base.ProxyMetadata {
			merged[k] = v
		}
		base.ProxyMetadata = merged
	}
	if ph := base.ProxyHeaders; ph != nil && origHeaders != nil && ph != origHeaders {
		if ph.ForwardedClientCert == meshconfig.ForwardClientCertDetails_UNDEFINED {
			ph.ForwardedClientCert = origHeaders.ForwardedClientCert
		}
		ph.RequestId = orDefault(ph.RequestId, origHeaders.RequestId)
		ph.AttemptCount = orDefault(ph.AttemptCount, origHeaders.AttemptCount)
		ph.Server = orDefault(ph.Server, origHeaders.Server)
		ph.EnvoyDebugHeaders = orDefault(ph.EnvoyDebugHeaders, origHeaders.EnvoyDebugHeaders)
	}
	return base
}

func orDefault[T any](v, def *T) *T {
	if v == nil {
		return def
	}
	return v
}

// mergeProviders replaces the provider of a known name and appends new names.
func mergeProviders(base, overlay []*meshconfig.MeshConfig_ExtensionProvider) []*meshconfig.MeshConfig_ExtensionProvider {
	out := slices.Clone(base)
	for _, p := range overlay {
		i := slices.IndexFunc(out, func(e *meshconfig.MeshConfig_ExtensionProvider) bool {
			return e != nil && p != nil && e.GetName() == p.GetName()
		})
		if i < 0 {
			out = append(out, p)
			continue
		}
		merged := proto.Clone(out[i]).(*meshconfig.MeshConfig_ExtensionProvider)
		merged.Provider = p.Provider
		out[i] = merged
	}
	return out
}

func sortedUnion(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// presentFields maps the keys of doc (JSON or proto names) to the fields of
// md, leaving out unknown keys and explicit nulls, which change nothing.
func presentFields(md protoreflect.MessageDescriptor, doc map[string]json.RawMessage) map[protoreflect.FieldDescriptor]json.RawMessage {
	out := make(map[protoreflect.FieldDescriptor]json.RawMessage, len(doc))
	fields := md.Fields()
	for key, raw := range doc {
		fd := fields.ByJSONName(key)
		if fd == nil {
			fd = fields.ByTextName(key)
		}
		if fd == nil || isNull(raw) {
			continue
		}
		out[fd] = raw
	}
	return out
}

// copyPresent copies the fields present in doc from src to dst.
func copyPresent(dst, src protoreflect.Message, doc map[string]json.RawMessage) {
	for fd := range presentFields(dst.Descriptor(), doc) {
		copyField(dst, src, fd)
	}
}

// copyField makes dst's fd equal to src's; zero values clear it.
func copyField(dst, src protoreflect.Message, fd protoreflect.FieldDescriptor) {
	if !src.Has(fd) {
		dst.Clear(fd)
		return
	}
	dst.Set(fd, src.Get(fd))
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func subObject(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("expected an object: %v", err)
	}
	return m, nil
}

// yamlObject converts a YAML document to JSON and splits its top level. An
// empty document is an empty object.
func yamlObject(text string) (map[string]json.RawMessage, []byte, error) {
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot parse YAML: %v", err)
	}
	if isNull(js) {
		return map[string]json.RawMessage{}, []byte("{}"), nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, nil, fmt.Errorf("the document must be a YAML mapping: %v", err)
	}
	return doc, js, nil
}

// ApplyMeshNetworks parses a meshNetworks YAML document on top of
// DefaultMeshNetworks and validates it. Unknown fields are ignored; use
// ParseMeshNetworks to learn which.
func ApplyMeshNetworks(text string) (*meshconfig.MeshNetworks, error) {
	mn, _, err := ParseMeshNetworks(text)
	return mn, err
}

// ParseMeshNetworks is ApplyMeshNetworks that also returns the warnings
// (dropped unknown fields).
func ParseMeshNetworks(text string) (*meshconfig.MeshNetworks, Warnings, error) {
	return parseMeshNetworks(text, true)
}

// parseMeshNetworks is ParseMeshNetworks; a gateway address may be a
// hostname only with hostnames.
func parseMeshNetworks(text string, hostnames bool) (*meshconfig.MeshNetworks, Warnings, error) {
	var warns Warnings
	_, js, err := yamlObject(text)
	if err != nil {
		return nil, warns, fmt.Errorf("invalid mesh networks: %w", err)
	}
	out := DefaultMeshNetworks()
	dropped, err := config.ApplyJSON(out, js)
	if err != nil {
		return nil, warns, fmt.Errorf("invalid mesh networks: %w", err)
	}
	if out.Networks == nil {
		out.Networks = map[string]*meshconfig.Network{}
	}
	sort.Strings(dropped)
	warns.Dropped = dropped
	if err := validation.ValidateMeshNetworksWith(out, hostnames); err != nil {
		return nil, warns, fmt.Errorf("invalid mesh networks: %w", err)
	}
	return out, warns, nil
}
