package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/tests/kube"
)

// withWebhook serves --httpsAddr on loopback with a serving certificate the
// API server accepts for https://127.0.0.1 (an IP custom host is an IP SAN).
func withWebhook(a *bootstrap.PilotArgs) {
	a.HTTPSAddr = "127.0.0.1:0"
	a.Security.CustomHosts = []string{"127.0.0.1"}
}

// The real API server calls istiod's /validate through a
// ValidatingWebhookConfiguration (Istio's validation.istio.io rules, scoped
// to the test namespace) over TLS with istiod's serving certificate checked
// against istiod's root: an invalid VirtualService is denied with the field
// and reason `istiod validate` prints, a valid one is created, updates are
// validated too.
func TestValidationWebhookThroughTheAPIServer(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns, withWebhook)
	addr := d.srv.HTTPSAddr()
	if addr == "" {
		t.Fatal("no webhook server")
	}
	ctx := context.Background()

	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	url := "https://" + addr + "/validate"
	whc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-validator-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "rev.validation.istio.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: d.srv.CA().RootCertPEM()},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"networking.istio.io"}, APIVersions: []string{"*"},
					Resources: []string{"virtualservices"}},
			}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			// only this test's namespace: the API server is shared
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
		}},
	}
	whcs := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := whcs.Create(ctx, whc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = whcs.Delete(context.Background(), whc.Name, metav1.DeleteOptions{}) })

	vsc := env.Istio.NetworkingV1().VirtualServices(ns)
	badRegex := []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "a(b"}}}}
	const wantRegex = "configuration is invalid: spec.http[0].match[0].uri.regex: \"uri\": error parsing regexp: missing closing ): `a(b`; " +
		"Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)"

	// the API server picks the configuration up asynchronously
	var denial error
	eventually(t, "invalid create denied", func() (bool, string) {
		bad := vs("bad-regex", ns, nil, "reviews")
		bad.Spec.Http[0].Match = badRegex
		_, err := vsc.Create(ctx, bad, metav1.CreateOptions{})
		if err == nil {
			_ = vsc.Delete(ctx, "bad-regex", metav1.DeleteOptions{})
			return false, "created: the webhook is not active yet"
		}
		denial = err
		return strings.Contains(err.Error(), `admission webhook "rev.validation.istio.io" denied the request`), err.Error()
	})
	if !strings.Contains(denial.Error(), wantRegex) {
		t.Errorf("denial %q, want it to contain %q", denial, wantRegex)
	}
	if s, ok := denial.(apierrors.APIStatus); ok {
		t.Logf("denied with HTTP %d: %s", s.Status().Code, s.Status().Message)
	}

	// neither http, tcp nor tls
	empty := vs("empty", ns, nil, "ratings")
	empty.Spec.Http = nil
	_, err := vsc.Create(ctx, empty, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "configuration is invalid: spec: http, tcp or tls must be provided in virtual service") {
		t.Errorf("a VirtualService without routes: %v", err)
	}

	// a valid one is created; an invalid update of it is denied, the object unchanged
	if _, err := vsc.Create(ctx, vs("reviews", ns, nil, "reviews"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a valid VirtualService is denied: %v", err)
	}
	cur, err := vsc.Get(ctx, "reviews", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Http[0].Match = badRegex
	if _, err := vsc.Update(ctx, cur, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), wantRegex) {
		t.Errorf("an invalid update: %v", err)
	}
	if got, err := vsc.Get(ctx, "reviews", metav1.GetOptions{}); err != nil || len(got.Spec.Http[0].Match) != 0 {
		t.Errorf("the invalid update was stored: %v %v", err, got)
	}

	// an object of another revision is left to that revision's webhook
	other := vs("canary", ns, map[string]string{"istio.io/rev": "canary"}, "canary")
	other.Spec.Http[0].Match = badRegex
	if _, err := vsc.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Errorf("an object of another revision is validated: %v", err)
	}

	// the webhook is counted on /metrics
	code, body := webhookMetrics(d)
	for _, want := range []string{
		`galley_validation_passed{group="networking.istio.io",resource="virtualservices",version="v1"}`,
		`galley_validation_failed{group="networking.istio.io",reason="invalid_resource",resource="virtualservices",version="v1"}`,
	} {
		if code != 200 || !strings.Contains(string(body), want) {
			t.Errorf("/metrics %d: no %s", code, want)
		}
	}
}

// As Istio's istiod, the webhooks do not depend on the TLS gRPC port: with
// --secureGRPCAddr empty, --httpsAddr is served with istiod's serving
// certificate, the leader patches the chart's configuration with the root
// and switches it to fail closed, and the API server gets its denials.
func TestWebhooksWithoutSecureGRPC(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns, withWebhook, func(a *bootstrap.PilotArgs) { a.SecureGRPCAddr = "" })
	if a := d.srv.SecureGRPCAddr(); a != "" {
		t.Errorf("TLS gRPC port on %s with --secureGRPCAddr empty", a)
	}
	if d.srv.HTTPSAddr() == "" {
		t.Fatal("no webhook server with --secureGRPCAddr empty")
	}
	vwc := chartValidator(t, env, d, ns)
	waitFailClosed(t, env, d, vwc.Name)
	bad := vs("bad-regex", ns, map[string]string{"istio.io/rev": "default"}, "reviews")
	bad.Spec.Http[0].Match = []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "a(b"}}}}
	_, err := env.Istio.NetworkingV1().VirtualServices(ns).Create(context.Background(), bad, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `admission webhook "rev.validation.istio.io" denied the request`) {
		t.Errorf("an invalid VirtualService: %v", err)
	}
}

func webhookMetrics(d *istiod) (int, []byte) {
	resp, err := http.Get("http://" + d.srv.MonitoringAddr() + "/metrics")
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
