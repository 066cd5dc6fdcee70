package kube

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"istio.io/api/annotation"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// Service annotations the registry reads.
const (
	// KubeServiceAccountsAnnotation lists Kubernetes service accounts allowed
	// to run the service (rendered as SPIFFE identities).
	KubeServiceAccountsAnnotation = "alpha.istio.io/kubernetes-serviceaccounts"
	// CanonicalServiceAccountsAnnotation lists identities verbatim.
	CanonicalServiceAccountsAnnotation = "alpha.istio.io/canonical-serviceaccounts"
	// TrafficDistributionAnnotation is the annotation form of
	// spec.trafficDistribution.
	TrafficDistributionAnnotation = "networking.istio.io/traffic-distribution"
)

// serviceInfo is a converted Service: the model service, the target port of
// each service port (for proxy targets), and what was wrong with it.
type serviceInfo struct {
	key         string
	svc         *model.Service
	targetPorts map[int]intstr.IntOrString
	problems    []string
}

func (s serviceInfo) ResourceName() string { return s.key }

func (s serviceInfo) Equals(o serviceInfo) bool {
	return s.key == o.key && s.svc.Equals(o.svc) && s.svc.ResourceVersion == o.svc.ResourceVersion &&
		maps.Equal(s.targetPorts, o.targetPorts) && slices.Equal(s.problems, o.problems)
}

// headless reports whether the service has no virtual IP and is not an alias.
func (s serviceInfo) headless() bool {
	return s.svc.Resolution == model.Passthrough
}

// ServiceHostname is the mesh name of a Kubernetes Service.
func ServiceHostname(name, namespace, domainSuffix string) string {
	return name + "." + namespace + ".svc." + domainSuffix
}

// conversionContext is what conversion needs besides the object.
type conversionContext struct {
	clusterID    string
	domainSuffix string
	trustDomain  string
}

// convertService turns a Service into its model form. It never fails: bad
// ports are dropped and listed in problems.
func convertService(svc *corev1.Service, cc conversionContext) serviceInfo {
	info := serviceInfo{key: svc.Namespace + "/" + svc.Name, targetPorts: map[int]intstr.IntOrString{}}
	out := &model.Service{
		Hostname:        ServiceHostname(svc.Name, svc.Namespace, cc.domainSuffix),
		CreationTime:    svc.CreationTimestamp.Time,
		ResourceVersion: svc.ResourceVersion,
		DefaultAddress:  model.UnspecifiedIP,
		Resolution:      model.ClientSideLB,
		ServiceAccounts: serviceAccounts(svc, cc.trustDomain),
	}
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		out.DefaultAddress = ip
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 {
			ips = []string{ip}
		}
		out.ClusterVIPs = model.AddressMap{Addresses: map[string][]string{cc.clusterID: ips}}
	}
	svcType := svc.Spec.Type
	if svcType == "" {
		svcType = corev1.ServiceTypeClusterIP
	}
	switch {
	case svcType == corev1.ServiceTypeExternalName && svc.Spec.ExternalName != "":
		out.Resolution = model.Alias
		out.MeshExternal = true
	case out.DefaultAddress == model.UnspecifiedIP:
		// headless: proxies forward to the address the caller resolved
		out.Resolution = model.Passthrough
	}
	out.Ports, info.problems = convertPorts(svc, info.targetPorts)
	out.Attributes = model.ServiceAttributes{
		ServiceRegistry:          model.Kubernetes,
		Name:                     svc.Name,
		Namespace:                svc.Namespace,
		Labels:                   svc.Labels,
		ExportTo:                 exportTo(svc.Annotations),
		LabelSelectors:           svc.Spec.Selector,
		ClusterExternalAddresses: externalAddresses(svc, cc.clusterID),
		K8sAttributes: model.K8sAttributes{
			Type:                     string(svcType),
			ExternalName:             svc.Spec.ExternalName,
			NodeLocal:                svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
			TrafficDistribution:      trafficDistribution(svc.Spec.TrafficDistribution, svc.Annotations),
			PublishNotReadyAddresses: svc.Spec.PublishNotReadyAddresses,
		},
	}
	info.svc = out
	return info
}

// convertPorts converts the ports; a port whose number is out of range or
// repeats an earlier one is dropped with a problem.
func convertPorts(svc *corev1.Service, targets map[int]intstr.IntOrString) (model.PortList, []string) {
	var problems []string
	ports := make(model.PortList, 0, len(svc.Spec.Ports))
	seen := map[int32]bool{}
	for i, p := range svc.Spec.Ports {
		switch {
		case p.Port <= 0 || p.Port > 65535:
			problems = append(problems, fmt.Sprintf("spec.ports[%d] (%q): port %d is outside 1-65535; port ignored", i, p.Name, p.Port))
			continue
		case seen[p.Port]:
			problems = append(problems, fmt.Sprintf("spec.ports[%d] (%q): port %d is declared twice; the first declaration is used", i, p.Name, p.Port))
			continue
		}
		seen[p.Port] = true
		ports = append(ports, &model.Port{
			Name:     p.Name,
			Port:     int(p.Port),
			Protocol: protocol.FromKubernetes(p.Port, p.Name, string(p.Protocol), p.AppProtocol),
		})
		targets[int(p.Port)] = p.TargetPort
	}
	return ports, problems
}

func serviceAccounts(svc *corev1.Service, trustDomain string) []string {
	out := splitList(svc.Annotations[CanonicalServiceAccountsAnnotation])
	for _, sa := range splitList(svc.Annotations[KubeServiceAccountsAnnotation]) {
		out = append(out, model.SpiffeIdentity(trustDomain, svc.Namespace, sa))
	}
	sort.Strings(out)
	return out
}

// exportTo reads networking.istio.io/exportTo (comma separated).
func exportTo(ann map[string]string) model.ExportTo {
	return model.NewExportTo(splitList(ann[annotation.NetworkingExportTo.Name])...)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func externalAddresses(svc *corev1.Service, cluster string) model.AddressMap {
	var addrs []string
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				addrs = append(addrs, in.IP)
			} else if in.Hostname != "" {
				addrs = append(addrs, in.Hostname)
			}
		}
	}
	addrs = append(addrs, svc.Spec.ExternalIPs...)
	if len(addrs) == 0 {
		return model.AddressMap{}
	}
	return model.AddressMap{Addresses: map[string][]string{cluster: addrs}}
}

func trafficDistribution(spec *string, ann map[string]string) model.TrafficDistribution {
	v := ann[TrafficDistributionAnnotation]
	if spec != nil {
		v = *spec
	}
	switch strings.ToLower(v) {
	case "preferclose", "prefersamezone":
		return model.TrafficDistributionPreferSameZone
	case "prefersamenode":
		return model.TrafficDistributionPreferSameNode
	}
	return model.TrafficDistributionAny
}
