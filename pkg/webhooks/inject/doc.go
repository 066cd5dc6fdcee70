// Package inject is istiod's sidecar injection admission webhook (/inject
// and /inject/... on --httpsAddr, the webhooks *.sidecar-injector.istio.io
// of the istio-sidecar-injector MutatingWebhookConfiguration): it decodes a
// Kubernetes AdmissionReview (admission.k8s.io v1 or v1beta1), decides and
// performs the injection with pkg/kube/inject and answers with a JSONPatch,
// echoing the request's uid and apiVersion. Path parameters
// (/inject/cluster/<id>/net/<network>/...) become proxy environment
// variables, as in Istio. Istio's sidecar_injection_* metrics are counted
// on the process registry.
package inject
