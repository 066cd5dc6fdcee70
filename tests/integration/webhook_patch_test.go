package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/tests/kube"
)

// A webhook configuration of istiod's revision installed without a
// caBundle (as Istio's Helm chart installs it) gets istiod's root from the
// leader, and the API server then reaches the validation webhook with it.
func TestWebhookCABundlePatched(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns, withWebhook)
	ctx := context.Background()
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	url := "https://" + d.srv.HTTPSAddr() + "/validate"
	whc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-validator-patch-" + ns, Labels: map[string]string{"istio.io/rev": "default"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "rev.validation.istio.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"networking.istio.io"}, APIVersions: []string{"*"}, Resources: []string{"virtualservices"}},
			}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
		}},
	}
	whcs := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := whcs.Create(ctx, whc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = whcs.Delete(context.Background(), whc.Name, metav1.DeleteOptions{}) })
	eventually(t, "caBundle patched", func() (bool, string) {
		got, err := whcs.Get(ctx, whc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return string(got.Webhooks[0].ClientConfig.CABundle) == string(d.srv.CA().RootCertPEM()), fmt.Sprintf("%.40q", got.Webhooks[0].ClientConfig.CABundle)
	})
	vsc := env.Istio.NetworkingV1().VirtualServices(ns)
	eventually(t, "invalid create denied through the patched configuration", func() (bool, string) {
		bad := vs("bad", ns, nil, "reviews")
		bad.Spec.Http[0].Match = []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "a(b"}}}}
		_, err := vsc.Create(ctx, bad, metav1.CreateOptions{})
		if err == nil {
			_ = vsc.Delete(ctx, "bad", metav1.DeleteOptions{})
			return false, "created"
		}
		return strings.Contains(err.Error(), "error parsing regexp"), err.Error()
	})
}

// A validation webhook installed failing open (as the Helm chart installs
// it) is set to fail closed once istiod has seen it answer through the API
// server (a dry-run create of an invalid Gateway is denied).
func TestValidationWebhookFailsClosedOnceItAnswers(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns, withWebhook)
	ctx := context.Background()
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	url := "https://" + d.srv.HTTPSAddr() + "/validate"
	whc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-validator-failclose-" + ns, Labels: map[string]string{"istio.io/rev": "default"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "rev.validation.istio.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"networking.istio.io"}, APIVersions: []string{"*"}, Resources: []string{"gateways", "virtualservices"}},
			}},
			FailurePolicy: &ignore, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
		}},
	}
	whcs := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := whcs.Create(ctx, whc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = whcs.Delete(context.Background(), whc.Name, metav1.DeleteOptions{}) })
	eventually(t, "failurePolicy Fail", func() (bool, string) {
		got, err := whcs.Get(ctx, whc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p := got.Webhooks[0].FailurePolicy
		return p != nil && *p == admissionregistrationv1.Fail && len(got.Webhooks[0].ClientConfig.CABundle) > 0, fmt.Sprint(*p)
	})
}
