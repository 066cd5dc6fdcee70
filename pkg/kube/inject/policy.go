package inject

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// IgnoredNamespaces are never injected: Kubernetes' own namespaces and
// kind's local-path-storage, as in Istio.
var IgnoredNamespaces = map[string]bool{
	"kube-system":        true,
	"kube-public":        true,
	"kube-node-lease":    true,
	"local-path-storage": true,
}

// Required decides whether a pod is injected, as Istio decides once the
// webhook's namespace and object selectors sent it the pod:
//   - never a hostNetwork pod, nor one in an ignored namespace;
//   - the label sidecar.istio.io/inject (else the annotation of that name)
//     "true" or "false" decides; another value is ignored (logged);
//   - else a matching neverInjectSelector refuses, then a matching
//     alwaysInjectSelector injects;
//   - else the policy: enabled injects, disabled does not, anything else
//     disables injection.
func Required(c *Config, spec *corev1.PodSpec, meta *metav1.ObjectMeta) bool {
	if spec.HostNetwork || IgnoredNamespaces[meta.Namespace] {
		return false
	}
	choice := meta.Annotations[AnnotationInject]
	if v, ok := meta.Labels[LabelInject]; ok {
		choice = v
	}
	decided, inject := false, false
	switch choice {
	case "true":
		decided, inject = true, true
	case "false":
		decided = true
	case "":
	default:
		scope.Warnf("pod %s/%s: invalid %s %q (only true and false are accepted): the default policy applies",
			meta.Namespace, podName(meta), LabelInject, choice)
	}
	if !decided && matchesAny(c.NeverInjectSelector, meta.Labels, "neverInjectSelector") {
		decided = true
	}
	if !decided && matchesAny(c.AlwaysInjectSelector, meta.Labels, "alwaysInjectSelector") {
		decided, inject = true, true
	}
	switch c.Policy {
	case PolicyEnabled:
		return !decided || inject
	case PolicyDisabled:
		return decided && inject
	default:
		scope.Errorf("injection policy %q is neither %q nor %q: injection disabled", c.Policy, PolicyEnabled, PolicyDisabled)
		return false
	}
}

func matchesAny(selectors []metav1.LabelSelector, l map[string]string, what string) bool {
	for i := range selectors {
		sel, err := metav1.LabelSelectorAsSelector(&selectors[i])
		if err != nil {
			scope.Warnf("invalid %s entry %d: %v", what, i, err)
			continue
		}
		if !sel.Empty() && sel.Matches(labels.Set(l)) {
			return true
		}
	}
	return false
}

// podName is the pod's name, or its generateName when the API server has
// not named it yet.
func podName(meta *metav1.ObjectMeta) string {
	if meta.Name != "" {
		return meta.Name
	}
	if meta.GenerateName != "" {
		return meta.GenerateName + "***** (actual name not yet known)"
	}
	return ""
}
