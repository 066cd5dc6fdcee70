package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/tests/kube"
)

// An update the API server accepts but Istio's validation rejects (an
// invalid RE2 regex) is not served: the last good version keeps serving
// (a real Envoy would NACK the whole route configuration of the port), and
// /debug/warningz names the object and the reason until it is fixed.
func TestInvalidUpdateFromTheClusterKeepsTheLastGood(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	ctx := context.Background()
	vsc := env.Istio.NetworkingV1().VirtualServices(ns)
	if _, err := vsc.Create(ctx, vs("reviews", ns, nil, "reviews"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "create visible", func() (bool, string) { return d.find("VirtualService", ns, "reviews") != nil, "" })
	rejected := func() (bool, string) {
		for _, p := range d.warnings() {
			if p.Object == "VirtualService "+ns+"/reviews" && p.Severity == "error" && strings.Contains(p.Message, "regex") {
				return true, ""
			}
		}
		return false, fmt.Sprint(d.warnings())
	}

	cur, err := vsc.Get(ctx, "reviews", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Hosts = []string{"reviews-bad"}
	cur.Spec.Http[0].Match = []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "a(b"}}}}
	if _, err := vsc.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the API server refused the update: %v", err)
	}
	eventually(t, "rejection listed", rejected)
	if h := host(d.find("VirtualService", ns, "reviews")); h != "[reviews]" {
		t.Errorf("serving %s, want the last good [reviews]", h)
	}

	// an invalid create is not served at all
	bad := vs("ratings", ns, nil, "ratings")
	bad.Spec.Http[0].Match = cur.Spec.Http[0].Match
	if _, err := vsc.Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "invalid create listed", func() (bool, string) {
		for _, p := range d.warnings() {
			if p.Object == "VirtualService "+ns+"/ratings" {
				return true, ""
			}
		}
		return false, fmt.Sprint(d.warnings())
	})
	if d.find("VirtualService", ns, "ratings") != nil {
		t.Error("an invalid create is served")
	}

	// fixed: served, and no longer listed
	cur, err = vsc.Get(ctx, "reviews", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Http[0].Match = nil
	if _, err := vsc.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "fix served", func() (bool, string) {
		ok, _ := rejected()
		h := host(d.find("VirtualService", ns, "reviews"))
		return h == "[reviews-bad]" && !ok, h
	})
}
