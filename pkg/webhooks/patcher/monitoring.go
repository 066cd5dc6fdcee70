package patcher

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/monitoring"
)

// Istio's metric names, labels and help texts: those of its webhook cert
// patcher (pkg/webhooks) for the injection configurations, those of its
// validation webhook controller for the validation ones. Vectors, so that
// a series appears only once it has been counted, as in Istio.
var (
	// metricPatchAttempts counts the writes of a MutatingWebhookConfiguration
	// whose caBundle differed; Istio labels it with the injection webhook
	// name suffix, not the configuration's name.
	metricPatchAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webhook_patch_attempts_total",
		Help: "Webhook patching attempts",
	}, []string{"name"})
	metricPatchRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webhook_patch_retries_total",
		Help: "Webhook patching retries",
	}, []string{"name"})
	metricPatchFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webhook_patch_failures_total",
		Help: "Webhook patching total failures",
	}, []string{"name", "reason"})

	// metricValidationUpdates counts the writes of a
	// ValidatingWebhookConfiguration (caBundle, failurePolicy or both).
	metricValidationUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "galley_validation_config_updates",
		Help: "k8s webhook configuration updates",
	}, nil)
	metricValidationUpdateError = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "galley_validation_config_update_error",
		Help: "k8s webhook configuration update error",
	}, []string{"reason"})
)

func init() {
	monitoring.MustRegister(metricPatchAttempts, metricPatchRetries, metricPatchFailures,
		metricValidationUpdates, metricValidationUpdateError)
}

// Istio's reasons of webhook_patch_failures_total that can happen here
// (the configurations are watched by revision, so Istio's wrong_revision
// never does; the bundle is in memory, so load_ca_bundle_failure never does).
const (
	reasonConfigNotFound = "webhook_config_not_found"
	reasonEntryNotFound  = "webhook_entry_not_found"
	reasonUpdateFailure  = "webhook_update_failure"
)
