package differential

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// parseObjects decodes the YAML (or JSON) documents of a case.
func parseObjects(docs string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(docs)), 64<<10)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("objects: %v", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("objects: a document without apiVersion, kind or metadata.name: %v", u.Object)
		}
		out = append(out, u)
	}
}

// protectedNamespaces exist before any case and hold what the control
// planes keep there: a case's objects in them are deleted one by one,
// never swept.
var protectedNamespaces = map[string]bool{
	istiodNamespace: true, "default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true,
}

// objRef names an object the harness created.
type objRef struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

// world is one plane's API server as a case sees it: what the case made
// there, to be removed when it ends.
type world struct {
	p       *plane
	mapper  meta.ResettableRESTMapper
	created []objRef
	// keepClusterIPs creates Services with the cluster IPs they declare
	// (the remote clusters', see multicluster.go), rather than leaving
	// them to the API server
	keepClusterIPs bool
	// namespaces are the case's namespaces outside protectedNamespaces,
	// swept when it ends
	namespaces []string
}

func newWorld(p *plane) *world {
	dc := memory.NewMemCacheClient(p.kube.Kube.Discovery())
	return &world{p: p, mapper: restmapper.NewDeferredDiscoveryRESTMapper(dc)}
}

func (w *world) mapping(u *unstructured.Unstructured) (*meta.RESTMapping, error) {
	gvk := u.GroupVersionKind()
	m, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		w.mapper.Reset()
		m, err = w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", gvk, err)
	}
	return m, nil
}

// apply creates the objects: namespaces first (every namespace an object
// names, declared or not), then the rest in the order given, then the
// EndpointSlices the objects imply (autoEndpointSlices). Services get
// their cluster IP from the API server (spec.clusterIP other than None is
// dropped: the two servers allocate on their own, and the snapshots name
// cluster IPs by their Service, see normalise; a remote cluster's world
// keeps them, see keepClusterIPs); a Service's declared status (a load
// balancer's ingress) is written after creation; Pods get their status
// (status.podIP at least) written after creation, as a kubelet would,
// and spec.serviceAccountName "default" when they name none, as a real
// cluster's admission gives them.
func (w *world) apply(ctx context.Context, objs []*unstructured.Unstructured, autoEndpoints bool) error {
	namespaces := map[string]*unstructured.Unstructured{}
	var order []string
	addNS := func(name string, u *unstructured.Unstructured) {
		if _, ok := namespaces[name]; !ok {
			order = append(order, name)
		}
		if u != nil || namespaces[name] == nil {
			namespaces[name] = u
		}
	}
	for _, u := range objs {
		if u.GetKind() == "Namespace" && u.GetAPIVersion() == "v1" {
			addNS(u.GetName(), u)
		} else if ns := u.GetNamespace(); ns != "" {
			addNS(ns, nil)
		}
	}
	for _, name := range order {
		if err := w.ensureNamespace(ctx, name, namespaces[name]); err != nil {
			return err
		}
	}
	rest := slices.DeleteFunc(slices.Clone(objs), func(u *unstructured.Unstructured) bool {
		return u.GetKind() == "Namespace" && u.GetAPIVersion() == "v1"
	})
	if autoEndpoints {
		slicesFor, err := autoEndpointSlices(objs)
		if err != nil {
			return err
		}
		rest = append(rest, slicesFor...)
	}
	for _, u := range inTieOrder(rest) {
		if err := w.create(ctx, u.DeepCopy()); err != nil {
			return err
		}
	}
	return nil
}

// ensureNamespace creates a namespace, or gives an existing one the
// labels and annotations declared (a namespace of an earlier case stays,
// empty: without a namespace controller a deletion never completes).
func (w *world) ensureNamespace(ctx context.Context, name string, decl *unstructured.Unstructured) error {
	if !protectedNamespaces[name] {
		w.namespaces = append(w.namespaces, name)
	}
	client := w.p.kube.Kube.CoreV1().Namespaces()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if decl != nil {
		ns.Labels, ns.Annotations = decl.GetLabels(), decl.GetAnnotations()
	}
	_, err := client.Create(ctx, ns, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("namespace %s: %v", name, err)
		}
		return nil
	}
	if decl == nil {
		return nil
	}
	cur, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cur.Labels, cur.Annotations = ns.Labels, ns.Annotations
	_, err = client.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

