// Package patcher keeps istiod's webhook configurations trusting its CA and,
// once the validation webhook is seen to answer, failing closed, as Istio's
// istiod does (its webhook cert patcher for the injection webhooks, its
// validation webhook controller for the validation ones):
//
//   - the caBundle of the injection webhooks (named *sidecar-injector.istio.io)
//     of the MutatingWebhookConfigurations labelled with istiod's revision,
//     and of every webhook of the ValidatingWebhookConfigurations labelled
//     with it, is set to the root certificate, and set again when the root
//     changes or someone edits it;
//   - a validation webhook that fails open (the chart installs it with
//     failurePolicy Ignore) is switched to Fail once a dry-run create of an
//     invalid Gateway, labelled with the revision, comes back denied by a
//     webhook (failclose.go); until then it is retried with a backoff.
//
// It never rewrites a configuration that already says the right thing, and
// counts what it does in Istio's metrics (monitoring.go). Run it under
// leader election: one writer per cluster object. With InjectionOnly (what
// an external istiod runs in a remote cluster) only the injection webhooks
// are read and patched.
package patcher
