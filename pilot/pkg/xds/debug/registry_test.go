package debug_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/meshplane/istiod/tests/refmesh"

	"github.com/meshplane/istiod/pilot/pkg/xds/debug"
)

// TestRegistryMatchesIstio runs the reference input through the Kubernetes
// and ServiceEntry registries and compares /debug/registryz and
// /debug/endpointShardz with Istio's answers.
//
// The input is read through client-go's fake clientset, plus the
// "kubernetes" Service every API server has (Istio's answer lists it).
// Allowed differences, each explained:
//   - ResourceVersion and creationTime: assigned by the API server Istio
//     read; the fake clientset assigns neither.
//   - autoAllocatedIPv4Address / autoAllocatedIPv6Address: written into the
//     ServiceEntry's status by Istio's address allocation controller, which
//     this control plane does not run (it reads them from status when
//     present).
//   - Attributes.DNSConnectStrategy and Attributes.Visibility: Istio 1.31
//     attributes of features this registry does not model (DNS connect
//     strategy annotation, ambient visibility); zero for every service here.
func TestRegistryMatchesIstio(t *testing.T) {
	src := refmesh.BuildRegistries(t)
	mux := http.NewServeMux()
	debug.New(debug.Options{Registry: src}).Install(mux)

	gotSvcs := refmesh.Decode(t, get(t, mux, "/debug/registryz")).([]any)
	wantSvcs := refmesh.Decode(t, refmesh.ReadFile(t, "real/registryz.json")).([]any)
	for _, list := range [][]any{gotSvcs, wantSvcs} {
		for _, s := range list {
			m := s.(map[string]any)
			for _, k := range []string{"ResourceVersion", "creationTime", "autoAllocatedIPv4Address", "autoAllocatedIPv6Address"} {
				delete(m, k)
			}
			attrs := m["Attributes"].(map[string]any)
			delete(attrs, "DNSConnectStrategy")
			delete(attrs, "Visibility")
		}
	}
	compare(t, "registryz", gotSvcs, wantSvcs)
	compare(t, "endpointShardz", refmesh.Decode(t, get(t, mux, "/debug/endpointShardz")), refmesh.Decode(t, refmesh.ReadFile(t, "real/endpointShardz.json")))
}

func get(t *testing.T, h http.Handler, path string) []byte {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.RemoteAddr = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes()
}

func compare(t *testing.T, what string, got, want any) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	g, _ := json.MarshalIndent(got, "", " ")
	w, _ := json.MarshalIndent(want, "", " ")
	t.Errorf("%s differs from Istio's:\n got %s\nwant %s", what, g, w)
}
