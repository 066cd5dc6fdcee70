package inject

import (
	"encoding/json"
	"fmt"
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// appendMultusNetwork adds the istio-cni network ("ns/name" or "name") to a
// pod's k8s.v1.cni.cncf.io/networks value, a JSON list or a comma-separated
// list, unless it is there already. An unparsable JSON value is kept.
func appendMultusNetwork(existing, network string) string {
	if existing == "" {
		return network
	}
	if i := strings.LastIndex(existing, "]"); i >= 0 {
		var nets []map[string]any
		if err := json.Unmarshal([]byte(existing), &nets); err != nil {
			scope.Warnf("template appendMultusNetwork: %s is not a JSON list of networks: %v", existing, err)
			return existing
		}
		ns, name := "", network
		if j := strings.Index(network, "/"); j >= 0 {
			ns, name = network[:j], network[j+1:]
		}
		for _, n := range nets {
			if n["name"] != name {
				continue
			}
			have, _ := n["namespace"].(string)
			if have == ns {
				return existing
			}
		}
		entry := fmt.Sprintf(`, {"name": "%s"}`, name)
		if ns != "" {
			entry = fmt.Sprintf(`, {"name": "%s", "namespace": "%s"}`, name, ns)
		}
		return existing[:i] + entry + existing[i:]
	}
	for _, n := range strings.Split(existing, ",") {
		if strings.TrimSpace(n) == network {
			return existing
		}
	}
	return existing + ", " + network
}

// otelResourceAttributes is the OTEL_RESOURCE_ATTRIBUTES value Istio sets
// when an OpenTelemetry provider of the mesh asks for the OTel semantic
// conventions ("" otherwise): service.namespace, service.version and
// service.instance.id, each from its resource.opentelemetry.io/ annotation
// first.
func otelResourceAttributes(mc *meshconfig.MeshConfig, annotations, labels map[string]string,
	namespace string, containers []corev1.Container,
) string {
	wanted := false
	for _, p := range mc.GetExtensionProviders() {
		if p.GetOpentelemetry().GetServiceAttributeEnrichment() == meshconfig.MeshConfig_ExtensionProvider_OTEL_SEMANTIC_CONVENTIONS {
			wanted = true
			break
		}
	}
	if !wanted {
		return ""
	}
	const prefix = "resource.opentelemetry.io/"
	var attrs []string
	switch {
	case annotations[prefix+"service.namespace"] != "":
		attrs = append(attrs, "service.namespace="+annotations[prefix+"service.namespace"])
	case namespace != "":
		attrs = append(attrs, "service.namespace="+namespace)
	}
	switch {
	case annotations[prefix+"service.version"] != "":
		attrs = append(attrs, "service.version="+annotations[prefix+"service.version"])
	case labels["app.kubernetes.io/version"] != "":
		attrs = append(attrs, "service.version="+labels["app.kubernetes.io/version"])
	case len(containers) == 1:
		if v := imageVersion(containers[0].Image); v != "" {
			attrs = append(attrs, "service.version="+v)
		}
	}
	switch {
	case annotations[prefix+"service.instance.id"] != "":
		attrs = append(attrs, "service.instance.id="+annotations[prefix+"service.instance.id"])
	case len(containers) > 0:
		attrs = append(attrs, "service.instance.id="+namespace+".$(POD_NAME)."+containers[0].Name)
	}
	return strings.Join(attrs, ",")
}

// imageVersion is "tag@digest", "digest" or "tag" of an image reference.
func imageVersion(image string) string {
	digest := ""
	if i := strings.Index(image, "@"); i >= 0 {
		image, digest = image[:i], image[i+1:]
	}
	tag := ""
	if c := strings.LastIndex(image, ":"); c > strings.LastIndex(image, "/") {
		tag = image[c+1:]
	}
	switch {
	case tag != "" && digest != "":
		return tag + "@" + digest
	case digest != "":
		return digest
	}
	return tag
}
