package gateway

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// Snapshot is every input of a translation at one moment.
type Snapshot struct {
	GatewayClasses  []config.Config
	Gateways        []config.Config
	HTTPRoutes      []config.Config
	GRPCRoutes      []config.Config
	TCPRoutes       []config.Config
	TLSRoutes       []config.Config
	ReferenceGrants []config.Config
	ServiceEntries  []config.Config
	// Services are the Kubernetes Services (ServiceFromKube).
	Services   []ServiceInfo
	Namespaces []NamespaceInfo
	// Secrets and ConfigMaps hold data by namespace/name.
	Secrets    map[string]map[string][]byte
	ConfigMaps map[string]map[string]string
}

// Output is everything a translation yields.
type Output struct {
	// Gateways are the synthetic Istio Gateways of valid listeners.
	Gateways []config.Config
	// VirtualServices are the synthetic VirtualServices (merged).
	VirtualServices []config.Config
	// Statuses are the statuses of the input objects that are ours.
	Statuses []ObjectStatus
}

// snapshotContext answers a Context from a Snapshot.
type snapshotContext struct {
	classes    map[string]*Class
	declared   map[string]bool
	nsList     []NamespaceInfo
	services   map[string]*ServiceInfo // namespace/hostname
	byHost     map[string][]string
	seHosts    map[string][]string
	grants     map[string][]Grant
	secrets    map[string]map[string][]byte
	configMaps map[string]map[string]string
	listeners  map[types.NamespacedName][]ParentInfo
	opts       Options
}

var _ Context = (*snapshotContext)(nil)

func newSnapshotContext(s Snapshot, opts Options) *snapshotContext {
	c := &snapshotContext{opts: opts, classes: map[string]*Class{}, declared: map[string]bool{},
		services: map[string]*ServiceInfo{}, byHost: map[string][]string{}, seHosts: map[string][]string{}, grants: map[string][]Grant{},
		secrets: s.Secrets, configMaps: s.ConfigMaps, listeners: map[types.NamespacedName][]ParentInfo{}}
	for _, gc := range s.GatewayClasses {
		c.declared[gc.Name] = true
		if cl, _ := ConvertClass(opts, gc); cl != nil {
			c.classes[gc.Name] = cl
		}
	}
	c.nsList = slices.SortedFunc(slices.Values(s.Namespaces), func(a, b NamespaceInfo) int { return cmp.Compare(a.Name, b.Name) })
	add := func(svc ServiceInfo) {
		k := svc.ResourceName()
		if _, dup := c.services[k]; dup {
			return
		}
		c.services[k] = &svc
		c.byHost[svc.Hostname] = append(c.byHost[svc.Hostname], svc.Namespace)
	}
	for _, svc := range s.Services {
		add(svc)
	}
	for _, se := range s.ServiceEntries {
		c.seHosts[se.Namespace+"/"+se.Name] = ServiceEntryHosts(se)
		for _, svc := range ServicesFromServiceEntry(se) {
			add(svc)
		}
	}
	for _, rg := range s.ReferenceGrants {
		for _, g := range ConvertGrant(rg) {
			c.grants[g.PairKey()] = append(c.grants[g.PairKey()], g)
		}
	}
	return c
}

func (c *snapshotContext) Class(name string) *Class {
	return ResolveClass(c.opts, name, c.classes[name], c.declared[name])
}

func (c *snapshotContext) Namespaces() []NamespaceInfo { return c.nsList }

func (c *snapshotContext) Service(hostname, namespace string) *ServiceInfo {
	return c.services[namespace+"/"+hostname]
}

func (c *snapshotContext) ServiceEntryHosts(namespace, name string) ([]string, bool) {
	h, ok := c.seHosts[namespace+"/"+name]
	return h, ok
}

func (c *snapshotContext) ServiceNamespaces(hostname string) []string {
	out := slices.Clone(c.byHost[hostname])
	slices.Sort(out)
	return slices.Compact(out)
}

func (c *snapshotContext) Secret(namespace, name string) (map[string][]byte, bool) {
	d, ok := c.secrets[namespace+"/"+name]
	return d, ok
}

