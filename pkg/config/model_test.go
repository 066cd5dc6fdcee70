package config_test

import (
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
)

func TestKey(t *testing.T) {
	m := config.Meta{
		GroupVersionKind: config.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"},
		Name:             "reviews", Namespace: "default",
	}
	if got := m.Key(); got != "networking.istio.io/v1/VirtualService/default/reviews" {
		t.Errorf("Key() = %q", got)
	}
	if got := config.Key("g", "v", "K", "n", "ns"); got != "g/v/K/ns/n" {
		t.Errorf("Key = %q", got)
	}
	if nn := m.NamespacedName(); nn.String() != "default/reviews" {
		t.Errorf("NamespacedName = %v", nn)
	}
}

func TestLabelsInRevision(t *testing.T) {
	cases := []struct {
		labels map[string]string
		rev    string
		want   bool
	}{
		{nil, "canary", true},
		{map[string]string{"app": "x"}, "canary", true},
		{map[string]string{config.RevisionLabel: "canary"}, "", true},
		{map[string]string{config.RevisionLabel: "canary"}, "canary", true},
		{map[string]string{config.RevisionLabel: "stable"}, "canary", false},
		{map[string]string{config.RevisionLabel: ""}, "canary", false},
	}
	for _, c := range cases {
		if got := config.LabelsInRevision(c.labels, c.rev); got != c.want {
			t.Errorf("LabelsInRevision(%v, %q) = %v", c.labels, c.rev, got)
		}
	}
}

func sampleConfig() config.Config {
	return config.Config{
		Meta: config.Meta{
			GroupVersionKind:  config.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"},
			Name:              "r",
			Namespace:         "ns",
			Labels:            map[string]string{"a": "b"},
			Annotations:       map[string]string{"c": "d"},
			CreationTimestamp: time.Unix(100, 0),
		},
		Spec:  &networking.VirtualService{Hosts: []string{"r"}},
		Extra: map[string]any{"parents": []string{"x"}},
	}
}

func TestDeepCopySharesNothing(t *testing.T) {
	orig := sampleConfig()
	cp := orig.DeepCopy()
	if !cp.Equals(orig) {
		t.Fatal("copy differs from the original")
	}
	cp.Labels["a"] = "changed"
	cp.Annotations["c"] = "changed"
	cp.Spec.(*networking.VirtualService).Hosts[0] = "changed"
	cp.Extra["parents"].([]string)[0] = "changed"
	if orig.Labels["a"] != "b" || orig.Annotations["c"] != "d" || orig.Spec.(*networking.VirtualService).Hosts[0] != "r" ||
		orig.Extra["parents"].([]string)[0] != "x" {
		t.Errorf("mutating the copy changed the original: %+v", orig)
	}
	if cp.Equals(orig) {
		t.Error("Equals should see the change")
	}
}

func TestDeepCopyKubernetesTypes(t *testing.T) {
	orig := config.Config{Spec: &corev1.ServiceSpec{Selector: map[string]string{"app": "a"}}}
	cp := orig.DeepCopy()
	cp.Spec.(*corev1.ServiceSpec).Selector["app"] = "b"
	if orig.Spec.(*corev1.ServiceSpec).Selector["app"] != "a" {
		t.Error("ServiceSpec shared after DeepCopy")
	}
}

func TestApplyJSONProto(t *testing.T) {
	vs := &networking.VirtualService{}
	dropped, err := config.ApplyJSON(vs, []byte(`{"hosts":["a"],"http":[{"routez":[],"route":[{"destination":{"host":"a","bogus":1}}]}],"extra":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"http[0].routez": true, "http[0].route[0].destination.bogus": true, "extra": true}
	if len(dropped) != len(want) {
		t.Errorf("dropped = %v", dropped)
	}
	for _, d := range dropped {
		if !want[d] {
			t.Errorf("unexpected dropped path %q", d)
		}
	}
	if vs.Http[0].Route[0].Destination.Host != "a" {
		t.Errorf("known fields lost: %v", vs)
	}
}

func TestApplyJSONProtoNamesAndWellKnownTypes(t *testing.T) {
	vs := &networking.VirtualService{}
	dropped, err := config.ApplyJSON(vs, []byte(`{"hosts":["a"],"http":[{"timeout":"4s","mirror_percentage":{"value":5},"route":[{"destination":{"host":"a"}}]}]}`))
	if err != nil || len(dropped) != 0 {
		t.Fatalf("dropped=%v err=%v", dropped, err)
	}
	if vs.Http[0].Timeout.AsDuration() != 4*time.Second || vs.Http[0].MirrorPercentage.GetValue() != 5 {
		t.Errorf("decoded %v", vs)
	}
}

func TestApplyJSONErrors(t *testing.T) {
	cases := []struct {
		name, js, want string
	}{
		{"enum", `{"outboundTrafficPolicy":{"mode":"REGISTRY_ONLYY"}}`, `outboundTrafficPolicy.mode: unknown value "REGISTRY_ONLYY" for enum istio.networking.v1alpha3.OutboundTrafficPolicy.Mode`},
		{"list", `{"egress":{"hosts":["a"]}}`, `egress: cannot unmarshal object into a list of istio.networking.v1alpha3.IstioEgressListener`},
		{"string", `{"egress":[{"hosts":[1]}]}`, `egress[0].hosts[0]: cannot unmarshal number into string`},
		{"bad duration", `{"inboundConnectionPool":{"http":{"idleTimeout":"forever"}}}`, `idleTimeout`},
		{"not json", `{"egress":`, `invalid JSON`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.ApplyJSON(&networking.Sidecar{}, []byte(c.js))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestApplyJSONStruct(t *testing.T) {
	spec := &gatewayv1.HTTPRouteSpec{}
	dropped, err := config.ApplyJSON(spec, []byte(`{"hostnames":["a.example.com"],"rules":[{"matchez":[]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 1 || dropped[0] != "rules[0].matchez" {
		t.Errorf("dropped = %v", dropped)
	}
	if len(spec.Hostnames) != 1 {
		t.Errorf("hostnames lost: %v", spec)
	}
	if _, err := config.ApplyJSON(spec, []byte(`{"hostnames":"a"}`)); err == nil {
		t.Error("type error accepted")
	}
}

func TestApplyJSONGoDurations(t *testing.T) {
	dr := &networking.DestinationRule{}
	dropped, err := config.ApplyJSON(dr, []byte(`{"host":"r","trafficPolicy":{"outlierDetection":{"interval":"5m","baseEjectionTime":"1h30m","consecutive5xxErrors":7}}}`))
	if err != nil || len(dropped) != 0 {
		t.Fatalf("dropped=%v err=%v", dropped, err)
	}
	od := dr.TrafficPolicy.OutlierDetection
	if od.Interval.AsDuration() != 5*time.Minute || od.BaseEjectionTime.AsDuration() != 90*time.Minute {
		t.Errorf("durations %v %v", od.Interval.AsDuration(), od.BaseEjectionTime.AsDuration())
	}
}
