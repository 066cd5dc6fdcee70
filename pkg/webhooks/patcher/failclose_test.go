package patcher_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/meshplane/istiod/pkg/webhooks/patcher"
)

// answer is what the fake API server replies to one request: a Status
// with its code, or (code 0) the object sent back, admitted.
type answer struct {
	code    int32
	reason  metav1.StatusReason
	message string
}

// request is what the fake API server received.
type request struct {
	method, path, dryRun string
	gw                   *clientnetworking.Gateway
}

// apiServer answers POST with create and PUT with update, recording the
// requests.
func apiServer(t *testing.T, create, update answer) (istioclient.Interface, func() []request) {
	var mu sync.Mutex
	var got []request
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := request{method: r.Method, path: r.URL.Path, dryRun: r.URL.Query().Get("dryRun"), gw: &clientnetworking.Gateway{}}
		if err := json.NewDecoder(r.Body).Decode(req.gw); err != nil {
			t.Errorf("%s %s: %v", r.Method, r.URL, err)
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		a := create
		if r.Method == http.MethodPut {
			a = update
		}
		w.Header().Set("Content-Type", "application/json")
		if a.code == 0 {
			_ = json.NewEncoder(w).Encode(req.gw)
			return
		}
		w.WriteHeader(int(a.code))
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: a.code, Reason: a.reason, Message: a.message})
	}))
	t.Cleanup(ts.Close)
	c, err := istioclient.NewForConfig(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c, func() []request {
		mu.Lock()
		defer mu.Unlock()
		return append([]request(nil), got...)
	}
}

// The dry run is Istio's: an invalid Gateway (no servers, the
// always-reject annotation) in istiod's namespace, labelled with the
// revision (the chart's webhook selects the revision's objects), created
// with dryRun=All (updated so, when one of that name exists); the API
// server's words decide.
func TestDryRunInvalidGateway(t *testing.T) {
	denied := answer{code: 400, reason: metav1.StatusReasonBadRequest,
		message: `admission webhook "rev.validation.istio.io" denied the request: configuration is invalid: gateway must have at least one server`}
	exists := answer{code: 409, reason: metav1.StatusReasonAlreadyExists, message: `gateways.networking.istio.io "invalid-gateway" already exists`}
	for _, c := range []struct {
		name           string
		revision       string
		create, update answer
		ready          bool
	}{
		{name: "admitted: the webhook did not see it"},
		{name: "denied by the webhook", create: denied, ready: true},
		{name: "denied, revision canary", revision: "canary", create: denied, ready: true},
		{name: "one of that name exists: updated", create: exists, update: denied, ready: true},
		{name: "exists, update admitted", create: exists},
		{name: "no Gateway kind", create: answer{code: 404, reason: metav1.StatusReasonNotFound,
			message: "the server could not find the requested resource"}, ready: true},
		{name: "a webhook without dry-run support", create: answer{code: 400, reason: metav1.StatusReasonBadRequest,
			message: `admission webhook "other.example.com" does not support dry run`}, ready: true},
		{name: "refused for another reason", create: answer{code: 500, reason: metav1.StatusReasonInternalError, message: "etcd is unhappy"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			client, requests := apiServer(t, c.create, c.update)
			ready, why := patcher.DryRunInvalidGateway(client, "istio-system", c.revision)(context.Background())
			if ready != c.ready {
				t.Errorf("ready %v (%s), want %v", ready, why, c.ready)
			}
			if !ready && why == "" {
				t.Error("not ready without a reason")
			}
			wantRev := c.revision
			if wantRev == "" {
				wantRev = "default"
			}
			got := requests()
			want := []string{http.MethodPost}
			if c.create == exists {
				want = append(want, http.MethodPut)
			}
			if len(got) != len(want) {
				t.Fatalf("%d requests, want %v", len(got), want)
			}
			for i, r := range got {
				gw := r.gw
				if r.method != want[i] || r.dryRun != metav1.DryRunAll ||
					r.path != "/apis/networking.istio.io/v1/namespaces/istio-system/gateways"+map[bool]string{true: "/invalid-gateway"}[r.method == http.MethodPut] {
					t.Errorf("request %d: %s %s dryRun=%q", i, r.method, r.path, r.dryRun)
				}
				if gw.Name != "invalid-gateway" || gw.Namespace != "istio-system" || gw.Labels[patcher.RevisionLabel] != wantRev ||
					gw.Annotations[patcher.AlwaysRejectAnnotation] != "true" || len(gw.Spec.Servers) != 0 {
					t.Errorf("request %d: Gateway %s/%s labels %v annotations %v servers %d", i, gw.Namespace, gw.Name,
						gw.Labels, gw.Annotations, len(gw.Spec.Servers))
				}
			}
		})
	}
}
