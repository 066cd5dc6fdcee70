package inject

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("inject", "sidecar injection")

// Names of the containers the injector manages.
const (
	ProxyContainerName      = "istio-proxy"
	InitContainerName       = "istio-init"
	ValidationContainerName = "istio-validation"
	EnableCoreDumpName      = "enable-core-dump"
	defaultProxyUID         = 1337
)

// Request is everything one injection depends on. Inject reads it and never
// modifies what it points to.
type Request struct {
	// Pod is the pod as received, its namespace set.
	Pod *corev1.Pod
	// Config is the injector configuration (required).
	Config *Config
	// Mesh is the mesh config (required).
	Mesh *meshconfig.MeshConfig
	// ProxyConfig is the pod's effective ProxyConfig (EffectiveProxyConfig);
	// nil means the mesh's defaultConfig with the pod's proxy.istio.io/config
	// annotation applied.
	ProxyConfig *meshconfig.ProxyConfig
	// Revision is istiod's revision ("" is "default").
	Revision string
	// NativeSidecar is the cluster's native sidecar decision
	// (DetectNativeSidecar); the pod's sidecar.istio.io/nativeSidecar
	// annotation overrides it.
	NativeSidecar bool
	// ProxyEnvs are the proxy environment variables of the webhook's URL
	// path (ParseInjectPath), such as ISTIO_META_CLUSTER_ID.
	ProxyEnvs map[string]string
	// CompliancePolicy is istiod's COMPLIANCE_POLICY.
	CompliancePolicy string
}

// TemplateData is what an injection template renders (its field names are
// the chart's: .ObjectMeta, .Values, .ProxyConfig, ...).
type TemplateData struct {
	TypeMeta                 metav1.TypeMeta
	DeploymentMeta           types.NamespacedName
	ObjectMeta               metav1.ObjectMeta
	Spec                     corev1.PodSpec
	ProxyConfig              *meshconfig.ProxyConfig
	MeshConfig               *meshconfig.MeshConfig
	Values                   map[string]any
	Revision                 string
	NativeSidecars           bool
	ProxyImage               string
	ProxyInitImage           string
	ProxyUID                 int64
	ProxyGID                 int64
	InboundTrafficPolicyMode string
	CompliancePolicy         string
}

// Inject injects the pod and returns the JSONPatch (RFC 6902) from the pod
// as received to the injected one, as Istio's webhook answers.
func Inject(r Request) ([]byte, error) {
	original, err := json.Marshal(r.Pod)
	if err != nil {
		return nil, err
	}
	injected, err := InjectPod(r)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(injected)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.CreatePatch(original, out)
	if err != nil {
		return nil, fmt.Errorf("failed to create patch: %v", err)
	}
	return json.Marshal(ops)
}

// InjectPod returns the injected pod (new; r.Pod is not modified).
func InjectPod(r Request) (*corev1.Pod, error) {
	if r.Config == nil || r.Mesh == nil {
		return nil, fmt.Errorf("no injection configuration")
	}
	if r.ProxyConfig == nil {
		r.ProxyConfig = EffectiveProxyConfig(r.Mesh, nil, r.Pod.Namespace, r.Pod.Labels, r.Pod.Annotations)
	}
	r.ProxyEnvs = clusterEnvs(r)
	if r.Pod.Spec.DNSPolicy != "" && r.Pod.Spec.DNSPolicy != corev1.DNSClusterFirst {
		scope.Warnf("pod %s/%s: DNSPolicy %q is not ClusterFirst: the sidecar may not reach istiod", r.Pod.Namespace, podName(&r.Pod.ObjectMeta), r.Pod.Spec.DNSPolicy)
	}
	merged, templatePod, err := render(r)
	if err != nil {
		return nil, fmt.Errorf("failed to run injection template: %v", err)
	}
	merged, err = reapplyOverrides(merged, r.Pod, templatePod, r.ProxyConfig)
	if err != nil {
		return nil, fmt.Errorf("failed to re apply container: %v", err)
	}
	if err := postProcess(merged, templatePod, r); err != nil {
		return nil, fmt.Errorf("failed to process pod: %v", err)
	}
	return merged, nil
}