func (w *world) create(ctx context.Context, u *unstructured.Unstructured) error {
	m, err := w.mapping(u)
	if err != nil {
		return err
	}
	status, hasStatus, _ := unstructured.NestedMap(u.Object, "status")
	if u.GetKind() == "Pod" && u.GetAPIVersion() == "v1" {
		// the ServiceAccount admission plugin of a real cluster does this;
		// the test API server runs without it
		if sa, _, _ := unstructured.NestedString(u.Object, "spec", "serviceAccountName"); sa == "" {
			_ = unstructured.SetNestedField(u.Object, "default", "spec", "serviceAccountName")
		}
	}
	if u.GetKind() == "Service" && u.GetAPIVersion() == "v1" {
		if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != "None" && !w.keepClusterIPs {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		}
	}
	ri := w.p.dynamic.Resource(m.Resource)
	var created *unstructured.Unstructured
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		created, err = ri.Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	} else {
		created, err = ri.Create(ctx, u, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating %s %s: %v", u.GetKind(), key(u), err)
	}
	w.created = append(w.created, objRef{gvr: m.Resource, namespace: created.GetNamespace(), name: created.GetName()})
	if u.GetKind() == "Service" && u.GetAPIVersion() == "v1" && hasStatus {
		// a load balancer controller's address, such as an east-west
		// gateway's
		if err := unstructured.SetNestedMap(created.Object, status, "status"); err != nil {
			return err
		}
		if _, err := ri.Namespace(created.GetNamespace()).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("service %s status: %v", key(u), err)
		}
	}
	if u.GetKind() == "Pod" && u.GetAPIVersion() == "v1" {
		if !hasStatus {
			return fmt.Errorf("pod %s: no status (status.podIP is needed: no kubelet assigns one)", key(u))
		}
		if err := unstructured.SetNestedMap(created.Object, podStatus(status), "status"); err != nil {
			return err
		}
		if _, err := ri.Namespace(created.GetNamespace()).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("pod %s status: %v", key(u), err)
		}
	}
	return nil
}

