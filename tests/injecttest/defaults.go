package injecttest

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// APIServerDefaults applies, in place, the defaults a kube-apiserver (v1.3x,
// admission plugins DefaultTolerationSeconds and Priority, no
// ServiceAccount plugin) gives a pod on create, as far as the reference pods
// use them: each rule is one of SetDefaults_Pod, _PodSpec, _Container,
// _Probe, _HTTPGetAction, _ObjectFieldSelector, _*VolumeSource of
// k8s.io/kubernetes/pkg/apis/core/v1, or an admission plugin. The list is
// explicit on purpose: a default not listed here shows up as a difference.
func APIServerDefaults(pod *corev1.Pod) {
	s := &pod.Spec
	def(&s.DNSPolicy, corev1.DNSClusterFirst)
	def(&s.RestartPolicy, corev1.RestartPolicyAlways)
	def(&s.SchedulerName, corev1.DefaultSchedulerName)
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptr(true)
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr(int64(30))
	}
	if s.ServiceAccountName != "" && s.DeprecatedServiceAccount == "" {
		s.DeprecatedServiceAccount = s.ServiceAccountName
	}
	// Priority admission plugin
	if s.Priority == nil {
		s.Priority = ptr(int32(0))
	}
	if s.PreemptionPolicy == nil {
		p := corev1.PreemptLowerPriority
		s.PreemptionPolicy = &p
	}
	// DefaultTolerationSeconds admission plugin
	addToleration(s, "node.kubernetes.io/not-ready")
	addToleration(s, "node.kubernetes.io/unreachable")
	for i := range s.InitContainers {
		containerDefaults(&s.InitContainers[i])
	}
	for i := range s.Containers {
		containerDefaults(&s.Containers[i])
	}
	for i := range s.Volumes {
		volumeDefaults(&s.Volumes[i])
	}
	if pod.Status.Phase == "" {
		pod.Status.Phase = corev1.PodPending
	}
	if pod.Generation == 0 {
		pod.Generation = 1
	}
	pod.Status.QOSClass = qosClass(s)
}

func def[T ~string](f *T, v T) {
	if *f == "" {
		*f = v
	}
}

func ptr[T any](v T) *T { return &v }

func addToleration(s *corev1.PodSpec, key string) {
	for _, t := range s.Tolerations {
		if t.Key == key {
			return
		}
	}
	s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))})
}

func containerDefaults(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if tag := imageTag(c.Image); tag == "" || tag == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	def(&c.TerminationMessagePath, corev1.TerminationMessagePathDefault)
	def(&c.TerminationMessagePolicy, corev1.TerminationMessageReadFile)
	for i := range c.Ports {
		def(&c.Ports[i].Protocol, corev1.ProtocolTCP)
	}
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		probeDefaults(p)
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PreStop, c.Lifecycle.PostStart} {
			if h != nil && h.HTTPGet != nil {
				def(&h.HTTPGet.Scheme, corev1.URISchemeHTTP)
			}
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil {
			def(&vf.FieldRef.APIVersion, "v1")
		}
	}
}

func imageTag(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		return "digest"
	}
	if c := strings.LastIndex(image, ":"); c > strings.LastIndex(image, "/") {
		return image[c+1:]
	}
	return ""
}

func probeDefaults(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if p.HTTPGet != nil {
		def(&p.HTTPGet.Scheme, corev1.URISchemeHTTP)
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr("")
	}
}

func volumeDefaults(v *corev1.Volume) {
	mode := ptr(int32(corev1.ConfigMapVolumeSourceDefaultMode))
	switch {
	case v.ConfigMap != nil && v.ConfigMap.DefaultMode == nil:
		v.ConfigMap.DefaultMode = mode
	case v.Secret != nil && v.Secret.DefaultMode == nil:
		v.Secret.DefaultMode = mode
	case v.DownwardAPI != nil && v.DownwardAPI.DefaultMode == nil:
		v.DownwardAPI.DefaultMode = mode
	case v.Projected != nil && v.Projected.DefaultMode == nil:
		v.Projected.DefaultMode = mode
	}
	if v.DownwardAPI != nil {
		for i := range v.DownwardAPI.Items {
			if f := v.DownwardAPI.Items[i].FieldRef; f != nil {
				def(&f.APIVersion, "v1")
			}
		}
	}
	if v.EmptyDir == nil && v.VolumeSource == (corev1.VolumeSource{}) {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
}

// qosClass is the pod's QoS class from its containers' resources.
func qosClass(s *corev1.PodSpec) corev1.PodQOSClass {
	all := append(append([]corev1.Container{}, s.InitContainers...), s.Containers...)
	hasResources, guaranteed := false, true
	for _, c := range all {
		r := c.Resources
		if len(r.Requests) > 0 || len(r.Limits) > 0 {
			hasResources = true
		}
		for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			l, okL := r.Limits[n]
			q, okR := r.Requests[n]
			if !okL || (okR && !quantityEqual(q, l)) {
				guaranteed = false
			}
		}
	}
	switch {
	case !hasResources:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func quantityEqual(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }
