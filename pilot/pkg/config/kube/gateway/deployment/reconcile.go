package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/inject"
)

// writeTimeout bounds one read or apply.
const writeTimeout = 30 * time.Second

// reconcile brings the objects of one Gateway in line with its rendering.
// A rendering that fails is not retried (the input must change); a write
// that fails is.
func (c *Controller) reconcile(t *term, key string) error {
	cfg := c.opts.Gateways.GetKey(key)
	if cfg == nil {
		c.report(key, nil) // deleted: the API server's garbage collector removes its objects
		return nil
	}
	gw := toGateway(*cfg)
	controller := c.controllerOf(string(gw.Spec.GatewayClassName))
	settings, ok := deployable(controller, c.opts.Env)
	if !ok {
		c.report(key, nil)
		return nil
	}
	ns := c.namespace(gw.Namespace)
	if why := skipReason(gw, ns, c.opts.Env.Revision, c.opts.ManualDeployment); why != "" {
		scope.Debugf("Gateway %s: not deployed: %s", key, why)
		c.report(key, nil)
		return nil
	}
	objs, err := c.render(t, gw, controller, settings.template, ns)
	if err != nil {
		if errors.Is(err, ErrNoConfig) {
			err = fmt.Errorf("there is no injection configuration (ConfigMap %s missing or never valid), "+
				"which holds the %s template: Istio generates nothing without it", c.opts.InjectionName, settings.template)
		}
		scope.Warnf("Gateway %s: not deployed: %v", key, err)
		c.report(key, []diag.Problem{c.problem(key, diag.Error, "its Deployment, Service and ServiceAccount are not generated: "+err.Error())})
		return nil
	}
	var problems []diag.Problem
	var errs []error
	for _, o := range objs {
		msg, err := c.sync(t, o)
		if msg != "" {
			problems = append(problems, c.problem(key, diag.Warning, msg))
		}
		if err != nil {
			errs = append(errs, err)
			if !apierrors.IsConflict(err) {
				problems = append(problems, c.problem(key, diag.Error, err.Error()))
			}
		}
	}
	c.report(key, problems)
	return errors.Join(errs...)
}

// render renders gw's objects with the current injection configuration,
// mesh config, ProxyConfigs and customization ConfigMaps.
func (c *Controller) render(t *term, gw *gatewayv1.Gateway, controller, template string, ns *corev1.Namespace) ([]*Object, error) {
	var cfg *inject.Config
	if c.opts.Injection != nil {
		cfg = c.opts.Injection()
	}
	if cfg == nil {
		return nil, ErrNoConfig
	}
	overlays, err := c.overlays(gw)
	if err != nil {
		return nil, err
	}
	mesh := c.opts.Mesh()
	var pcs *inject.ProxyConfigs
	if c.opts.ProxyConfigs != nil {
		pcs = c.opts.ProxyConfigs()
	}
	pc := inject.EffectiveProxyConfig(mesh, pcs, gw.Namespace, map[string]string{LabelGatewayName: gw.Name}, nil)
	env := c.opts.Env
	env.KubeVersion = t.kubeVersion
	return Render(Source{Gateway: gw, Controller: controller, Namespace: ns, ListenerSetListeners: c.listenerSetListeners(gw),
		Config: cfg, Mesh: mesh, ProxyConfig: pc}, env, template, overlays)
}

// sync applies o unless the cluster's object already says what o says. It
// returns a message when the object is left alone because it is not ours.
func (c *Controller) sync(t *term, o *Object) (string, error) {
	live, err := c.live(t, o)
	if err != nil {
		return "", fmt.Errorf("read %s: %v", o.Key(), err)
	}
	rv, reason := "", "new"
	if live != nil {
		m, err := meta.Accessor(live)
		if err != nil {
			return "", err
		}
		if _, ok := m.GetLabels()[LabelManaged]; !ok {
			return fmt.Sprintf("%s %s/%s exists without the label %s: it is not Istio's and is left as it is",
				o.kind.name, o.Namespace, o.Name, LabelManaged), nil
		}
		if o, err = withLegacySelector(o, live); err != nil {
			return "", err
		}
		if reason = Difference(o, live); reason == "" {
			return "", nil
		}
		rv = m.GetResourceVersion()
	}
	body, err := applyBody(o, rv)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(t.ctx, writeTimeout)
	defer cancel()
	resp, err := o.kind.apply(ctx, c.opts.Kube, o.Namespace, o.Name, body)
	if err != nil {
		applies.WithLabelValues(o.kind.name, "error").Inc()
		return "", fmt.Errorf("apply %s: %v", o.Key(), err)
	}
	applies.WithLabelValues(o.kind.name, "ok").Inc()
	t.caches[o.kind].wrote(resp)
	scope.Infof("applied %s (%s)", o.Key(), reason)
	return "", nil
}

