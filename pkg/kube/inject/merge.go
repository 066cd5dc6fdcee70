package inject

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// podPatchMeta is the strategic merge schema of a Pod (list merge keys:
// containers by name, volumes by name, ...), built once.
var podPatchMeta = func() strategicpatch.LookupPatchMeta {
	m, err := strategicpatch.NewPatchMetaFromStruct(corev1.Pod{})
	if err != nil {
		panic(err)
	}
	return m
}()

// renderedJSON converts a rendered template (YAML) to JSON once; it is
// merged into two pods.
func renderedJSON(overlay []byte) ([]byte, error) {
	js, err := yaml.YAMLToJSON(overlay)
	if err != nil {
		return nil, fmt.Errorf("strategic merge: %v", err)
	}
	return js, nil
}

// overlayJSON strategic-merges a rendered template (as JSON) over pod and
// returns the result (new).
func overlayJSON(pod *corev1.Pod, overlay []byte) (*corev1.Pod, error) {
	patch := map[string]any{}
	if err := json.Unmarshal(overlay, &patch); err != nil {
		return nil, fmt.Errorf("strategic merge: %v", err)
	}
	if patch == nil {
		patch = map[string]any{}
	}
	return overlayMap(pod, patch)
}

func overlayMap(pod *corev1.Pod, patch map[string]any) (*corev1.Pod, error) {
	cur, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	orig := map[string]any{}
	if err := json.Unmarshal(cur, &orig); err != nil {
		return nil, err
	}
	merged, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(orig, patch, podPatchMeta)
	if err != nil {
		return nil, fmt.Errorf("strategic merge: %v", err)
	}
	js, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(js, out); err != nil {
		return nil, fmt.Errorf("unmarshal patched pod: %v", err)
	}
	return out, nil
}

// overlayObject strategic-merges a pod-shaped object (marshalled as JSON)
// over pod.
func overlayObject(pod *corev1.Pod, overlay any) (*corev1.Pod, error) {
	js, err := json.Marshal(overlay)
	if err != nil {
		return nil, err
	}
	patch := map[string]any{}
	if err := json.Unmarshal(js, &patch); err != nil {
		return nil, err
	}
	return overlayMap(pod, patch)
}

// AutoImage as a user container's image means "the injected image".
const AutoImage = "auto"

// containerLists are containers and init containers, as the
// proxy.istio.io/overrides annotation records them.
type containerLists struct {
	Containers     []corev1.Container `json:"containers,omitempty"`
	InitContainers []corev1.Container `json:"initContainers,omitempty"`
}

// reapplyOverrides lets a pod customise an injected container: a container
// of the pod (or of its overrides annotation) named like one the templates
// add is merged back over the injected one, and recorded in the overrides
// annotation on first injection so that re-injection reapplies it. Containers
// an earlier injection added (status annotation) are not overrides.
func reapplyOverrides(final, original, templatePod *corev1.Pod, pc *meshconfig.ProxyConfig) (*corev1.Pod, error) {
	var existing, applied, injected containerLists
	if v, ok := original.Annotations[AnnotationProxyOverrides]; ok {
		if err := json.Unmarshal([]byte(v), &existing); err != nil {
			return nil, err
		}
	}
	status, reinjected := original.Annotations[AnnotationStatus]
	if reinjected {
		injected = parseStatusContainers(status)
	}
	var err error
	for _, c := range templatePod.Spec.Containers {
		if findContainer(c.Name, injected.Containers) != nil {
			continue
		}
		m := findContainer(c.Name, existing.Containers)
		if m == nil {
			m = findContainer(c.Name, original.Spec.Containers)
		}
		if m == nil {
			continue
		}
		o := *m.DeepCopy()
		if o.Image == AutoImage {
			o.Image = ""
		}
		applied.Containers = append(applied.Containers, o)
		if final, err = overlayObject(final, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{o}}}); err != nil {
			return nil, fmt.Errorf("failed to apply sidecar container: %v", err)
		}
	}
	for _, c := range templatePod.Spec.InitContainers {
		if findContainer(c.Name, injected.InitContainers) != nil {
			continue
		}
		m := findContainer(c.Name, existing.InitContainers)
		if m == nil {
			m = findInPod(c.Name, original)
		}
		if m == nil {
			continue
		}
		o := *m.DeepCopy()
		if o.Image == AutoImage {
			o.Image = ""
		}
		applied.InitContainers = append(applied.InitContainers, o)
		// containers set to empty: a null list would delete them all
		overlay := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{}, InitContainers: []corev1.Container{o}}}
		if final, err = overlayObject(final, overlay); err != nil {
			return nil, fmt.Errorf("failed to apply sidecar init container: %v", err)
		}
	}
	if !reinjected && (len(applied.Containers) > 0 || len(applied.InitContainers) > 0) {
		js, err := json.Marshal(applied)
		if err != nil {
			return nil, err
		}
		if final.Annotations == nil {
			final.Annotations = map[string]string{}
		}
		final.Annotations[AnnotationProxyOverrides] = string(js)
	}
	adjustInitContainerUser(final, original, pc)
	return final, nil
}

