package gateway

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// NamespaceInfo, SecretData and ConfigMapData are keyed like the objects
// they describe.

// ResourceName keys a namespace by name.
func (n NamespaceInfo) ResourceName() string { return n.Name }

// SecretData is the data of a Secret.
type SecretData struct {
	Namespace, Name string
	Data            map[string][]byte
}

// ResourceName keys a Secret by namespace/name.
func (s SecretData) ResourceName() string { return s.Namespace + "/" + s.Name }

// ConfigMapData is the data of a ConfigMap.
type ConfigMapData struct {
	Namespace, Name string
	Data            map[string]string
}

// ResourceName keys a ConfigMap by namespace/name.
func (c ConfigMapData) ResourceName() string { return c.Namespace + "/" + c.Name }

// classEntry is one GatewayClass object: its class when ours, and status.
type classEntry struct {
	Name   string
	Class  *Class
	Status ObjectStatus
}

func (c classEntry) ResourceName() string { return c.Name }

func (c classEntry) Equals(o classEntry) bool {
	return c.Name == o.Name && equality.Semantic.DeepEqual(c.Class, o.Class) && c.Status.Equals(o.Status)
}

// gatewayEntry is one translated Gateway.
type gatewayEntry struct {
	Gateway types.NamespacedName
	Result  GatewayResult
	Cfg     config.Config
}

func (g gatewayEntry) ResourceName() string { return g.Gateway.String() }

func (g gatewayEntry) Equals(o gatewayEntry) bool {
	if g.Gateway != o.Gateway || g.Cfg.Generation != o.Cfg.Generation ||
		!equality.Semantic.DeepEqual(g.Result.Status, o.Result.Status) || len(g.Result.Listeners) != len(o.Result.Listeners) {
		return false
	}
	for i, l := range g.Result.Listeners {
		ol := o.Result.Listeners[i]
		if l.Valid != ol.Valid || !equality.Semantic.DeepEqual(l.Parent, ol.Parent) || !l.Config.Equals(ol.Config) {
			return false
		}
	}
	return true
}

// parentsEntry is what routes read of a Gateway: its listeners. It changes
// less often than the Gateway's status.
type parentsEntry struct {
	Gateway string
	Parents []ParentInfo
}

func (p parentsEntry) ResourceName() string { return p.Gateway }

// routeEntry is one translated route of any kind.
type routeEntry struct {
	Kind   config.GroupVersionKind
	Route  types.NamespacedName
	Gen    int64
	Result RouteResult
}

func (r routeEntry) ResourceName() string { return r.Kind.Kind + "/" + r.Route.String() }

func (r routeEntry) Equals(o routeEntry) bool {
	if r.Kind != o.Kind || r.Route != o.Route || r.Gen != o.Gen || !slices.Equal(r.Result.Attachments, o.Result.Attachments) ||
		!equality.Semantic.DeepEqual(r.Result.Status, o.Result.Status) || len(r.Result.VirtualServices) != len(o.Result.VirtualServices) {
		return false
	}
	for i, v := range r.Result.VirtualServices {
		ov := o.Result.VirtualServices[i]
		if v.Key != ov.Key || !v.Config.Equals(ov.Config) {
			return false
		}
	}
	return true
}

// baseVirtualService is one not yet merged VirtualService of a route.
type baseVirtualService struct {
	Source string // the route's entry key
	// Group is what the merge key is within: the Gateway (namespace/name),
	// or the namespace of mesh routes ("mesh/<namespace>").
	Group  string
	Key    string
	Config config.Config
}

func (b *baseVirtualService) ResourceName() string { return b.Source + "/" + b.Config.Name }

func (b *baseVirtualService) Equals(o *baseVirtualService) bool {
	return b.Source == o.Source && b.Group == o.Group && b.Key == o.Key && b.Config.Equals(o.Config)
}

// mergeGroup is a set of merge keys merged together (a Gateway's, or a
// namespace's mesh routes).
type mergeGroup struct{ Group string }

func (m mergeGroup) ResourceName() string { return m.Group }

// attachmentEntry is a route attached to a listener.
type attachmentEntry struct {
	Route string // the route's entry key
	Attachment
}

func (a *attachmentEntry) ResourceName() string {
	return a.Route + "@" + a.Gateway.String() + "/" + a.Listener
}

// krtContext answers a Context from the source's collections, recording
// what the transform read.
type krtContext struct {
	ctx krt.HandlerContext
	s   *Source
}

var _ Context = krtContext{}

func (k krtContext) Class(name string) *Class {
	e := krt.FetchOne(k.ctx, k.s.classes, krt.FilterKey(name))
	if e == nil {
		return ResolveClass(k.s.opts.Options, name, nil, false)
	}
	return ResolveClass(k.s.opts.Options, name, e.Class, true)
}

func (k krtContext) Namespaces() []NamespaceInfo { return krt.Fetch(k.ctx, k.s.in.Namespaces) }

func (k krtContext) Service(hostname, namespace string) *ServiceInfo {
	return krt.FetchOne(k.ctx, k.s.services, krt.FilterKey(namespace+"/"+hostname))
}

func (k krtContext) ServiceEntryHosts(namespace, name string) ([]string, bool) {
	se := krt.FetchOne(k.ctx, k.s.in.ServiceEntries, krt.FilterKey(namespace+"/"+name))
	if se == nil {
		return nil, false
	}
	return ServiceEntryHosts(*se), true
}

func (k krtContext) ServiceNamespaces(hostname string) []string {
	var out []string
	for _, s := range krt.Fetch(k.ctx, k.s.services, krt.FilterGeneric(func(o any) bool { return o.(ServiceInfo).Hostname == hostname })) {
		out = append(out, s.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (k krtContext) Secret(namespace, name string) (map[string][]byte, bool) {
	s := krt.FetchOne(k.ctx, k.s.in.Secrets, krt.FilterKey(namespace+"/"+name))
	if s == nil {
		return nil, false
	}
	return s.Data, true
}

func (k krtContext) ConfigMap(namespace, name string) (map[string]string, bool) {
	c := krt.FetchOne(k.ctx, k.s.in.ConfigMaps, krt.FilterKey(namespace+"/"+name))
	if c == nil {
		return nil, false
	}
	return c.Data, true
}

func (k krtContext) Allowed(from GroupKind, fromNamespace string, to GroupKind, toNamespace, toName string) bool {
	want := pairKey(from, fromNamespace, to, toNamespace)
	grants := krt.Fetch(k.ctx, k.s.grants, krt.FilterGeneric(func(o any) bool { return o.(Grant).PairKey() == want }))
	return grantsAllow(grants, toName)
}

func (k krtContext) Listeners(namespace, name string) []ParentInfo {
	e := krt.FetchOne(k.ctx, k.s.parents, krt.FilterKey(namespace+"/"+name))
	if e == nil {
		return nil
	}
	return e.Parents
}
