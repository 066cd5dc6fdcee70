package patcher

import (
	"context"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reconcileValidating brings a ValidatingWebhookConfiguration to what
// Istio's validation webhook controller makes of it: every webhook trusts
// the bundle and, once the webhook has been seen to answer, fails closed.
// Istio writes the caBundle at once even while the webhook does not answer
// yet (the API server needs it to reach the webhook at all), then looks
// again with a backoff until it can switch the failure policy. Unlike
// Istio, nothing is written when nothing changes. Every write counts in
// galley_validation_config_updates, every failed one in
// galley_validation_config_update_error.
func (p *Patcher) reconcileValidating(ctx context.Context, t *term, name string, bundle []byte) error {
	cur, err := t.factory.Admissionregistration().V1().ValidatingWebhookConfigurations().Lister().Get(name)
	if err != nil {
		return ignoreNotFound(err)
	}
	upd := cur.DeepCopy()
	changed := setBundles(upd.Webhooks, func(w *admissionv1.ValidatingWebhook) (string, *admissionv1.WebhookClientConfig) {
		return w.Name, &w.ClientConfig
	}, func(string) bool { return true }, bundle)
	failOpen := p.opts.ReadyForFailClose != nil && failsOpen(cur)
	closing := failOpen && p.readyForFailClose(ctx, t, name)
	if closing {
		fail := admissionv1.Fail
		for i := range upd.Webhooks {
			upd.Webhooks[i].FailurePolicy = &fail
		}
		changed = true
	}
	if changed {
		if _, err := p.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			metricValidationUpdateError.WithLabelValues(string(apierrors.ReasonForError(err))).Inc()
			return err
		}
		metricValidationUpdates.WithLabelValues().Inc()
		if closing {
			scope.Infof("validation webhook answers: ValidatingWebhookConfiguration %s set to failurePolicy Fail", name)
		} else {
			scope.Infof("patched caBundle of ValidatingWebhookConfiguration %s", name)
		}
	}
	if failOpen && !closing {
		return errNotAnswering
	}
	return nil
}

// readyForFailClose reports whether the validation webhook was seen to
// answer, asking once more when it has not been yet. The first time it
// has, every other validation configuration is looked at again, so that
// all of them switch (the one at hand, name, switches now).
func (p *Patcher) readyForFailClose(ctx context.Context, t *term, name string) bool {
	if p.answered.Load() {
		return true
	}
	if ok, why := p.opts.ReadyForFailClose(ctx); !ok {
		scope.Infof("not ready to switch validation to fail closed: %s", why)
		return false
	}
	scope.Infof("the validation webhook rejected an invalid config: switching to fail closed")
	p.answered.Store(true)
	t.enqueueAll(false, name)
	return true
}

// failsOpen reports whether a webhook of c says failurePolicy other than
// Fail (unset is the API's default, Fail, as Istio reads it).
func failsOpen(c *admissionv1.ValidatingWebhookConfiguration) bool {
	for _, w := range c.Webhooks {
		if w.FailurePolicy != nil && *w.FailurePolicy != admissionv1.Fail {
			return true
		}
	}
	return false
}
