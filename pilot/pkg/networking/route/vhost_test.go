package route_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/networking/route"
)

// SourceLabelsKey tells apart exactly the labels and namespaces that
// select different matches of a VirtualService; a match naming gateways
// selects by them alone.
func TestSourceLabelsKey(t *testing.T) {
	nsVS := &networking.VirtualService{Http: []*networking.HTTPRoute{
		{Match: []*networking.HTTPMatchRequest{{SourceNamespace: "shop"}, {}}},
	}}
	gwVS := &networking.VirtualService{Http: []*networking.HTTPRoute{
		{Match: []*networking.HTTPMatchRequest{{Gateways: []string{"mesh"}, SourceLabels: map[string]string{"app": "a"}}}},
	}}
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
		{"sourceNamespace selected", nsVS, nil, "1-|"},
		{"gateways select alone", gwVS, nil, ""},
	} {
		ns := ""
		if tc.vs == nsVS {
			ns = "shop"
		}
		if got := route.SourceLabelsKey(tc.vs, tc.labels, ns); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
