package deployment

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// ownerHandler queues the Gateway that owns a generated object: its owner
// reference, else (a ServiceAccount of a cluster older than 1.28 has none)
// its gateway-name label.
func ownerHandler(q workqueue.TypedInterface[string]) cache.ResourceEventHandler {
	enqueue := func(o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		m, ok := o.(metav1.Object)
		if !ok {
			return
		}
		for _, ref := range m.GetOwnerReferences() {
			if ref.Kind == "Gateway" && strings.HasPrefix(ref.APIVersion, gatewayv1.GroupName+"/") {
				q.Add(m.GetNamespace() + "/" + ref.Name)
				return
			}
		}
		if name := m.GetLabels()[LabelGatewayName]; name != "" {
			q.Add(m.GetNamespace() + "/" + name)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) },
		DeleteFunc: enqueue,
	}
}

// watchInputs queues the Gateways each input event concerns. It returns the
// registrations to wait for and a function that removes them all.
func (c *Controller) watchInputs(t *term) ([]krt.HandlerRegistration, func()) {
	q := t.queue
	regs := []krt.HandlerRegistration{c.opts.Gateways.Register(func(e krt.Event[config.Config]) {
		if e.Event == krt.EventUpdate && !gatewayChanged(*e.Old, *e.New) {
			return // a status write
		}
		g := e.Latest()
		q.Add(g.Namespace + "/" + g.Name)
	})}
	if c.opts.Classes != nil {
		regs = append(regs, c.opts.Classes.Register(func(e krt.Event[config.Config]) {
			name := e.Latest().Name
			c.enqueueWhere(t, func(g config.Config) bool { return gatewaySpec(g).GatewayClassName == gatewayv1.ObjectName(name) })
		}))
	}
	if c.opts.ListenerSets != nil {
		regs = append(regs, c.opts.ListenerSets.Register(func(e krt.Event[config.Config]) {
			for _, ls := range e.Items() {
				if ns, name, ok := listenerSetParent(ls); ok {
					q.Add(ns + "/" + name)
				}
			}
		}))
	}
	var removes []func()
	if inf := c.opts.ConfigMaps; inf != nil {
		removes = append(removes, addHandler(inf, func(o any) { c.configMapChanged(t, o) }))
	}
	if inf := c.opts.Namespaces; inf != nil {
		removes = append(removes, addHandler(inf, func(o any) {
			if ns, ok := o.(*corev1.Namespace); ok {
				c.enqueueWhere(t, func(g config.Config) bool { return g.Namespace == ns.Name })
			}
		}))
	}
	return regs, func() {
		for _, r := range regs {
			r.UnregisterHandler()
		}
		for _, rm := range removes {
			rm()
		}
	}
}

// gatewayChanged: what Istio's controller reacts to, a new generation or
// other labels or annotations (not a status write).
func gatewayChanged(old, cur config.Config) bool {
	return old.Generation != cur.Generation || old.UID != cur.UID ||
		!maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations)
}

// configMapChanged queues the Gateways a ConfigMap customizes: those of
// its namespace naming it in parametersRef, or, for a class-defaults
// ConfigMap of the system namespace, those of the class.
func (c *Controller) configMapChanged(t *term, o any) {
	cm, ok := o.(*corev1.ConfigMap)
	if !ok {
		return
	}
	class, isDefaults := cm.Labels[LabelClassDefaults]
	c.enqueueWhere(t, func(g config.Config) bool {
		spec := gatewaySpec(g)
		if isDefaults && cm.Namespace == c.opts.SystemNamespace && string(spec.GatewayClassName) == class {
			return true
		}
		ref := parametersRef(spec)
		return ref != nil && g.Namespace == cm.Namespace && ref.Name == cm.Name
	})
}

// addHandler calls f on every add, update and delete of inf until the
// returned function removes it.
func addHandler(inf cache.SharedIndexInformer, f func(any)) func() {
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f,
		UpdateFunc: func(_, o any) { f(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			f(o)
		},
	})
	if err != nil {
		scope.Warnf("cannot watch an input: %v", err)
		return func() {}
	}
	return func() { _ = inf.RemoveEventHandler(reg) }
}

var emptySpec = &gatewayv1.GatewaySpec{}

// gatewaySpec is a stored Gateway's spec (empty when it has none).
func gatewaySpec(g config.Config) *gatewayv1.GatewaySpec {
	if s, ok := g.Spec.(*gatewayv1.GatewaySpec); ok && s != nil {
		return s
	}
	return emptySpec
}

// parametersRef is the Gateway's spec.infrastructure.parametersRef.
func parametersRef(s *gatewayv1.GatewaySpec) *gatewayv1.LocalParametersReference {
	if s.Infrastructure == nil {
		return nil
	}
	return s.Infrastructure.ParametersRef
}

// listenerSetParent is the Gateway a stored ListenerSet attaches to.
func listenerSetParent(ls config.Config) (ns, name string, ok bool) {
	spec, isLS := ls.Spec.(*gatewayv1.ListenerSetSpec)
	if !isLS || spec == nil {
		return "", "", false
	}
	ref := spec.ParentRef
	if ref.Kind != nil && *ref.Kind != "Gateway" || ref.Group != nil && *ref.Group != gatewayv1.GroupName {
		return "", "", false
	}
	ns = ls.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	return ns, string(ref.Name), true
}
