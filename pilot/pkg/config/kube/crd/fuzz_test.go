package crd_test

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
)

// FuzzParse feeds arbitrary input to the document parser with validation on:
// whatever the input, it must not panic, and every document must end in
// exactly one of config, unknown kind or error.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: a, namespace: b}\nspec: {hosts: [a], http: [{route: [{destination: {host: a}}]}]}\n",
		"---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: p}\nspec: {rules: [{from: [{source: {principals: x}}]}]}\n",
		"apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: s}\nspec: {outboundTrafficPolicy: {mode: REGISTRY_ONLYY}}\n",
		"apiVersion: networking.istio.io/v1alpha3\nkind: EnvoyFilter\nmetadata: {name: e}\nspec: {configPatches: [{applyTo: HTTP_FILTER, patch: {operation: INSERT_BEFORE, value: {name: x}}}]}\n",
		"apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec: {rules: [{matchez: 1}]}\n",
		"{\"apiVersion\":\"networking.istio.io/v1\",\"kind\":\"DestinationRule\",\"metadata\":{\"name\":\"d\"},\"spec\":{\"host\":\"h\",\"subsets\":[{\"name\":\"v1\"}]}}",
		"key: [unclosed\n",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		for _, d := range crd.Parse([]byte(input), crd.Options{Validate: true}) {
			n := 0
			if d.Config != nil {
				n++
			}
			if d.Unknown != nil {
				n++
			}
			if d.Err != nil {
				n++
			}
			if n != 1 {
				t.Fatalf("document %d: config=%v unknown=%v err=%v", d.Index, d.Config != nil, d.Unknown != nil, d.Err)
			}
		}
	})
}
