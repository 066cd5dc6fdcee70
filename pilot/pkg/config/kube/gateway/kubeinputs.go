package gateway

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// AddKubeInputs fills the cluster inputs of in (Services with their
// EndpointSlices, Namespaces, Secrets, ConfigMaps) from the client's shared
// informers, which the client's Start starts.
func AddKubeInputs(in *Inputs, client kube.Client, opts SourceOptions) error {
	s := opts
	services, err := informer[*corev1.Service](client, gvr.Service, s, "informer/Services")
	if err != nil {
		return err
	}
	slices, err := informer[*discoveryv1.EndpointSlice](client, gvr.EndpointSlice, s, "informer/EndpointSlices")
	if err != nil {
		return err
	}
	namespaces, err := informer[*corev1.Namespace](client, gvr.Namespace, s, "informer/Namespaces")
	if err != nil {
		return err
	}
	secrets, err := informer[*corev1.Secret](client, gvr.Secret, s, "informer/Secrets")
	if err != nil {
		return err
	}
	configMaps, err := informer[*corev1.ConfigMap](client, gvr.ConfigMap, s, "informer/ConfigMaps")
	if err != nil {
		return err
	}
	domain := opts.DomainSuffix
	in.Services = krt.NewCollection(services, func(ctx krt.HandlerContext, svc *corev1.Service) *ServiceInfo {
		eps := krt.Fetch(ctx, slices, krt.FilterNamespace(svc.Namespace),
			krt.FilterLabel(map[string]string{discoveryv1.LabelServiceName: svc.Name}))
		info := ServiceFromKube(svc, eps, domain)
		return &info
	}, s.krtOpts("kube-services")...)
	in.Namespaces = krt.MapCollection(namespaces, func(ns *corev1.Namespace) NamespaceInfo {
		return NamespaceInfo{Name: ns.Name, Labels: ns.Labels}
	}, s.krtOpts("namespaces")...)
	in.Secrets = krt.MapCollection(secrets, func(sec *corev1.Secret) SecretData {
		return SecretData{Namespace: sec.Namespace, Name: sec.Name, Data: sec.Data}
	}, s.krtOpts("secrets")...)
	in.ConfigMaps = krt.MapCollection(configMaps, func(cm *corev1.ConfigMap) ConfigMapData {
		return ConfigMapData{Namespace: cm.Namespace, Name: cm.Name, Data: cm.Data}
	}, s.krtOpts("configmaps")...)
	return nil
}

func informer[T any](client kube.Client, res schema.GroupVersionResource, s SourceOptions, name string) (krt.Collection[T], error) {
	inf, err := client.Informer(res)
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %v", name, err)
	}
	return krt.WrapClient[T](inf, s.krtOpts(name)...), nil
}
