package differential

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestAllowedCovers(t *testing.T) {
	d := Difference{Type: "rds", Resource: "http.8080", Path: "virtualHosts[0].routes[1].decorator.operation"}
	for _, tc := range []struct {
		a    Allowed
		want bool
	}{
		{Allowed{Type: "rds"}, true},
		{Allowed{Type: "cds"}, false},
		{Allowed{Resource: "http.*"}, true},
		{Allowed{Resource: "http"}, false},
		{Allowed{Path: "virtualHosts[*].routes[*].decorator"}, true}, // and what lies below
		{Allowed{Path: "virtualHosts[*].routes"}, true},
		{Allowed{Path: "virtualHosts[*].rou"}, false},
		{Allowed{Path: "**.operation"}, true},
		{Allowed{Path: "*.operation"}, false}, // one segment only
	} {
		if got := tc.a.covers(d); got != tc.want {
			t.Errorf("%+v covers %v: %v, want %v", tc.a, d.Path, got, tc.want)
		}
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCompareSnapshots(t *testing.T) {
	ours := map[string]map[string]any{
		"rds": {"80": decode(t, `{"virtualHosts":[{"name":"a:80","domains":["a"]},{"name":"allow_any","domains":["*"]}]}`)},
		"cds": {"only-ours": decode(t, `{}`)},
	}
	istio := map[string]map[string]any{
		"rds": {"80": decode(t, `{"virtualHosts":[{"name":"a:80","domains":["a"]},{"name":"b:80","domains":["b"]},{"name":"allow_any","domains":["*"]}]}`)},
	}
	var got []string
	for _, d := range compareSnapshots(ours, istio) {
		got = append(got, d.Type+" "+d.Resource+" "+d.Path)
	}
	want := []string{"cds only-ours ", "rds 80 virtualHosts[name=b:80]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("differences %q, want %q", got, want)
	}
}

func TestReplaceIPs(t *testing.T) {
	names := map[string]string{"10.0.0.12": "<clusterIP ns/a>", "10.0.0.1": "<clusterIP default/kubernetes>"}
	v := replaceIPs(decode(t, `{"10.0.0.12_80":["10.0.0.12","10.0.0.123","110.0.0.1","10.0.0.1:443","10.0.0.1_10.0.0.12"]}`), names)
	b := marshal(v, "")
	want := `{"<clusterIP ns/a>_80":["<clusterIP ns/a>","10.0.0.123","110.0.0.1","<clusterIP default/kubernetes>:443","<clusterIP default/kubernetes>_<clusterIP ns/a>"]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestAutoEndpointSlices(t *testing.T) {
	objs, err := parseObjects(`
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}, {name: grpc, port: 90}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: ns, labels: {app: web}}
spec:
  containers: [{name: web, ports: [{name: http, containerPort: 8080}]}]
status: {podIP: 10.1.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: web-2, namespace: ns, labels: {app: web}}
spec:
  containers: [{name: web}]
status: {podIP: 10.1.0.2, conditions: [{type: Ready, status: "False"}]}
---
apiVersion: v1
kind: Service
metadata: {name: manual, namespace: ns}
spec:
  selector: {app: web}
  ports: [{port: 1}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: manual-1, namespace: ns, labels: {kubernetes.io/service-name: manual}}
addressType: IPv4
endpoints: []
`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := autoEndpointSlices(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].GetName() != "web-auto" {
		t.Fatalf("slices %v, want web-auto alone", out)
	}
	ports, _, _ := unstructured.NestedSlice(out[0].Object, "ports")
	eps, _, _ := unstructured.NestedSlice(out[0].Object, "endpoints")
	b, _ := json.Marshal([]any{ports, eps})
	for _, want := range []string{`"port":8080`, `"port":90`, `"addresses":["10.1.0.1"],"conditions":{"ready":true`, `"addresses":["10.1.0.2"],"conditions":{"ready":false`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}