// adjustInitContainerUser follows a user istio-proxy container's
// runAsUser/runAsGroup: iptables' "-u" owner (unless 0), the validation
// container's identity, and uid 0 for the proxy in TPROXY mode.
func adjustInitContainerUser(final, original *corev1.Pod, pc *meshconfig.ProxyConfig) {
	user := findInPod(ProxyContainerName, original)
	if user == nil || user.SecurityContext == nil || (user.SecurityContext.RunAsUser == nil && user.SecurityContext.RunAsGroup == nil) {
		return
	}
	var initC *corev1.Container
	for _, n := range []string{InitContainerName, ValidationContainerName} {
		if initC = findContainer(n, final.Spec.InitContainers); initC != nil {
			break
		}
	}
	if initC == nil {
		scope.Warnf("neither %s nor %s container found", InitContainerName, ValidationContainerName)
		return
	}
	tproxy := pc.GetInterceptionMode() == meshconfig.ProxyConfig_TPROXY || final.Annotations[AnnotationInterception] == "TPROXY"
	if tproxy && user.SecurityContext.RunAsUser != nil {
		if sc := findInPod(ProxyContainerName, final); sc != nil && sc.SecurityContext != nil && sc.SecurityContext.RunAsUser != nil {
			*sc.SecurityContext.RunAsUser = 0
		}
	}
	if !tproxy && initC.Name == ValidationContainerName {
		if initC.SecurityContext == nil {
			initC.SecurityContext = &corev1.SecurityContext{}
		}
		if user.SecurityContext.RunAsUser != nil {
			initC.SecurityContext.RunAsUser = user.SecurityContext.RunAsUser
		}
		if user.SecurityContext.RunAsGroup != nil {
			initC.SecurityContext.RunAsGroup = user.SecurityContext.RunAsGroup
		}
	}
	if user.SecurityContext.RunAsUser == nil || *user.SecurityContext.RunAsUser == 0 {
		return
	}
	for i := range initC.Args {
		if initC.Args[i] == "-u" && i+1 < len(initC.Args) {
			initC.Args[i+1] = fmt.Sprint(*user.SecurityContext.RunAsUser)
			return
		}
	}
}

// parseStatusContainers reads the container names of a status annotation.
func parseStatusContainers(status string) containerLists {
	var s struct {
		Containers     []string `json:"containers"`
		InitContainers []string `json:"initContainers"`
	}
	var out containerLists
	if err := json.Unmarshal([]byte(status), &s); err != nil {
		scope.Errorf("cannot decode %s: %v", AnnotationStatus, err)
		return out
	}
	for _, n := range s.Containers {
		out.Containers = append(out.Containers, corev1.Container{Name: n})
	}
	for _, n := range s.InitContainers {
		out.InitContainers = append(out.InitContainers, corev1.Container{Name: n})
	}
	return out
}

