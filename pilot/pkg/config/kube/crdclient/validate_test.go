package crdclient_test

import (
	"context"
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crdclient"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
)

// badRegex is a VirtualService the API server accepts and Istio's
// validation rejects (an invalid RE2 regex in a match).
func badRegex(name, ns string) *clientnetworking.VirtualService {
	v := vs(name, ns, nil, name)
	v.Spec.Http[0].Match = []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "a(b"}}}}
	return v
}

func problemsOf(b *diag.Board, object string) []diag.Problem {
	var out []diag.Problem
	for _, p := range b.List() {
		if p.Object == object {
			out = append(out, p)
		}
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Objects from the API server are validated like files: an invalid create
// is not served, an invalid update leaves the last good version serving,
// each rejection is a problem naming the object and the reason until fixed
// or deleted.
func TestInvalidObjectsFromTheAPIServerAreRejected(t *testing.T) {
	board := diag.New(nil)
	h := newHarness(t, collection.SchemasFor(collections.VirtualService), crdclient.Options{DomainSuffix: "cluster.local", Problems: board},
		crd("virtualservices", "networking.istio.io", "v1", "v1alpha3"), badRegex("bad", "ns"), vs("good", "ns", nil, "good"))
	if e := h.next(); e != "add VirtualService ns/good" {
		t.Fatalf("event %q (the invalid object must not be served)", e)
	}
	if h.cl.Get(gvk.VirtualService, "bad", "ns") != nil {
		t.Error("an invalid create is served")
	}
	ps := problemsOf(board, "VirtualService ns/bad")
	if len(ps) != 1 || ps[0].Severity != diag.Error || ps[0].Source != "kubernetes" || !strings.Contains(ps[0].Message, "rejected:") || !strings.Contains(ps[0].Message, "regex") {
		t.Fatalf("problems of the invalid create: %+v", ps)
	}

	// an invalid update keeps the last good version
	api := h.client.Istio().NetworkingV1().VirtualServices("ns")
	upd := badRegex("good", "ns")
	cur, err := api.Get(context.Background(), "good", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upd.ResourceVersion = cur.ResourceVersion
	if _, err := api.Update(context.Background(), upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the invalid update listed", func() bool { return len(problemsOf(board, "VirtualService ns/good")) == 1 })
	got := h.cl.Get(gvk.VirtualService, "good", "ns")
	if got == nil || got.Spec.(*networking.VirtualService).Http[0].Match != nil {
		t.Errorf("the last good version is not serving: %v", got)
	}
	// fixed: served, and the problem goes
	if _, err := api.Update(context.Background(), vs("good", "ns", nil, "good2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the fix served", func() bool {
		g := h.cl.Get(gvk.VirtualService, "good", "ns")
		return g != nil && g.Spec.(*networking.VirtualService).Hosts[0] == "good2" && len(problemsOf(board, "VirtualService ns/good")) == 0
	})
	// deleted: the problem goes
	if err := api.Delete(context.Background(), "bad", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted object's problem cleared", func() bool { return len(problemsOf(board, "VirtualService ns/bad")) == 0 })
}
