package crd_test

import (
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

func parseOne(t *testing.T, input string, validate bool) crd.Document {
	t.Helper()
	docs := crd.Parse([]byte(input), crd.Options{Validate: validate, Domain: "cluster.local"})
	if len(docs) != 1 {
		t.Fatalf("want 1 document, got %d", len(docs))
	}
	return docs[0]
}

func TestThreeVersionsOneKey(t *testing.T) {
	var keys []string
	for _, v := range []string{"v1alpha3", "v1beta1", "v1"} {
		d := parseOne(t, `apiVersion: networking.istio.io/`+v+`
kind: VirtualService
metadata: {name: reviews, namespace: default}
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews, subset: v1}
`, true)
		if d.Err != nil {
			t.Fatalf("%s: %v", v, d.Err)
		}
		if d.Config.GroupVersionKind != gvk.VirtualService {
			t.Errorf("%s: GVK %v, want %v", v, d.Config.GroupVersionKind, gvk.VirtualService)
		}
		if d.Config.Domain != "cluster.local" {
			t.Errorf("domain %q", d.Config.Domain)
		}
		if _, ok := d.Config.Spec.(*networking.VirtualService); !ok {
			t.Errorf("spec type %T", d.Config.Spec)
		}
		keys = append(keys, d.Config.Key())
	}
	for _, k := range keys {
		if k != "networking.istio.io/v1/VirtualService/default/reviews" {
			t.Errorf("key %q", k)
		}
	}
}

func TestUnknownFieldDroppedAndReported(t *testing.T) {
	d := parseOne(t, `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: r, namespace: default}
spec:
  hosts: ["r"]
  http:
  - routez: [{destination: {host: r}}]
`, true)
	if len(d.Dropped) != 1 || d.Dropped[0] != "spec.http[0].routez" {
		t.Errorf("dropped = %v, want [spec.http[0].routez]", d.Dropped)
	}
	if d.Err == nil || !strings.Contains(d.Err.Error(), "HTTP route, redirect or direct_response is required") {
		t.Errorf("validation error = %v", d.Err)
	}
	// Without validation the object is accepted with the field dropped.
	d = parseOne(t, `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: r, namespace: default}
spec:
  hosts: ["r"]
  http:
  - routez: [{destination: {host: r}}]
`, false)
	if d.Err != nil || d.Config == nil {
		t.Fatalf("unexpected error %v", d.Err)
	}
	if vs := d.Config.Spec.(*networking.VirtualService); len(vs.Http) != 1 || len(vs.Http[0].Route) != 0 {
		t.Errorf("http = %v", vs.Http)
	}
}

func TestTypeErrorIsFatal(t *testing.T) {
	d := parseOne(t, `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: p, namespace: default}
spec:
  rules:
  - from:
    - source:
        principals: "x"
`, false)
	if d.Err == nil {
		t.Fatal("want error for principals as a string")
	}
	for _, want := range []string{"spec.rules[0].from[0].source.principals", "cannot unmarshal string"} {
		if !strings.Contains(d.Err.Error(), want) {
			t.Errorf("error %q does not contain %q", d.Err, want)
		}
	}
}

func TestUnknownEnumIsFatal(t *testing.T) {
	d := parseOne(t, `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: default}
spec:
  outboundTrafficPolicy:
    mode: REGISTRY_ONLYY
`, false)
	if d.Err == nil {
		t.Fatal("want error for the bad enum")
	}
	want := `spec.outboundTrafficPolicy.mode: unknown value "REGISTRY_ONLYY" for enum istio.networking.v1alpha3.OutboundTrafficPolicy.Mode`
	if d.Err.Error() != want {
		t.Errorf("error\n got %q\nwant %q", d.Err, want)
	}
}

func TestEnvoyFilterV1IsUnknownKind(t *testing.T) {
	cfgs, others, err := crd.ParseInputs(`apiVersion: networking.istio.io/v1
kind: EnvoyFilter
metadata: {name: ef, namespace: default}
spec: {}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: ef, namespace: default}
spec: {}
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(others) != 1 || others[0].Name != "ef" || others[0].APIVersion != "networking.istio.io/v1" {
		t.Errorf("others = %+v", others)
	}
	if len(cfgs) != 1 || cfgs[0].GroupVersionKind != gvk.EnvoyFilter {
		t.Errorf("configs = %+v", cfgs)
	}
}

func TestMultiDocumentWithEmptyDocuments(t *testing.T) {
	input := `---
# leading comment only
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: a}
spec:
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
---
---

---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
---
apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: dr, namespace: b}
spec: {host: reviews}
...
`
	docs := crd.Parse([]byte(input), crd.Options{})
	if len(docs) != 3 {
		t.Fatalf("got %d documents, want 3", len(docs))
	}
	if docs[0].Config == nil || docs[0].Config.GroupVersionKind != gvk.Gateway || docs[0].Line != 4 {
		t.Errorf("doc 0 = %+v", docs[0])
	}
	if docs[1].Unknown == nil || docs[1].Unknown.Kind != "ConfigMap" {
		t.Errorf("doc 1 should be an unknown kind: %+v", docs[1])
	}
	if docs[2].Index != 2 || docs[2].Config == nil || docs[2].Config.Name != "dr" {
		t.Errorf("doc 2 = %+v", docs[2])
	}
}

func TestBadDocumentDoesNotStopOthers(t *testing.T) {
	cfgs, _, err := crd.ParseInputs(`apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: good, namespace: a}
spec: {host: a}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bad, namespace: a}
spec: {host: [a]}
---
key: [unclosed
`)
	if len(cfgs) != 1 || cfgs[0].Name != "good" {
		t.Errorf("configs = %v", cfgs)
	}
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"doc 1 DestinationRule a/bad: spec.host: cannot unmarshal array into string", "doc 2: invalid YAML"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestConvertConfigRoundTrip(t *testing.T) {
	in := `apiVersion: networking.istio.io/v1alpha3
kind: DestinationRule
metadata:
  name: reviews
  namespace: bookinfo
  labels: {app: reviews}
spec:
  host: reviews
  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}
  subsets:
  - name: v1
    labels: {version: v1}
`
	d := parseOne(t, in, true)
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	out, err := crd.ConvertConfig(*d.Config)
	if err != nil {
		t.Fatal(err)
	}
	if out.APIVersion != "networking.istio.io/v1" || out.Kind != "DestinationRule" || out.Labels["app"] != "reviews" {
		t.Errorf("meta = %+v %+v", out.TypeMeta, out.ObjectMeta)
	}
	wantSpec := `{"host":"reviews","subsets":[{"labels":{"version":"v1"},"name":"v1"}],"trafficPolicy":{"tls":{"mode":"ISTIO_MUTUAL"}}}`
	if string(out.Spec) != wantSpec {
		t.Errorf("spec\n got %s\nwant %s", out.Spec, wantSpec)
	}
	if out.Status != nil {
		t.Errorf("empty status should be omitted, got %s", *out.Status)
	}
	s, _ := collections.Pilot.FindByGroupVersionKind(gvk.DestinationRule)
	back, err := crd.ConvertObject(s, out, "cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	back.Domain = d.Config.Domain
	if !back.Equals(*d.Config) {
		t.Errorf("round trip changed the config:\n%v\n%v", back, d.Config)
	}
}
