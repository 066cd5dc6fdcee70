package gateway

import (
	"strings"

	istio "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pilot/pkg/config/storeview"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// Inputs are the collections a Source translates. Config collections hold
// the objects of a config store (nil: none); the others describe the
// cluster (nil: empty).
type Inputs struct {
	GatewayClasses  krt.Collection[config.Config]
	Gateways        krt.Collection[config.Config]
	HTTPRoutes      krt.Collection[config.Config]
	GRPCRoutes      krt.Collection[config.Config]
	TCPRoutes       krt.Collection[config.Config]
	TLSRoutes       krt.Collection[config.Config]
	ReferenceGrants krt.Collection[config.Config]
	ServiceEntries  krt.Collection[config.Config]
	// Services are the Kubernetes Services with their endpoints.
	Services   krt.Collection[ServiceInfo]
	Namespaces krt.Collection[NamespaceInfo]
	Secrets    krt.Collection[SecretData]
	ConfigMaps krt.Collection[ConfigMapData]
}

// SourceOptions configure a Source.
type SourceOptions struct {
	Options
	// Stop ends the source's collections.
	Stop <-chan struct{}
	// Krt registers the collections for /debug/krtz (may be nil).
	Krt *krt.DebugHandler
	// Problems receives what the statuses report as wrong, per object
	// (may be nil).
	Problems *diag.Board
}

// Source is the Gateway API synthetic config store: a read-only
// aggregate.CollectionStore of the synthetic Istio Gateways and
// VirtualServices, kept by krt collections that recompute only what an
// input change touches. It also holds the status every input should carry.
type Source struct {
	*storeview.View
	opts SourceOptions
	in   Inputs

	classes  krt.Collection[classEntry]
	grants   krt.Collection[Grant]
	services krt.Collection[ServiceInfo]
	gateways krt.Collection[gatewayEntry]
	parents  krt.Collection[parentsEntry]
	routes   krt.Collection[routeEntry]

	gatewayConfigs  krt.Collection[config.Config]
	virtualServices krt.Collection[config.Config]
	statuses        krt.Collection[ObjectStatus]
	problems        krt.HandlerRegistration
}

var _ model.ConfigStoreController = (*Source)(nil)

// NewSource builds the collections over in.
func NewSource(in Inputs, opts SourceOptions) *Source {
	s := &Source{View: storeview.New(), opts: opts, in: withDefaults(in, opts)}
	in = s.in
	s.classes = krt.NewCollection(in.GatewayClasses, func(_ krt.HandlerContext, c config.Config) *classEntry {
		class, st := ConvertClass(opts.Options, c)
		e := &classEntry{Name: c.Name, Class: class}
		if st != nil {
			e.Status = ObjectStatus{Kind: gvk.GatewayClass, Name: c.Name, Generation: c.Generation, Status: st}
		}
		return e
	}, s.krtOpts("classes")...)
	s.grants = krt.NewManyCollection(in.ReferenceGrants, func(_ krt.HandlerContext, c config.Config) []Grant {
		return ConvertGrant(c)
	}, s.krtOpts("grants")...)
	seServices := krt.NewManyCollection(in.ServiceEntries, func(_ krt.HandlerContext, c config.Config) []ServiceInfo {
		return ServicesFromServiceEntry(c)
	}, s.krtOpts("serviceentry-services")...)
	// Kubernetes Services first: they win a namespace/hostname both define
	s.services = krt.JoinCollection([]krt.Collection[ServiceInfo]{in.Services, seServices}, s.krtOpts("services")...)
	s.gateways = krt.NewCollection(in.Gateways, func(ctx krt.HandlerContext, c config.Config) *gatewayEntry {
		res := ConvertGateway(krtContext{ctx: ctx, s: s}, opts.Options, c)
		return &gatewayEntry{Gateway: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, Result: res, Cfg: c}
	}, s.krtOpts("gateways")...)
	s.parents = krt.NewCollection(s.gateways, func(_ krt.HandlerContext, g gatewayEntry) *parentsEntry {
		e := &parentsEntry{Gateway: g.Gateway.String()}
		for _, l := range g.Result.Listeners {
			e.Parents = append(e.Parents, l.Parent)
		}
		return e
	}, s.krtOpts("gateway-listeners")...)
	s.gatewayConfigs = krt.NewManyCollection(s.gateways, func(_ krt.HandlerContext, g gatewayEntry) []config.Config {
		var out []config.Config
		for _, l := range g.Result.Listeners {
			if l.Valid {
				out = append(out, l.Config)
			}
		}
		return out
	}, s.krtOpts("synthetic-gateways")...)
	s.routes = krt.JoinCollection([]krt.Collection[routeEntry]{
		s.routeCollection(gvk.HTTPRoute, in.HTTPRoutes), s.routeCollection(gvk.GRPCRoute, in.GRPCRoutes),
		s.routeCollection(gvk.TCPRoute, in.TCPRoutes), s.routeCollection(gvk.TLSRoute, in.TLSRoutes),
	}, s.krtOpts("routes")...)
	s.virtualServices = s.buildVirtualServices()
	s.statuses = s.buildStatuses()
	s.Add(gvk.Gateway, s.gatewayConfigs)
	s.Add(gvk.VirtualService, s.virtualServices)
	if opts.Problems != nil {
		// the registration ends with the statuses' stop channel
		s.problems = reportProblems(s.statuses, opts.Problems)
	}
	return s
}

func (s *Source) krtOpts(name string) []krt.CollectionOption { return s.opts.krtOpts(name) }

// krtOpts are the options of the collection name.
func (o SourceOptions) krtOpts(name string) []krt.CollectionOption {
	out := []krt.CollectionOption{krt.WithName("gateway-api/" + name)}
	if o.Stop != nil {
		out = append(out, krt.WithStop(o.Stop))
	}
	if o.Krt != nil {
		out = append(out, krt.WithDebugging(o.Krt))
	}
	return out
}

// withDefaults gives every missing input an empty collection.
func withDefaults(in Inputs, opts SourceOptions) Inputs {
	empty := func(c *krt.Collection[config.Config]) {
		if *c == nil {
			*c = krt.NewStaticCollection[config.Config](nil, krt.WithStop(opts.Stop))
		}
	}
	for _, c := range []*krt.Collection[config.Config]{&in.GatewayClasses, &in.Gateways, &in.HTTPRoutes, &in.GRPCRoutes,
		&in.TCPRoutes, &in.TLSRoutes, &in.ReferenceGrants, &in.ServiceEntries} {
		empty(c)
	}
	if in.Services == nil {
		in.Services = krt.NewStaticCollection[ServiceInfo](nil)
	}
	if in.Namespaces == nil {
		in.Namespaces = krt.NewStaticCollection[NamespaceInfo](nil)
	}
	if in.Secrets == nil {
		in.Secrets = krt.NewStaticCollection[SecretData](nil)
	}
	if in.ConfigMaps == nil {
		in.ConfigMaps = krt.NewStaticCollection[ConfigMapData](nil)
	}
	return in
}

func (s *Source) routeCollection(kind config.GroupVersionKind, c krt.Collection[config.Config]) krt.Collection[routeEntry] {
	return krt.NewCollection(c, func(ctx krt.HandlerContext, r config.Config) *routeEntry {
		return &routeEntry{Kind: kind, Route: types.NamespacedName{Namespace: r.Namespace, Name: r.Name}, Gen: r.Generation,
			Result: ConvertRoute(krtContext{ctx: ctx, s: s}, s.opts.Options, r)}
	}, s.krtOpts(kind.Kind)...)
}

// buildVirtualServices merges the HTTP and gRPC VirtualServices by key and
// joins the TCP and TLS ones.
func (s *Source) buildVirtualServices() krt.Collection[config.Config] {
	// pointers: the merge scans these, and must not copy them
	base := krt.NewManyCollection(s.routes, func(_ krt.HandlerContext, r routeEntry) []*baseVirtualService {
		var out []*baseVirtualService
		for _, vs := range r.Result.VirtualServices {
			if vs.Key != "" {
				out = append(out, &baseVirtualService{Source: r.ResourceName(), Group: mergeGroupOf(vs), Key: vs.Key, Config: vs.Config})
			}
		}
		return out
	}, s.krtOpts("base-virtualservices")...)
	groups := krt.NewManyCollection(base, func(_ krt.HandlerContext, b *baseVirtualService) []mergeGroup {
		return []mergeGroup{{Group: b.Group}}
	}, s.krtOpts("merge-groups")...)
	// merging by group rather than by key: a fetch per Gateway, not per key
	merged := krt.NewManyCollection(groups, func(ctx krt.HandlerContext, g mergeGroup) []config.Config {
		parts := krt.Fetch(ctx, base, krt.FilterGeneric(func(o any) bool { return o.(*baseVirtualService).Group == g.Group }))
		byKey := map[string][]config.Config{}
		var keys []string
		for _, p := range parts {
			if _, seen := byKey[p.Key]; !seen {
				keys = append(keys, p.Key)
			}
			byKey[p.Key] = append(byKey[p.Key], p.Config)
		}
		out := make([]config.Config, 0, len(keys))
		for _, k := range keys {
			out = append(out, MergeVirtualServices(k, byKey[k]))
		}
		return out
	}, s.krtOpts("merged-virtualservices")...)
	l4 := krt.NewManyCollection(s.routes, func(_ krt.HandlerContext, r routeEntry) []config.Config {
		var out []config.Config
		for _, vs := range r.Result.VirtualServices {
			if vs.Key == "" {
				out = append(out, vs.Config)
			}
		}
		return out
	}, s.krtOpts("l4-virtualservices")...)
	return krt.JoinCollection([]krt.Collection[config.Config]{merged, l4}, s.krtOpts("virtualservices")...)
}

// mergeGroupOf is the group a merge key belongs to: the Gateway of a
// listener's VirtualService, the namespace of a mesh one.
func mergeGroupOf(vs KeyedVirtualService) string {
	spec, _ := vs.Config.Spec.(*istio.VirtualService)
	if gws := spec.GetGateways(); len(gws) == 1 && gws[0] != meshName {
		ns, name, _ := strings.Cut(gws[0], "/")
		gw, _, _ := strings.Cut(name, "~")
		return ns + "/" + gw
	}
	return meshName + "/" + vs.Config.Namespace
}

// buildStatuses is the status of every input that is ours: classes, routes,
// and Gateways with their listeners' attached routes counted.
func (s *Source) buildStatuses() krt.Collection[ObjectStatus] {
	classes := krt.NewCollection(s.classes, func(_ krt.HandlerContext, c classEntry) *ObjectStatus {
		if c.Status.Status == nil {
			return nil
		}
		st := c.Status
		return &st
	}, s.krtOpts("class-status")...)
	attached := krt.NewManyCollection(s.routes, func(_ krt.HandlerContext, r routeEntry) []*attachmentEntry {
		out := make([]*attachmentEntry, 0, len(r.Result.Attachments))
		for _, a := range r.Result.Attachments {
			out = append(out, &attachmentEntry{Route: r.ResourceName(), Attachment: a})
		}
		return out
	}, s.krtOpts("attachments")...)
	gateways := krt.NewCollection(s.gateways, func(ctx krt.HandlerContext, g gatewayEntry) *ObjectStatus {
		if g.Result.Status == nil {
			return nil
		}
		var as []Attachment
		for _, a := range krt.Fetch(ctx, attached, krt.FilterGeneric(func(o any) bool { return o.(*attachmentEntry).Gateway == g.Gateway })) {
			as = append(as, a.Attachment)
		}
		return &ObjectStatus{Kind: gvk.KubernetesGateway, Namespace: g.Gateway.Namespace, Name: g.Gateway.Name,
			Generation: g.Cfg.Generation, Status: FinalizeGatewayStatus(g.Result.Status, as)}
	}, s.krtOpts("gateway-status")...)
	routes := krt.MapCollection(s.routes, func(r routeEntry) ObjectStatus {
		return ObjectStatus{Kind: r.Kind, Namespace: r.Route.Namespace, Name: r.Route.Name, Generation: r.Gen,
			Status: RouteStatusObject(r.Kind, r.Result.Status)}
	}, s.krtOpts("route-status")...)
	return krt.JoinCollection([]krt.Collection[ObjectStatus]{classes, gateways, routes}, s.krtOpts("statuses")...)
}

// Statuses is the status each input object should carry, keyed by
// ObjectStatus.ResourceName. Values are shared: read-only.
func (s *Source) Statuses() krt.Collection[ObjectStatus] { return s.statuses }

// Schemas are the synthetic kinds.
func (s *Source) Schemas() collection.Schemas {
	return collection.NewSchemasBuilder().MustAdd(collections.Gateway).MustAdd(collections.VirtualService).Build()
}

// Create is not supported: the objects are derived.
func (s *Source) Create(config.Config) (string, error) { return "", model.ErrNotWritable }

// Update is not supported.
func (s *Source) Update(config.Config) (string, error) { return "", model.ErrNotWritable }

// UpdateStatus is not supported.
func (s *Source) UpdateStatus(config.Config) (string, error) { return "", model.ErrNotWritable }

// Patch is not supported.
func (s *Source) Patch(config.Config, model.PatchFunc) (string, error) {
	return "", model.ErrNotWritable
}

// Delete is not supported.
func (s *Source) Delete(config.GroupVersionKind, string, string, *string) error {
	return model.ErrNotWritable
}

// Run returns when stop closes: the collections run on their own.
func (s *Source) Run(stop <-chan struct{}) { <-stop }

// HasSynced reports whether the synthetic objects and statuses reflect the
// inputs' initial state.
func (s *Source) HasSynced() bool {
	return s.gatewayConfigs.HasSynced() && s.virtualServices.HasSynced() && s.statuses.HasSynced() &&
		(s.problems == nil || s.problems.HasSynced())
}

// Output is the source's current content in Translate's order.
func (s *Source) Output() Output {
	out := Output{Gateways: s.gatewayConfigs.List(), VirtualServices: s.virtualServices.List(), Statuses: s.statuses.List()}
	sortByCreation(out.Gateways)
	sortByCreation(out.VirtualServices)
	sortStatuses(out.Statuses)
	return out
}
