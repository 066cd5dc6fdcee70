package kube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// podIP maps a namespace/IP to the workload holding it.
type podIP struct {
	key      string // namespace/ip
	workload string // namespace/name
}

func (p podIP) ResourceName() string { return p.key }

// buildWorkload is the transform Pod → WorkloadInstance. Pods that ended
// (their IP may be reused) have no workload; a pod without an IP yet has one
// without addresses (endpoints naming it by targetRef still find it).
func (c *Controller) buildWorkload(ctx krt.HandlerContext, pod *corev1.Pod) *model.WorkloadInstance {
	st := krt.FetchOne(ctx, c.settings.AsCollection())
	if st == nil || !c.namespaceSelected(pod.Namespace) {
		return nil
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	locality := model.LocalityFromLabels(pod.Labels)
	if locality == "" && pod.Spec.NodeName != "" {
		if node := krt.FetchOne(ctx, c.nodes, krt.FilterKey(pod.Spec.NodeName)); node != nil {
			locality = nodeLocality((*node).Labels)
		}
	}
	network := c.endpointNetwork(ctx, pod.Status.PodIP, pod.Labels, st)
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	ep := &model.IstioEndpoint{
		Labels:         model.AugmentLabels(pod.Labels, c.opts.ClusterID, locality, pod.Spec.NodeName, network),
		Addresses:      podIPs(pod),
		ServiceAccount: model.SpiffeIdentity(st.TrustDomain, pod.Namespace, sa),
		Network:        network,
		Locality:       model.Locality{Label: locality, ClusterID: c.opts.ClusterID},
		TLSMode:        tlsMode(pod.Labels),
		Namespace:      pod.Namespace,
		WorkloadName:   workloadName(pod),
		NodeName:       pod.Spec.NodeName,
		HealthStatus:   model.UnHealthy,
	}
	if podReady(pod) {
		ep.HealthStatus = model.Healthy
	}
	if pod.Spec.Subdomain != "" {
		ep.SubDomain = pod.Spec.Subdomain
		ep.HostName = pod.Spec.Hostname
		if ep.HostName == "" {
			ep.HostName = pod.Name
		}
	}
	return &model.WorkloadInstance{
		Name:      pod.Name,
		Namespace: pod.Namespace,
		Kind:      model.PodKind,
		Labels:    pod.Labels,
		Endpoint:  ep,
		PortMap:   containerPorts(pod),
	}
}

func podIPs(pod *corev1.Pod) []string {
	if len(pod.Status.PodIPs) == 0 {
		if pod.Status.PodIP == "" {
			return nil
		}
		return []string{pod.Status.PodIP}
	}
	out := make([]string, 0, len(pod.Status.PodIPs))
	for _, ip := range pod.Status.PodIPs {
		out = append(out, ip.IP)
	}
	return out
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func containerPorts(pod *corev1.Pod) map[string]uint32 {
	var out map[string]uint32
	for _, ctr := range pod.Spec.Containers {
		for _, p := range ctr.Ports {
			if p.Name == "" {
				continue
			}
			if out == nil {
				out = map[string]uint32{}
			}
			out[p.Name] = uint32(p.ContainerPort)
		}
	}
	return out
}

// tlsMode is the security.istio.io/tlsMode label, else "disabled".
func tlsMode(labels map[string]string) string {
	if v := labels[model.TLSModeLabel]; v != "" {
		return v
	}
	return model.DisabledTLSModeLabel
}

// nodeLocality renders the locality of a node: region, then zone and
// subzone when present.
func nodeLocality(labels map[string]string) string {
	loc := labels[model.RegionLabel]
	if z, ok := labels[model.ZoneLabel]; ok {
		loc += "/" + z
	}
	if sz, ok := labels[model.SubzoneLabel]; ok {
		loc += "/" + sz
	}
	return loc
}

// workloadName is the name of the workload a pod belongs to: the
// Deployment of a ReplicaSet-owned pod, the CronJob of a Job-owned pod, the
// owning controller, else the pod itself.
func workloadName(pod *corev1.Pod) string {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		switch ref.Kind {
		case "ReplicaSet":
			if h := pod.Labels["pod-template-hash"]; h != "" && strings.HasSuffix(ref.Name, "-"+h) {
				return strings.TrimSuffix(ref.Name, "-"+h)
			}
		case "Job":
			if i := strings.LastIndexByte(ref.Name, '-'); i > 0 && allDigits(ref.Name[i+1:]) {
				return ref.Name[:i]
			}
		}
		return ref.Name
	}
	return pod.Name
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