// live is the cluster's object: the cache's (or this term's last write,
// when newer), else read from the API server (nil when there is none).
func (c *Controller) live(t *term, o *Object) (runtime.Object, error) {
	if obj := t.caches[o.kind].get(o.Namespace + "/" + o.Name); obj != nil {
		return obj, nil
	}
	ctx, cancel := context.WithTimeout(t.ctx, writeTimeout)
	defer cancel()
	obj, err := o.kind.get(ctx, c.opts.Kube, o.Namespace, o.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// applyBody is o's apply request: the object with resourceVersion set
// when it exists, so that a stale ownership check fails with a conflict.
func applyBody(o *Object, rv string) ([]byte, error) {
	if rv == "" {
		return json.Marshal(o.Raw)
	}
	top := make(map[string]any, len(o.Raw))
	for k, v := range o.Raw {
		top[k] = v
	}
	src, _ := o.Raw["metadata"].(map[string]any)
	md := make(map[string]any, len(src)+1)
	for k, v := range src {
		md[k] = v
	}
	md["resourceVersion"] = rv
	top["metadata"] = md
	return json.Marshal(top)
}

// withLegacySelector keeps the selector of a Deployment that Istio before
// 1.24 created (with the istio.io/gateway-name label): a selector cannot
// change, so Istio keeps the old one and its pod label.
func withLegacySelector(o *Object, live runtime.Object) (*Object, error) {
	d, ok := live.(*appsv1.Deployment)
	if !ok || d.Spec.Selector == nil || d.Spec.Selector.MatchLabels["istio.io/gateway-name"] == "" {
		return o, nil
	}
	b, err := json.Marshal(o.Raw)
	if err != nil {
		return nil, err
	}
	var dep appsv1.Deployment
	if err := json.Unmarshal(b, &dep); err != nil {
		return nil, err
	}
	raw := map[string]any{}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	sel, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	spec, _ := raw["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	tmeta, _ := tmpl["metadata"].(map[string]any)
	labels, _ := tmeta["labels"].(map[string]any)
	if spec == nil || labels == nil {
		return o, nil
	}
	spec["selector"] = sel
	labels["istio.io/gateway-name"] = d.Spec.Template.Labels["istio.io/gateway-name"]
	out := &Object{kind: o.kind, Name: o.Name, Namespace: o.Namespace, Raw: raw}
	if out.want, err = normalize(o.kind, raw); err != nil {
		return nil, err
	}
	return out, nil
}

// overlays are the customizations of gw: the oldest class-defaults
// ConfigMap of the system namespace, then the parametersRef ConfigMap.
func (c *Controller) overlays(gw *gatewayv1.Gateway) ([]map[string]string, error) {
	var out []map[string]string
	if cm := c.classDefaults(string(gw.Spec.GatewayClassName)); cm != nil {
		out = append(out, cm.Data)
	}
	ref := parametersRef(&gw.Spec)
	if ref == nil {
		return out, nil
	}
	if ref.Kind != "ConfigMap" || ref.Group != "" {
		return nil, fmt.Errorf("invalid parameters: unknown infrastructure parameters type %v/%v", ref.Group, ref.Kind)
	}
	cm := c.configMap(gw.Namespace, ref.Name)
	if cm == nil {
		return nil, fmt.Errorf("parametersRef targeting configmap %q, but configmap does not exist", gw.Namespace+"/"+ref.Name)
	}
	return append(out, cm.Data), nil
}

func (c *Controller) configMap(ns, name string) *corev1.ConfigMap {
	if c.opts.ConfigMaps == nil {
		return nil
	}
	o, ok, err := c.opts.ConfigMaps.GetStore().GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	cm, _ := o.(*corev1.ConfigMap)
	return cm
}

// classDefaults is the oldest ConfigMap of the system namespace labeled
// gateway.istio.io/defaults-for-class=class (by creation, then name).
func (c *Controller) classDefaults(class string) *corev1.ConfigMap {
	if c.opts.ConfigMaps == nil {
		return nil
	}
	objs, err := c.opts.ConfigMaps.GetIndexer().ByIndex(cache.NamespaceIndex, c.opts.SystemNamespace)
	if err != nil {
		objs = c.opts.ConfigMaps.GetStore().List()
	}
	var best *corev1.ConfigMap
	for _, o := range objs {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok || cm.Namespace != c.opts.SystemNamespace || cm.Labels[LabelClassDefaults] != class {
			continue
		}
		if best == nil || cm.CreationTimestamp.Before(&best.CreationTimestamp) ||
			cm.CreationTimestamp.Equal(&best.CreationTimestamp) && cm.Name < best.Name {
			best = cm
		}
	}
	return best
}

func (c *Controller) namespace(name string) *corev1.Namespace {
	if c.opts.Namespaces == nil {
		return nil
	}
	o, ok, err := c.opts.Namespaces.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	ns, _ := o.(*corev1.Namespace)
	return ns
}

// controllerOf is the controller of a class: its GatewayClass's, else the
// builtin class's of that name ("" when neither).
func (c *Controller) controllerOf(class string) string {
	if c.opts.Classes != nil {
		if gc := c.opts.Classes.GetKey(class); gc != nil {
			if spec, ok := gc.Spec.(*gatewayv1.GatewayClassSpec); ok && spec != nil {
				return string(spec.ControllerName)
			}
			return ""
		}
	}
	for _, b := range gateway.Builtins(c.opts.Env.Ambient) {
		if b.Name == class {
			return b.Controller
		}
	}
	return ""
}

// listenerSetListeners are the listeners of the ListenerSets attached to
// gw that it admits.
func (c *Controller) listenerSetListeners(gw *gatewayv1.Gateway) []gatewayv1.Listener {
	if c.opts.ListenerSets == nil {
		return nil
	}
	var out []gatewayv1.Listener
	for _, ls := range c.opts.ListenerSets.List() {
		ns, name, ok := listenerSetParent(ls)
		if !ok || ns != gw.Namespace || name != gw.Name || !listenersAllowed(gw, ls.Namespace, c.namespace) {
			continue
		}
		for _, l := range ls.Spec.(*gatewayv1.ListenerSetSpec).Listeners {
			port := l.Port
			if port == 0 && l.Protocol == gatewayv1.HTTPProtocolType {
				port = 80
			} else if port == 0 && l.Protocol == gatewayv1.HTTPSProtocolType {
				port = 443
			}
			out = append(out, gatewayv1.Listener{Name: l.Name, Hostname: l.Hostname, Port: port, Protocol: l.Protocol, TLS: l.TLS})
		}
	}
	return out
}

// toGateway is the Kubernetes form of a stored Gateway, as the templates
// read it. It shares the stored object's maps and spec: read-only.
func toGateway(c config.Config) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		TypeMeta: metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, UID: types.UID(c.UID), Labels: c.Labels,
			Annotations: c.Annotations, ResourceVersion: c.ResourceVersion, Generation: c.Generation,
			CreationTimestamp: metav1.NewTime(c.CreationTimestamp)},
		Spec: *gatewaySpec(c),
	}
}

func (c *Controller) problem(key string, sev diag.Severity, msg string) diag.Problem {
	return diag.Problem{Severity: sev, Source: ProblemSource, Subject: key, Object: "Gateway " + key, Message: msg}
}

// report replaces the problems of one Gateway.
func (c *Controller) report(key string, problems []diag.Problem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.reported[key] && len(problems) == 0 {
		return
	}
	if c.opts.Problems != nil {
		c.opts.Problems.Report(ProblemSource, key, problems)
	}
	if len(problems) == 0 {
		delete(c.reported, key)
	} else {
		c.reported[key] = true
	}
}

// clearProblems removes every problem of the term that ends: the next
// leader reports its own.
func (c *Controller) clearProblems() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.reported {
		if c.opts.Problems != nil {
			c.opts.Problems.Clear(ProblemSource, key)
		}
	}
	c.reported = map[string]bool{}
}
