// Package inject is istiod's sidecar injection engine, compatible with the
// injection ConfigMap of Istio 1.31's istio-discovery Helm chart.
//
// It owns, as pure functions of their inputs:
//   - the injection configuration: the ConfigMap keys "config" (policy,
//     selectors, injected annotations, default templates, aliases, Go
//     templates) and "values" (the chart values as JSON), parsed and checked
//     once per ConfigMap version (ParseConfig);
//   - the template functions the chart's templates call (sprig's plus
//     Istio's own, funcs.go);
//   - the decision whether a pod is injected (policy.go);
//   - rendering the selected templates and merging them into the pod with a
//     strategic merge patch, then the post-processing the templates cannot
//     express: app probe rewriting, Prometheus annotation merge, the
//     sidecar.istio.io/status annotation, container order, native sidecars
//     (inject.go, merge.go, postprocess.go, probes.go);
//   - the JSONPatch from the pod as received to the injected pod.
//
// Watcher (watcher.go) keeps the configuration of a ConfigMap live, keeping
// the last good one when a new version does not parse. The admission
// webhook that calls Inject lives in pkg/webhooks/inject.
package inject