func (c *snapshotContext) ConfigMap(namespace, name string) (map[string]string, bool) {
	d, ok := c.configMaps[namespace+"/"+name]
	return d, ok
}

func (c *snapshotContext) Allowed(from GroupKind, fromNamespace string, to GroupKind, toNamespace, toName string) bool {
	return grantsAllow(c.grants[pairKey(from, fromNamespace, to, toNamespace)], toName)
}

func (c *snapshotContext) Listeners(namespace, name string) []ParentInfo {
	return c.listeners[types.NamespacedName{Namespace: namespace, Name: name}]
}

// Translate translates a whole snapshot at once.
func Translate(s Snapshot, opts Options) Output {
	ctx := newSnapshotContext(s, opts)
	var out Output
	for _, gc := range s.GatewayClasses {
		if _, st := ConvertClass(opts, gc); st != nil {
			out.Statuses = append(out.Statuses, ObjectStatus{Kind: gvk.GatewayClass, Name: gc.Name, Generation: gc.Generation, Status: st})
		}
	}
	gateways := map[types.NamespacedName]GatewayResult{}
	for _, gw := range s.Gateways {
		res := ConvertGateway(ctx, opts, gw)
		nn := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		gateways[nn] = res
		for _, l := range res.Listeners {
			ctx.listeners[nn] = append(ctx.listeners[nn], l.Parent)
			if l.Valid {
				out.Gateways = append(out.Gateways, l.Config)
			}
		}
	}
	attached := map[types.NamespacedName][]Attachment{}
	merge := map[string][]config.Config{}
	var keys []string
	for _, routes := range []struct {
		kind config.GroupVersionKind
		cfgs []config.Config
	}{{gvk.HTTPRoute, s.HTTPRoutes}, {gvk.GRPCRoute, s.GRPCRoutes}, {gvk.TCPRoute, s.TCPRoutes}, {gvk.TLSRoute, s.TLSRoutes}} {
		for _, r := range routes.cfgs {
			res := ConvertRoute(ctx, opts, r)
			out.Statuses = append(out.Statuses, ObjectStatus{Kind: routes.kind, Namespace: r.Namespace, Name: r.Name,
				Generation: r.Generation, Status: RouteStatusObject(routes.kind, res.Status)})
			for _, a := range res.Attachments {
				attached[a.Gateway] = append(attached[a.Gateway], a)
			}
			for _, vs := range res.VirtualServices {
				if vs.Key == "" {
					out.VirtualServices = append(out.VirtualServices, vs.Config)
					continue
				}
				if _, seen := merge[vs.Key]; !seen {
					keys = append(keys, vs.Key)
				}
				merge[vs.Key] = append(merge[vs.Key], vs.Config)
			}
		}
	}
	for _, k := range keys {
		out.VirtualServices = append(out.VirtualServices, MergeVirtualServices(k, merge[k]))
	}
	for _, gw := range s.Gateways {
		nn := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		if st := FinalizeGatewayStatus(gateways[nn].Status, attached[nn]); st != nil {
			out.Statuses = append(out.Statuses, ObjectStatus{Kind: gvk.KubernetesGateway, Namespace: gw.Namespace, Name: gw.Name,
				Generation: gw.Generation, Status: st})
		}
	}
	sortByCreation(out.Gateways)
	sortByCreation(out.VirtualServices)
	sortStatuses(out.Statuses)
	return out
}

var statusKindOrder = map[string]int{"GatewayClass": 0, "Gateway": 1, "HTTPRoute": 2, "GRPCRoute": 3, "TLSRoute": 4, "TCPRoute": 5}

// sortStatuses orders statuses by kind (classes, Gateways, routes), then
// namespace and name.
func sortStatuses(ss []ObjectStatus) {
	slices.SortStableFunc(ss, func(a, b ObjectStatus) int {
		if c := cmp.Compare(statusKindOrder[a.Kind.Kind], statusKindOrder[b.Kind.Kind]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}