// reinsertOverrides puts back the containers of the overrides annotation
// that a stripped pod lost, so the templates see what the user wrote.
func reinsertOverrides(pod *corev1.Pod) (*corev1.Pod, error) {
	var o containerLists
	if v, ok := pod.Annotations[AnnotationProxyOverrides]; ok {
		if err := json.Unmarshal([]byte(v), &o); err != nil {
			return nil, err
		}
	}
	pod = pod.DeepCopy()
	for _, c := range o.Containers {
		if findContainer(c.Name, pod.Spec.Containers) == nil {
			pod.Spec.Containers = append(pod.Spec.Containers, c)
		}
	}
	for _, c := range o.InitContainers {
		if findContainer(c.Name, pod.Spec.InitContainers) == nil {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		}
	}
	return pod, nil
}

func findContainer(name string, cs []corev1.Container) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// findInPod looks in containers, then init containers.
func findInPod(name string, pod *corev1.Pod) *corev1.Container {
	if c := findContainer(name, pod.Spec.Containers); c != nil {
		return c
	}
	return findContainer(name, pod.Spec.InitContainers)
}

func moveContainer(from, to []corev1.Container, name string) ([]corev1.Container, []corev1.Container) {
	for i := range from {
		if from[i].Name == name {
			c := from[i]
			from = append(from[:i:i], from[i+1:]...)
			return from, append(to, c)
		}
	}
	return from, to
}

func removeContainer(cs []corev1.Container, name string) []corev1.Container {
	out := []corev1.Container{}
	for _, c := range cs {
		if c.Name != name {
			out = append(out, c)
		}
	}
	return out
}

// placeContainer moves the container named name first or last (no-op when
// absent; the list is rebuilt either way, as Istio's).
func placeContainer(cs []corev1.Container, name string, first bool) []corev1.Container {
	out := []corev1.Container{}
	var match *corev1.Container
	for i := range cs {
		if cs[i].Name == name {
			match = &cs[i]
			continue
		}
		out = append(out, cs[i])
	}
	if match == nil {
		return out
	}
	if first {
		return append([]corev1.Container{*match}, out...)
	}
	return append(out, *match)
}

var cronJobName = regexp.MustCompile(`(.+)-\d{8,10}$`)

// DeployMeta guesses the workload a pod belongs to from its controller
// reference (Deployment through its ReplicaSet's pod-template-hash, Argo
// Rollout, DeploymentConfig, CronJob through its Job's timestamp suffix),
// as Istio does for ISTIO_META_WORKLOAD_NAME and ISTIO_META_OWNER.
func DeployMeta(pod *corev1.Pod) (types.NamespacedName, metav1.TypeMeta) {
	meta := types.NamespacedName{Name: pod.Name, Namespace: pod.Namespace}
	tm := metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	if pod.GenerateName != "" {
		for _, ref := range pod.OwnerReferences {
			if ref.Controller == nil || !*ref.Controller {
				continue
			}
			tm.APIVersion, tm.Kind, meta.Name = ref.APIVersion, ref.Kind, ref.Name
			hash, rolloutHash := pod.Labels["pod-template-hash"], pod.Labels["rollouts-pod-template-hash"]
			switch {
			case tm.Kind == "ReplicaSet" && hash != "" && strings.HasSuffix(ref.Name, hash):
				meta.Name, tm.Kind = strings.TrimSuffix(ref.Name, "-"+hash), "Deployment"
			case tm.Kind == "ReplicaSet" && rolloutHash != "" && strings.HasSuffix(ref.Name, rolloutHash):
				meta.Name, tm.Kind, tm.APIVersion = strings.TrimSuffix(ref.Name, "-"+rolloutHash), "Rollout", "v1alpha1"
			case tm.Kind == "ReplicationController" && pod.Labels["deploymentconfig"] != "":
				meta.Name, tm.Kind = pod.Labels["deploymentconfig"], "DeploymentConfig"
			case tm.Kind == "Job":
				if m := cronJobName.FindStringSubmatch(ref.Name); len(m) == 2 {
					meta.Name, tm.Kind, tm.APIVersion = m[1], "CronJob", "batch/v1"
				}
			}
			break
		}
	}
	if meta.Name == "" {
		meta.Name = pod.Name
	}
	return meta, tm
}