// clusterEnvs adds the cluster and network (values, then the URL path,
// then the pod's topology.istio.io/network label) to a copy of the URL
// path's variables.
func clusterEnvs(r Request) map[string]string {
	out := make(map[string]string, len(r.ProxyEnvs)+2)
	for k, v := range r.ProxyEnvs {
		out[k] = v
	}
	cluster := r.Config.Values.String("global", "multiCluster", "clusterName")
	network := r.Config.Values.String("global", "network")
	if v := out["ISTIO_META_CLUSTER_ID"]; v != "" {
		cluster = v
	}
	if v := out["ISTIO_META_NETWORK"]; v != "" {
		network = v
	}
	if v, ok := r.Pod.Labels[LabelNetwork]; ok {
		network = v
	}
	if cluster != "" {
		out["ISTIO_META_CLUSTER_ID"] = cluster
	}
	if network != "" {
		out["ISTIO_META_NETWORK"] = network
	}
	return out
}

// render runs the selected templates and merges each into the pod; it
// returns the merged pod and the pod of the templates alone.
func render(r Request) (*corev1.Pod, *corev1.Pod, error) {
	if err := validateAnnotations(r.Pod.Annotations); err != nil {
		return nil, nil, err
	}
	stripped, err := reinsertOverrides(stripPod(r))
	if err != nil {
		return nil, nil, err
	}
	data := templateData(r, stripped)
	merged, templatePod := r.Pod, &corev1.Pod{}
	for _, name := range selectTemplates(r.Config, r.Pod) {
		t, ok := r.Config.Templates[name]
		if !ok {
			return nil, nil, fmt.Errorf("requested template %q not found; have %v", name, strings.Join(sortedKeys(r.Config.Templates), ", "))
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, &data); err != nil {
			return nil, nil, err
		}
		js, err := renderedJSON(buf.Bytes())
		if err != nil {
			return nil, nil, fmt.Errorf("failed applying injection overlay: %v", err)
		}
		if templatePod, err = overlayJSON(templatePod, js); err != nil {
			return nil, nil, fmt.Errorf("failed applying injection overlay: %v", err)
		}
		// a native sidecar renders under initContainers; a user's istio-proxy
		// customisation under containers moves there too
		if nativeSidecar(r, merged) && findContainer(ProxyContainerName, templatePod.Spec.InitContainers) != nil &&
			findContainer(ProxyContainerName, merged.Spec.Containers) != nil {
			merged = merged.DeepCopy()
			merged.Spec.Containers, merged.Spec.InitContainers = moveContainer(merged.Spec.Containers, merged.Spec.InitContainers, ProxyContainerName)
		}
		if merged, err = overlayJSON(merged, js); err != nil {
			return nil, nil, fmt.Errorf("failed parsing generated injected YAML (check Istio sidecar injector configuration): %v", err)
		}
	}
	return merged, templatePod, nil
}

func nativeSidecar(r Request, pod *corev1.Pod) bool {
	switch pod.Annotations[AnnotationNativeSidecar] {
	case "true":
		return true
	case "false":
		return false
	}
	return r.NativeSidecar
}

func templateData(r Request, stripped *corev1.Pod) TemplateData {
	deploy, typeMeta := DeployMeta(r.Pod)
	return TemplateData{
		TypeMeta:                 typeMeta,
		DeploymentMeta:           deploy,
		ObjectMeta:               stripped.ObjectMeta,
		Spec:                     stripped.Spec,
		ProxyConfig:              r.ProxyConfig,
		MeshConfig:               r.Mesh,
		Values:                   r.Config.Values,
		Revision:                 r.Revision,
		NativeSidecars:           r.NativeSidecar,
		ProxyImage:               proxyImage(r.Config.Values, r.ProxyConfig.GetImage().GetImageType(), stripped.Annotations),
		ProxyInitImage:           proxyInitImage(r.Config.Values, stripped.Annotations),
		ProxyUID:                 defaultProxyUID,
		ProxyGID:                 defaultProxyUID,
		InboundTrafficPolicyMode: inboundTrafficPolicyMode(r.Mesh),
		CompliancePolicy:         r.CompliancePolicy,
	}
}

