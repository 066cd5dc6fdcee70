// Package patcher keeps istiod's webhook configurations trusting its CA,
// as Istio's istiod does: the caBundle of every webhook of the
// MutatingWebhookConfigurations (injection) and ValidatingWebhookConfigurations
// (config validation) labelled with istiod's revision is set to the root
// certificate, and rewritten when it changes or someone edits it. It never
// rewrites a configuration that already says the right thing. Run it under
// leader election: one writer per cluster object.
package patcher
