package envoyfilter_test

import (
	"reflect"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
)

func TestGatewayPorts(t *testing.T) {
	srv := func(port uint32) *networking.Server { return &networking.Server{Port: &networking.Port{Number: port}} }
	got := envoyfilter.GatewayPorts(map[string][]*networking.Server{
		"http.8080":                            {srv(80), srv(81), srv(80)},
		"https.443.https.gateway.istio-system": {srv(443)},
		"http.9090":                            {{}},
	})
	want := map[int][]int{8080: {80, 81}, 443: {443}, 9090: {}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
