package mesh

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/config"
)

// ApplyProxyConfig applies a ProxyConfig YAML (or JSON) document, such as a
// pod's proxy.istio.io/config annotation, on a copy of base (base is not
// modified; nil means an empty ProxyConfig), with the merge rules of
// defaultConfig in a mesh document: fields present replace, proxyMetadata
// merges key by key, proxyHeaders keeps the sub-headers the document leaves
// unset. Unknown fields are ignored, as Istio ignores them.
func ApplyProxyConfig(text string, base *meshconfig.ProxyConfig) (*meshconfig.ProxyConfig, error) {
	doc, js, err := yamlObject(text)
	if err != nil {
		return nil, fmt.Errorf("invalid proxy config: %w", err)
	}
	overlay := &meshconfig.ProxyConfig{}
	if _, err := config.ApplyJSON(overlay, js); err != nil {
		return nil, fmt.Errorf("invalid proxy config: %w", err)
	}
	return mergeProxyConfig(cloneProxyConfig(base), overlay, doc), nil
}

// OverlayProxyConfig returns a copy of base with the fields overlay sets (to
// a value other than the zero one) applied as ApplyProxyConfig applies a
// document: what Istio's merge of ProxyConfig resources does, since it
// round-trips each one through YAML, which leaves zero fields out. Neither
// argument is modified; a nil overlay gives a copy of base.
func OverlayProxyConfig(base, overlay *meshconfig.ProxyConfig) *meshconfig.ProxyConfig {
	out := cloneProxyConfig(base)
	if overlay == nil {
		return out
	}
	js, err := protojson.Marshal(overlay)
	if err != nil {
		return out
	}
	doc := map[string]json.RawMessage{}
	if err := json.Unmarshal(js, &doc); err != nil {
		return out
	}
	return mergeProxyConfig(out, proto.Clone(overlay).(*meshconfig.ProxyConfig), doc)
}

func cloneProxyConfig(pc *meshconfig.ProxyConfig) *meshconfig.ProxyConfig {
	if pc == nil {
		return &meshconfig.ProxyConfig{}
	}
	return proto.Clone(pc).(*meshconfig.ProxyConfig)
}
