package patcher

import (
	"context"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// patchMutating sets the caBundle of the configuration's injection
// webhooks, as Istio's webhook cert patcher does: a configuration that is
// gone or has no injection webhook is counted as a failure and left; one
// whose injection webhooks already trust the bundle is not written; a
// write is counted as an attempt, and its failure as a failure and a retry.
func (p *Patcher) patchMutating(ctx context.Context, t *term, name string, bundle []byte) error {
	cur, err := t.factory.Admissionregistration().V1().MutatingWebhookConfigurations().Lister().Get(name)
	if apierrors.IsNotFound(err) {
		metricPatchFailures.WithLabelValues(name, reasonConfigNotFound).Inc()
		return nil
	}
	if err != nil {
		return err
	}
	found := false
	for _, w := range cur.Webhooks {
		found = found || p.isInjection(w.Name)
	}
	if !found {
		scope.Debugf("MutatingWebhookConfiguration %s has no webhook named *%s: not patched", name, p.opts.InjectionSuffix)
		metricPatchFailures.WithLabelValues(name, reasonEntryNotFound).Inc()
		return nil
	}
	upd := cur.DeepCopy()
	if !setBundles(upd.Webhooks, func(w *admissionv1.MutatingWebhook) (string, *admissionv1.WebhookClientConfig) {
		return w.Name, &w.ClientConfig
	}, p.isInjection, bundle) {
		return nil
	}
	metricPatchAttempts.WithLabelValues(p.opts.InjectionSuffix).Inc()
	if _, err := p.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		metricPatchFailures.WithLabelValues(name, reasonUpdateFailure).Inc()
		metricPatchRetries.WithLabelValues(name).Inc()
		return err
	}
	scope.Infof("patched caBundle of MutatingWebhookConfiguration %s", name)
	return nil
}

// isInjection selects the mutating webhooks istiod serves.
func (p *Patcher) isInjection(name string) bool {
	return strings.HasSuffix(name, p.opts.InjectionSuffix)
}
