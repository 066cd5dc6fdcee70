package ambient

import (
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

// NamespaceFilter tells which namespaces the control plane reads (the
// mesh config's discoverySelectors) and calls its handlers when that
// changes; the Kubernetes registry's filter.
type NamespaceFilter interface {
	Filter(ns string) bool
	AddHandler(func())
}

// filterGeneration counts the filter's changes: the transforms that apply
// the filter fetch it, so a change recomputes them.
type filterGeneration struct{ N uint64 }

// selectNamespaces narrows the index's Kubernetes inputs (Pods, Services,
// EndpointSlices) to the namespaces f selects, as Istio's ambient index
// reads its informers through the discovery filter: ztunnel is sent
// nothing of the other namespaces. The config collections come from the
// config store, which applies the same filter.
func (x *Index) selectNamespaces(in Inputs, f NamespaceFilter) Inputs {
	var n atomic.Uint64
	gen := krt.NewStatic(&filterGeneration{}, x.krtOpts("ambient/namespace-filter")...)
	f.AddHandler(func() { gen.Set(&filterGeneration{N: n.Add(1)}) })
	in.Pods = selected(in.Pods, gen, f, func(p *corev1.Pod) string { return p.Namespace }, x.krtOpts("ambient/selected-pods"))
	in.Services = selected(in.Services, gen, f, func(s *corev1.Service) string { return s.Namespace }, x.krtOpts("ambient/selected-services"))
	in.EndpointSlices = selected(in.EndpointSlices, gen, f, func(s *discoveryv1.EndpointSlice) string { return s.Namespace },
		x.krtOpts("ambient/selected-endpointslices"))
	return in
}

func selected[T any](c krt.Collection[T], gen krt.StaticSingleton[filterGeneration], f NamespaceFilter, ns func(T) string,
	opts []krt.CollectionOption,
) krt.Collection[T] {
	return krt.NewCollection(c, func(ctx krt.HandlerContext, o T) *T {
		krt.FetchOne(ctx, gen.AsCollection())
		if !f.Filter(ns(o)) {
			return nil
		}
		return &o
	}, opts...)
}
