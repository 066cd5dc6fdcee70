package route_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/networking/route"
)

// SourceLabelsKey tells apart exactly the labels that select different
// matches of a VirtualService.
func TestSourceLabelsKey(t *testing.T) {
	vs := &networking.VirtualService{Http: []*networking.HTTPRoute{
		{Match: []*networking.HTTPMatchRequest{{SourceLabels: map[string]string{"app": "a"}}, {Uri: &networking.StringMatch{}}}},
		{Match: []*networking.HTTPMatchRequest{{SourceLabels: map[string]string{"app": "b", "version": "v1"}}}},
		{},
	}}
	for _, tc := range []struct {
		name   string
		vs     *networking.VirtualService
		labels map[string]string
		want   string
	}{
		{"no sourceLabels", &networking.VirtualService{Http: []*networking.HTTPRoute{{Match: []*networking.HTTPMatchRequest{{}}}}}, map[string]string{"app": "a"}, ""},
		{"no VirtualService spec", nil, nil, ""},
		{"first selected", vs, map[string]string{"app": "a", "version": "v1"}, "1-|0||"},
		{"second selected", vs, map[string]string{"app": "b", "version": "v1"}, "0-|1||"},
		{"none selected", vs, map[string]string{"app": "b"}, "0-|0||"},
		{"no labels", vs, nil, "0-|0||"},
	} {
		if got := route.SourceLabelsKey(tc.vs, tc.labels); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