func key(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// podStatus completes a Pod's declared status as a kubelet would write it
// for a running, ready pod: phase Running, podIPs from podIP, conditions
// Ready, ContainersReady, Initialized and PodScheduled true. What is
// declared wins.
func podStatus(declared map[string]any) map[string]any {
	s := runtime.DeepCopyJSON(declared)
	if _, ok := s["phase"]; !ok {
		s["phase"] = "Running"
	}
	if ip, ok := s["podIP"].(string); ok && s["podIPs"] == nil {
		s["podIPs"] = []any{map[string]any{"ip": ip}}
	}
	if _, ok := s["conditions"]; !ok {
		var conds []any
		for _, c := range []string{"Initialized", "Ready", "ContainersReady", "PodScheduled"} {
			conds = append(conds, map[string]any{"type": c, "status": "True"})
		}
		s["conditions"] = conds
	}
	return s
}

// autoEndpointSlices are the EndpointSlices the EndpointSlice controller
// would write for the objects: for each Service with a selector and no
// EndpointSlice among the objects, one slice <service>-auto holding the
// selected Pods of the objects that have an IP (ready as their Ready
// condition says), with the Service's ports resolved against the first
// selected Pod's container ports.
func autoEndpointSlices(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var pods []*corev1.Pod
	hasSlice := map[string]bool{}
	var services []*corev1.Service
	for _, u := range objs {
		switch {
		case u.GetAPIVersion() == "v1" && u.GetKind() == "Pod":
			p := &corev1.Pod{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
				return nil, fmt.Errorf("pod %s: %v", key(u), err)
			}
			pods = append(pods, p)
		case u.GetAPIVersion() == "v1" && u.GetKind() == "Service":
			s := &corev1.Service{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
				return nil, fmt.Errorf("service %s: %v", key(u), err)
			}
			services = append(services, s)
		case u.GetKind() == "EndpointSlice":
			hasSlice[u.GetNamespace()+"/"+u.GetLabels()[discoveryv1.LabelServiceName]] = true
		}
	}
	var out []*unstructured.Unstructured
	for _, s := range services {
		if len(s.Spec.Selector) == 0 || s.Spec.Type == corev1.ServiceTypeExternalName || hasSlice[s.Namespace+"/"+s.Name] {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		var selected []*corev1.Pod
		for _, p := range pods {
			if p.Namespace == s.Namespace && sel.Matches(labels.Set(p.Labels)) && p.Status.PodIP != "" {
				selected = append(selected, p)
			}
		}
		es := &discoveryv1.EndpointSlice{
			TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			ObjectMeta:  metav1.ObjectMeta{Name: s.Name + "-auto", Namespace: s.Namespace, Labels: map[string]string{discoveryv1.LabelServiceName: s.Name}},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
		for _, sp := range s.Spec.Ports {
			name, proto := sp.Name, sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			port := targetPort(sp, selected)
			es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &port, AppProtocol: sp.AppProtocol})
		}
		for _, p := range selected {
			ready := podReady(p)
			ep := discoveryv1.Endpoint{
				Addresses:  []string{p.Status.PodIP},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &ready},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: p.Name, Namespace: p.Namespace},
			}
			if p.Spec.NodeName != "" {
				n := p.Spec.NodeName
				ep.NodeName = &n
			}
			es.Endpoints = append(es.Endpoints, ep)
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(es)
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

// podReady reads the declared Ready condition; a pod that declares none
// is ready (podStatus writes it so).
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return true
}

// targetPort resolves a Service port's target: a number, or the named
// container port of the first selected pod that has it (the port itself
// when none has).
func targetPort(sp corev1.ServicePort, pods []*corev1.Pod) int32 {
	tp := sp.TargetPort
	switch {
	case tp.Type == intstr.Int && tp.IntVal != 0:
		return tp.IntVal
	case tp.Type == intstr.String && tp.StrVal != "":
		for _, p := range pods {
			for _, c := range p.Spec.Containers {
				for _, cp := range c.Ports {
					if cp.Name == tp.StrVal {
						return cp.ContainerPort
					}
				}
			}
		}
	}
	return sp.Port
}

// cleanup removes what the case made: the objects it created, newest
// first, then everything left in its own namespaces (what the control
// planes generated for it, such as a Gateway API gateway's Deployment
// and Service), twice, as a controller may recreate an object while its
// owner is still being deleted. Namespaces stay.
func (w *world) cleanup(ctx context.Context) error {
	var errs []error
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	for i := len(w.created) - 1; i >= 0; i-- {
		r := w.created[i]
		ri := w.p.dynamic.Resource(r.gvr)
		var err error
		if r.namespace != "" {
			err = ri.Namespace(r.namespace).Delete(ctx, r.name, now)
		} else {
			err = ri.Delete(ctx, r.name, now)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %v", r.gvr.Resource, r.namespace, r.name, err))
		}
	}
	w.created = nil
	if len(w.namespaces) > 0 {
		resources, err := sweepable(w)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		for range 2 {
			for _, ns := range w.namespaces {
				for _, gvr := range resources {
					err := w.p.dynamic.Resource(gvr).Namespace(ns).DeleteCollection(ctx, now, metav1.ListOptions{})
					if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
						errs = append(errs, fmt.Errorf("sweeping %s of %s: %v", gvr.Resource, ns, err))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// sweepable lists the namespaced resources a namespace sweep deletes:
// those that can be listed and deleted as a collection, events aside.
func sweepable(w *world) ([]schema.GroupVersionResource, error) {
	lists, err := w.p.kube.Kube.Discovery().ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || r.Name == "events" ||
				!slices.Contains(r.Verbs, "deletecollection") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			out = append(out, gv.WithResource(r.Name))
		}
	}
	return out, nil
}
