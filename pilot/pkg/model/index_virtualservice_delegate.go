package model

import (
	"maps"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// Delegation: a VirtualService without hosts is a delegate; a root
// VirtualService hands the traffic of an HTTP route to a delegate with
// route.delegate. The root's delegating route is replaced by the delegate's
// routes, each merged with it: match conditions are combined (a delegate
// match must narrow a root match, else the delegate route is dropped), and
// what the delegate route leaves unset (rewrite, timeout, retries, fault,
// mirror, CORS, headers, ...) is inherited from the root route. A delegate
// must be visible (exportTo) to the root's namespace; a missing or
// invisible delegate drops just the delegating route. Delegates themselves
// are not bound to any gateway.

// mergeDelegates splits resolved VirtualServices into delegates and the
// rest, merges delegates into their roots, and returns the VirtualServices
// to index (roots merged) and, per root, the delegates it references. Roots
// are copied before merging; the inputs are not modified.
func mergeDelegates(vses []*config.Config, defaults []string) ([]*config.Config, map[ConfigKey][]ConfigKey) {
	delegates := map[types.NamespacedName]*config.Config{}
	var roots []int
	out := make([]*config.Config, 0, len(vses))
	for _, cfg := range vses {
		vs := cfg.Spec.(*networking.VirtualService)
		switch {
		case len(vs.Hosts) == 0:
			delegates[nameOf(cfg)] = cfg
		case isRootVirtualService(vs):
			roots = append(roots, len(out))
			out = append(out, cfg)
		default:
			out = append(out, cfg)
		}
	}
	byRoot := make(map[ConfigKey][]ConfigKey, len(roots))
	for _, i := range roots {
		root := *out[i]
		key := ConfigKey{Kind: kind.VirtualService, Name: root.Name, Namespace: root.Namespace}
		merged, refs := mergeRoot(&root, delegates, defaults)
		root.Spec = merged
		out[i] = &root
		byRoot[key] = refs
	}
	return out, byRoot
}

func isRootVirtualService(vs *networking.VirtualService) bool {
	for _, r := range vs.Http {
		if r.Delegate != nil {
			return true
		}
	}
	return false
}

// mergeRoot returns a copy of the root's spec with its delegating routes
// expanded, and the delegates it references (found or not).
func mergeRoot(root *config.Config, delegates map[types.NamespacedName]*config.Config, defaults []string) (*networking.VirtualService, []ConfigKey) {
	spec := proto.Clone(root.Spec.(*networking.VirtualService)).(*networking.VirtualService)
	var refs []ConfigKey
	routes := make([]*networking.HTTPRoute, 0, len(spec.Http))
	for _, r := range spec.Http {
		if r.Delegate == nil {
			routes = append(routes, r)
			continue
		}
		ns := r.Delegate.Namespace
		if ns == "" {
			ns = root.Namespace
		}
		refs = append(refs, ConfigKey{Kind: kind.VirtualService, Name: r.Delegate.Name, Namespace: ns})
		d, ok := delegates[types.NamespacedName{Namespace: ns, Name: r.Delegate.Name}]
		if !ok {
			continue
		}
		dspec := d.Spec.(*networking.VirtualService)
		if !newExportSet(dspec.ExportTo, d.Namespace, defaults).visibleTo(root.Namespace) {
			continue
		}
		copied := proto.Clone(dspec).(*networking.VirtualService)
		routes = append(routes, mergeHTTPRoutes(r, copied.Http)...)
	}
	spec.Http = routes
	return spec, refs
}

// mergeHTTPRoutes merges every delegate route with the root route; delegate
// routes whose matches conflict with the root's are dropped. The delegate
// routes are modified (callers pass copies).
func mergeHTTPRoutes(root *networking.HTTPRoute, delegate []*networking.HTTPRoute) []*networking.HTTPRoute {
	out := make([]*networking.HTTPRoute, 0, len(delegate))
	for _, d := range delegate {
		if m := mergeHTTPRoute(root, d); m != nil {
			out = append(out, m)
		}
	}
	return out
}

func mergeHTTPRoute(root, d *networking.HTTPRoute) *networking.HTTPRoute {
	matches, conflict := mergeHTTPMatches(root.Match, d.Match)
	if conflict {
		return nil
	}
	d.Match = matches
	d.Name = joinNames(root.Name, d.Name)
	if d.Rewrite == nil {
		d.Rewrite = root.Rewrite
	}
	if d.DirectResponse == nil {
		d.DirectResponse = root.DirectResponse
	}
	if d.Timeout == nil {
		d.Timeout = root.Timeout
	}
	if d.Retries == nil {
		d.Retries = root.Retries
	}
	if d.Fault == nil {
		d.Fault = root.Fault
	}
	if d.Mirror == nil {
		d.Mirror = root.Mirror
	}
	//nolint:staticcheck // MirrorPercent is deprecated but still honoured.
	if d.MirrorPercent == nil {
		d.MirrorPercent = root.MirrorPercent //nolint:staticcheck
	}
	if d.MirrorPercentage == nil {
		d.MirrorPercentage = root.MirrorPercentage
	}
	if d.Mirrors == nil {
		d.Mirrors = root.Mirrors
	}
	if d.CorsPolicy == nil {
		d.CorsPolicy = root.CorsPolicy
	}
	if d.Headers == nil {
		d.Headers = root.Headers
	}
	return d
}

// joinNames names a merged route or match "root-delegate".
func joinNames(root, delegate string) string {
	switch {
	case delegate == "":
		return root
	case root == "":
		return delegate
	}
	return root + "-" + delegate
}

// mergeHTTPMatches combines root and delegate matches: every delegate match
// must narrow at least one root match (each such pair yields a merged
// match), else the route conflicts.
func mergeHTTPMatches(root, delegate []*networking.HTTPMatchRequest) ([]*networking.HTTPMatchRequest, bool) {
	if len(root) == 0 {
		return delegate, false
	}
	if len(delegate) == 0 {
		return root, false
	}
	var out []*networking.HTTPMatchRequest
	for _, dm := range delegate {
		found := false
		for _, rm := range root {
			if matchConflict(rm, dm) {
				continue
			}
			out = append(out, mergeHTTPMatch(rm, dm))
			found = true
		}
		if !found {
			return nil, true
		}
	}
	return out, len(out) == 0
}

func mergeHTTPMatch(root, d *networking.HTTPMatchRequest) *networking.HTTPMatchRequest {
	out := proto.Clone(d).(*networking.HTTPMatchRequest)
	out.Name = joinNames(root.Name, d.Name)
	if out.Uri == nil {
		out.Uri = root.Uri
	}
	if out.Scheme == nil {
		out.Scheme = root.Scheme
	}
	if out.Method == nil {
		out.Method = root.Method
	}
	if out.Authority == nil {
		out.Authority = root.Authority
	}
	out.Headers = unionMatches(root.Headers, d.Headers)
	out.WithoutHeaders = unionMatches(root.WithoutHeaders, d.WithoutHeaders)
	out.QueryParams = unionMatches(root.QueryParams, d.QueryParams)
	if out.Port == 0 {
		out.Port = root.Port
	}
	if len(root.SourceLabels) > 0 || len(d.SourceLabels) > 0 {
		out.SourceLabels = maps.Clone(root.SourceLabels)
		if out.SourceLabels == nil {
			out.SourceLabels = map[string]string{}
		}
		maps.Copy(out.SourceLabels, d.SourceLabels)
	}
	if out.SourceNamespace == "" {
		out.SourceNamespace = root.SourceNamespace
	}
	if len(out.Gateways) == 0 {
		out.Gateways = root.Gateways
	}
	if out.StatPrefix == "" {
		out.StatPrefix = root.StatPrefix
	}
	return out
}

// unionMatches returns root's entries overridden by the delegate's (nil
// when both are empty).
func unionMatches(root, d map[string]*networking.StringMatch) map[string]*networking.StringMatch {
	if len(root) == 0 && len(d) == 0 {
		return nil
	}
	out := make(map[string]*networking.StringMatch, len(root)+len(d))
	maps.Copy(out, root)
	maps.Copy(out, d)
	return out
}

// matchConflict reports whether a delegate match cannot narrow a root
// match.
func matchConflict(root, leaf *networking.HTTPMatchRequest) bool {
	pairs := [][2]*networking.StringMatch{
		{root.Uri, leaf.Uri}, {root.Scheme, leaf.Scheme}, {root.Method, leaf.Method}, {root.Authority, leaf.Authority},
	}
	for _, p := range pairs {
		if stringMatchConflict(p[0], p[1]) {
			return true
		}
	}
	if mapMatchConflict(root.Headers, leaf.Headers) || mapMatchConflict(root.WithoutHeaders, leaf.WithoutHeaders) ||
		mapMatchConflict(root.QueryParams, leaf.QueryParams) {
		return true
	}
	if root.IgnoreUriCase != leaf.IgnoreUriCase {
		return true
	}
	if root.Port > 0 && leaf.Port > 0 && root.Port != leaf.Port {
		return true
	}
	if root.SourceNamespace != "" && leaf.SourceNamespace != root.SourceNamespace {
		return true
	}
	for k, v := range leaf.SourceLabels {
		if rv, ok := root.SourceLabels[k]; ok && rv != v {
			return true
		}
	}
	return gatewaysConflict(root.Gateways, leaf.Gateways)
}

func mapMatchConflict(root, leaf map[string]*networking.StringMatch) bool {
	for k, v := range leaf {
		if stringMatchConflict(root[k], v) {
			return true
		}
	}
	return false
}

// gatewaysConflict: the root's gateways must be a superset of the leaf's.
func gatewaysConflict(root, leaf []string) bool {
	if len(root) == 0 || len(leaf) == 0 {
		return false
	}
	set := make(map[string]struct{}, len(root))
	for _, g := range root {
		set[g] = struct{}{}
	}
	for _, g := range leaf {
		if _, ok := set[g]; !ok {
			return true
		}
	}
	return false
}

// stringMatchConflict reports whether leaf cannot be a narrowing of root:
// regexes only combine with nothing, an exact root needs the same exact
// leaf, a prefix root needs a leaf under the prefix.
func stringMatchConflict(root, leaf *networking.StringMatch) bool {
	if root == nil || leaf == nil {
		return false
	}
	if root.GetRegex() != "" && (leaf.GetRegex() != "" || leaf.GetPrefix() != "" || leaf.GetExact() != "") {
		return true
	}
	if leaf.GetRegex() != "" && (root.GetRegex() != "" || root.GetPrefix() != "" || root.GetExact() != "") {
		return true
	}
	if exact := root.GetExact(); exact != "" {
		return leaf.GetPrefix() != "" || leaf.GetExact() != exact
	}
	if prefix := root.GetPrefix(); prefix != "" {
		if p := leaf.GetPrefix(); p != "" {
			return !strings.HasPrefix(p, prefix)
		}
		if e := leaf.GetExact(); e != "" {
			return !strings.HasPrefix(e, prefix)
		}
	}
	return true
}
