package gateway

import (
	"slices"
	"sort"
	"strings"

	istio "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
)

// MergeVirtualServices merges the VirtualServices of one key (HTTP and gRPC
// routes of one listener and hostname) into one named after the key: the
// oldest route's VirtualService, with every route's rules appended and
// sorted by Gateway API precedence. The inputs are not modified.
func MergeVirtualServices(key string, vss []config.Config) config.Config {
	name := strings.ReplaceAll(key, "/", "~")
	if len(vss) == 1 {
		out := vss[0]
		out.Annotations = copyMap(out.Annotations)
		out.Labels = copyMap(out.Labels)
		out.Name = name
		return out
	}
	sorted := slices.Clone(vss)
	sortByCreation(sorted)
	base := sorted[0].DeepCopy()
	spec := base.Spec.(*istio.VirtualService)
	for _, o := range sorted[1:] {
		spec.Http = append(spec.Http, o.Spec.(*istio.VirtualService).Http...)
		base.Annotations[annotationParents] += "," + o.Annotations[annotationParents]
	}
	sortHTTPRoutes(spec.Http)
	base.Name = name
	return base
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sortByCreation orders configs by creation time, then namespace and name.
func sortByCreation(cs []config.Config) {
	sort.SliceStable(cs, func(i, j int) bool {
		if c := cs[i].CreationTimestamp.Compare(cs[j].CreationTimestamp); c != 0 {
			return c < 0
		}
		if cs[i].Namespace != cs[j].Namespace {
			return cs[i].Namespace < cs[j].Namespace
		}
		return cs[i].Name < cs[j].Name
	})
}

// sortHTTPRoutes orders rules by Gateway API precedence: exact paths
// before prefixes before regular expressions, longer paths first, then
// rules with a method, more headers, more query parameters; rules without
// a match last. Each rule has at most one match.
func sortHTTPRoutes(routes []*istio.HTTPRoute) {
	sort.SliceStable(routes, func(i, j int) bool {
		if len(routes[i].Match) == 0 {
			return false
		} else if len(routes[j].Match) == 0 {
			return true
		}
		m1, m2 := routes[i].Match[0], routes[j].Match[0]
		r1, r2 := uriRank(m1), uriRank(m2)
		l1, l2 := uriLength(m1), uriLength(m2)
		switch {
		case r1 != r2:
			return r1 > r2
		case l1 != l2:
			return l1 > l2
		case (m1.Method == nil) != (m2.Method == nil):
			return m1.Method != nil
		case len(m1.Headers) != len(m2.Headers):
			return len(m1.Headers) > len(m2.Headers)
		}
		return len(m1.QueryParams) > len(m2.QueryParams)
	})
}

func uriRank(m *istio.HTTPMatchRequest) int {
	switch m.GetUri().GetMatchType().(type) {
	case *istio.StringMatch_Exact:
		return 3
	case *istio.StringMatch_Prefix:
		return 2
	case *istio.StringMatch_Regex:
		return 1
	}
	return -1
}

func uriLength(m *istio.HTTPMatchRequest) int {
	switch t := m.GetUri().GetMatchType().(type) {
	case *istio.StringMatch_Exact:
		return len(t.Exact)
	case *istio.StringMatch_Prefix:
		return len(t.Prefix)
	case *istio.StringMatch_Regex:
		return len(t.Regex)
	}
	return 0
}