// selectTemplates: the pod's inject.istio.io/templates, else the defaults,
// aliases expanded.
func selectTemplates(c *Config, pod *corev1.Pod) []string {
	if a, ok := pod.Annotations[AnnotationTemplates]; ok {
		var names []string
		for _, n := range strings.Split(a, ",") {
			names = append(names, strings.TrimSpace(n))
		}
		return c.resolve(names)
	}
	return c.resolve(c.DefaultTemplates)
}

func inboundTrafficPolicyMode(m *meshconfig.MeshConfig) string {
	if m.GetInboundTrafficPolicy().GetMode() == meshconfig.MeshConfig_InboundTrafficPolicy_LOCALHOST {
		return "localhost"
	}
	return "passthrough"
}

// stripPod removes what an earlier injection added (the containers its
// status annotation lists, its Prometheus annotations, the status itself),
// so that re-injecting a pod gives the same result.
func stripPod(r Request) *corev1.Pod {
	prev := injectionStatus(r.Pod)
	if prev == nil {
		return r.Pod
	}
	pod := r.Pod.DeepCopy()
	for _, c := range prev.Containers {
		pod.Spec.Containers = removeContainer(pod.Spec.Containers, c)
	}
	for _, c := range prev.InitContainers {
		pod.Spec.InitContainers = removeContainer(pod.Spec.InitContainers, c)
	}
	target := fmt.Sprint(r.Mesh.GetDefaultConfig().GetStatusPort())
	if cur, ok := prometheusPort(pod); ok && cur == target {
		clearPrometheusAnnotations(pod)
	}
	delete(pod.Annotations, AnnotationStatus)
	return pod
}

// Status is the sidecar.istio.io/status annotation.
type Status struct {
	InitContainers   []string `json:"initContainers"`
	Containers       []string `json:"containers"`
	Volumes          []string `json:"volumes"`
	ImagePullSecrets []string `json:"imagePullSecrets"`
	Revision         string   `json:"revision"`
}

func injectionStatus(pod *corev1.Pod) *Status {
	v, ok := pod.Annotations[AnnotationStatus]
	if !ok {
		return nil
	}
	var s Status
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return nil
	}
	return &s
}

// statusOf lists what the templates added.
func statusOf(spec corev1.PodSpec, revision string) string {
	s := Status{Revision: revision}
	if s.Revision == "" {
		s.Revision = "default"
	}
	for _, c := range spec.InitContainers {
		s.InitContainers = append(s.InitContainers, c.Name)
	}
	for _, c := range spec.Containers {
		s.Containers = append(s.Containers, c.Name)
	}
	for _, v := range spec.Volumes {
		s.Volumes = append(s.Volumes, v.Name)
	}
	for _, p := range spec.ImagePullSecrets {
		s.ImagePullSecrets = append(s.ImagePullSecrets, p.Name)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// updateClusterEnvs replaces the proxy's variables named in envs and
// appends them in name order.
func updateClusterEnvs(c *corev1.Container, envs map[string]string) {
	out := make([]corev1.EnvVar, 0, len(c.Env)+len(envs))
	for _, e := range c.Env {
		if _, ok := envs[e.Name]; !ok {
			out = append(out, e)
		}
	}
	keys := make([]string, 0, len(envs))
	for k := range envs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, corev1.EnvVar{Name: k, Value: envs[k]})
	}
	c.Env = out
}

// EffectiveProxyConfig is a pod's ProxyConfig: the mesh's defaultConfig,
// then the ProxyConfig resources (root namespace, pod namespace, workload
// selector; see ProxyConfigs), then the pod's proxy.istio.io/config
// annotation, which a workload resource overrides. An invalid annotation is
// ignored here (injection rejects the pod for it).
func EffectiveProxyConfig(m *meshconfig.MeshConfig, pcs *ProxyConfigs, namespace string, labels, annotations map[string]string) *meshconfig.ProxyConfig {
	out := mesh.OverlayProxyConfig(mesh.DefaultProxyConfig(), m.GetDefaultConfig())
	out = pcs.apply(out, m.GetRootNamespace(), namespace)
	workload := pcs.workload(namespace, labels)
	if v, ok := annotations[AnnotationProxyConfig]; ok {
		if pca, err := mesh.ApplyProxyConfig(v, nil); err == nil {
			workload = mesh.OverlayProxyConfig(pca, workload)
		}
	}
	if workload != nil {
		out = mesh.OverlayProxyConfig(out, workload)
	}
	return out
}
