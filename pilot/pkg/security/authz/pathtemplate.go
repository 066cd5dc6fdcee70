package authz

import (
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	uritemplate "github.com/envoyproxy/go-control-plane/envoy/extensions/path/match/uri_template/v3"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// Istio path templates: {*} matches one path segment, {**} any number of
// segments (validation allows {**} once, last but for a literal suffix).
// Envoy's uri_template matcher spells them * and **.
const (
	matchOneTemplate = "{*}"
	matchAnyTemplate = "{**}"
)

var templateToEnvoy = strings.NewReplacer(matchOneTemplate, "*", matchAnyTemplate, "**")

func isPathTemplate(path string) bool {
	return strings.Contains(path, matchOneTemplate) || strings.Contains(path, matchAnyTemplate)
}

// pathTemplatePermission matches the request path against a template.
// Bare * and ** already in the path are kept as they are.
func pathTemplatePermission(path string) *rbacpb.Permission {
	cfg := &uritemplate.UriTemplateMatchConfig{PathTemplate: templateToEnvoy.Replace(path)}
	return &rbacpb.Permission{Rule: &rbacpb.Permission_UriTemplate{UriTemplate: &core.TypedExtensionConfig{
		Name:        "uri-template",
		TypedConfig: protoconv.MessageToAny(cfg),
	}}}
}
