package integration

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/tests/helmbin"
	"github.com/meshplane/istiod/tests/kube"
)

// chartValidator renders Istio 1.31's istio-discovery chart (with args,
// e.g. a revision) and returns its ValidatingWebhookConfiguration as the
// chart installs it (failurePolicy Ignore, no caBundle, the objectSelector
// on istio.io/rev), pointed at istiod's /validate on loopback and limited to
// namespace ns (the API server is shared). It is created, and deleted at
// the end of the test.
func chartValidator(t *testing.T, env *kube.Env, d *istiod, ns string, args ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	var vwc *admissionregistrationv1.ValidatingWebhookConfiguration
	for _, o := range helmbin.IstioDiscovery(t, "istio-system", args...) {
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			vwc = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			fromUnstructured(t, o, vwc)
		}
	}
	if vwc == nil {
		t.Fatal("the chart has no ValidatingWebhookConfiguration")
	}
	url := "https://" + d.srv.HTTPSAddr() + "/validate"
	vwc.Name += "-" + ns
	for i := range vwc.Webhooks {
		w := &vwc.Webhooks[i]
		if p := w.FailurePolicy; p == nil || *p != admissionregistrationv1.Ignore {
			t.Fatalf("the chart's webhook %s does not fail open: %v", w.Name, p)
		}
		if w.ObjectSelector == nil {
			t.Fatalf("the chart's webhook %s has no objectSelector", w.Name)
		}
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
		if w.NamespaceSelector == nil {
			w.NamespaceSelector = &metav1.LabelSelector{}
		}
		w.NamespaceSelector.MatchExpressions = append(w.NamespaceSelector.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{ns}})
	}
	whcs := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := whcs.Create(context.Background(), vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = whcs.Delete(context.Background(), vwc.Name, metav1.DeleteOptions{}) })
	return vwc
}

// waitFailClosed waits until every webhook of the configuration fails
// closed and trusts istiod's root.
func waitFailClosed(t *testing.T, env *kube.Env, d *istiod, name string) {
	t.Helper()
	whcs := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	eventually(t, "failurePolicy Fail and the caBundle set", func() (bool, string) {
		got, err := whcs.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, w := range got.Webhooks {
			if p := w.FailurePolicy; p == nil || *p != admissionregistrationv1.Fail ||
				string(w.ClientConfig.CABundle) != string(d.srv.CA().RootCertPEM()) {
				return false, fmt.Sprintf("%s: failurePolicy %v, caBundle of %d bytes", w.Name, *p, len(w.ClientConfig.CABundle))
			}
		}
		return true, ""
	})
}

var configUpdatesRE = regexp.MustCompile(`(?m)^galley_validation_config_updates (\S+)$`)

// configUpdates reads galley_validation_config_updates on /metrics (0 when
// it has no series yet).
func configUpdates(t *testing.T, d *istiod) float64 {
	t.Helper()
	code, body := webhookMetrics(d)
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	m := configUpdatesRE.FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Istio's chart installs the validation webhook failing open, selecting
// the objects of its revision (objectSelector istio.io/rev In [default]).
// istiod switches it to fail closed once its dry run of an invalid Gateway
// (labelled with its revision, as Istio labels it, so that the chart's
// webhook sees it) comes back denied: from then on an invalid object of the
// revision is refused, and with istiod gone nothing of the revision gets
// in unvalidated.
func TestChartValidationWebhookFailsClosed(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns, withWebhook)
	before := configUpdates(t, d)
	vwc := chartValidator(t, env, d, ns)
	waitFailClosed(t, env, d, vwc.Name)
	if got := configUpdates(t, d) - before; got < 1 {
		t.Errorf("galley_validation_config_updates moved by %v after the configuration was patched", got)
	}

	ctx := context.Background()
	vsc := env.Istio.NetworkingV1().VirtualServices(ns)
	rev := map[string]string{"istio.io/rev": "default"}
	bad := vs("bad-regex", ns, rev, "reviews")
	bad.Spec.Http[0].Match = []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "a(b"}}}}
	if _, err := vsc.Create(ctx, bad, metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), `admission webhook "rev.validation.istio.io" denied the request`) {
		t.Errorf("an invalid VirtualService of the revision: %v", err)
	}
	if _, err := vsc.Create(ctx, vs("good", ns, rev, "reviews"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a valid VirtualService of the revision: %v", err)
	}

	// istiod down: the webhook cannot be called, the API server refuses
	d.stop()
	_, err := vsc.Create(ctx, bad, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "rev.validation.istio.io"`) {
		t.Errorf("an invalid VirtualService with istiod down: %v, want the webhook's failure (fail closed)", err)
	}
}

// A revision's istiod switches its own chart configuration
// (istio-validator-<revision>-istio-system, selecting istio.io/rev In
// [<revision>]) to fail closed.
func TestChartValidationWebhookFailsClosedRevision(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns, withWebhook, func(a *bootstrap.PilotArgs) { a.Revision = "canary" })
	vwc := chartValidator(t, env, d, ns, "--set", "revision=canary")
	if vwc.Labels["istio.io/rev"] != "canary" {
		t.Fatalf("the chart labels its configuration %v", vwc.Labels)
	}
	waitFailClosed(t, env, d, vwc.Name)
}
