package model

import (
	"fmt"
	"slices"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// This file is the registry of PushContext indexes. Each index names the
// config kinds it reads (a change of one rebuilds it) and the indexes it
// reads while building (a rebuilt dependency rebuilds it too). The registry
// is in dependency order; InitContext walks it once.

// index is one independent part of a PushContext. Once built it is never
// modified, so a later PushContext may share it.
type index interface {
	problems() []problem
}

// indexBase carries what every index reports while building.
type indexBase struct {
	found []problem
}

func (b *indexBase) problems() []problem { return b.found }

func (b *indexBase) addProblem(metric, key, format string, args ...any) {
	b.found = append(b.found, problem{metric: metric, key: key, message: fmt.Sprintf(format, args...)})
}

// problem is a conflict or a dangling reference found while building.
type problem struct {
	metric, key, message string
}

// indexSpec describes one index.
type indexSpec struct {
	name string
	// kinds are the config kinds the index reads; a changed key of one of
	// them rebuilds it. The build may list no other kind.
	kinds []kind.Kind
	// deps are the indexes the build reads (built before it).
	deps  []string
	build func(bc *buildContext) index
	get   func(p *PushContext) index
	set   func(p *PushContext, x index)
}

// gatewayAPIKinds are the Gateway API kinds the control plane translates
// into Gateways, VirtualServices and DestinationRules: a change of one
// rebuilds the indexes of the translated kinds.
var gatewayAPIKinds = []kind.Kind{
	kind.KubernetesGateway, kind.GatewayClass, kind.HTTPRoute, kind.GRPCRoute, kind.TCPRoute,
	kind.TLSRoute, kind.UDPRoute, kind.ReferenceGrant, kind.ListenerSet, kind.BackendTLSPolicy,
	kind.XBackendTrafficPolicy,
}

// fullRebuildKinds change everything an index may derive: their keys force
// a full rebuild.
var fullRebuildKinds = []kind.Kind{kind.MeshConfig, kind.MeshNetworks}

func withGatewayAPI(ks ...kind.Kind) []kind.Kind { return append(ks, gatewayAPIKinds...) }

// Index names, as /debug/pushz shows them.
const (
	IndexServices               = "services"
	IndexVirtualServices        = "virtualServices"
	IndexDestinationRules       = "destinationRules"
	IndexGateways               = "gateways"
	IndexEnvoyFilters           = "envoyFilters"
	IndexTelemetry              = "telemetry"
	IndexPeerAuthentications    = "peerAuthentications"
	IndexRequestAuthentications = "requestAuthentications"
	IndexAuthorizationPolicies  = "authorizationPolicies"
	IndexProxyConfigs           = "proxyConfigs"
	IndexSidecars               = "sidecars"
	IndexRouteChecks            = "routeChecks"
	IndexSubsetChecks           = "subsetChecks"
	IndexNetworkGateways        = "networkGateways"
)

// indexSpecs lists every index in dependency order.
var indexSpecs = []*indexSpec{
	{
		name: IndexServices, kinds: []kind.Kind{kind.ServiceEntry},
		build: func(bc *buildContext) index { return buildServiceIndex(bc) },
		get:   func(p *PushContext) index { return p.services },
		set:   func(p *PushContext, x index) { p.services = x.(*serviceIndex) },
	},
	{
		name: IndexNetworkGateways, deps: []string{IndexServices},
		build: func(bc *buildContext) index { return buildNetworkGatewayIndex(bc) },
		get:   func(p *PushContext) index { return p.networkGateways },
		set:   func(p *PushContext, x index) { p.networkGateways = x.(*networkGatewayIndex) },
	},
	{
		name: IndexVirtualServices, kinds: withGatewayAPI(kind.VirtualService),
		build: func(bc *buildContext) index { return buildVirtualServiceIndex(bc) },
		get:   func(p *PushContext) index { return p.virtualServices },
		set:   func(p *PushContext, x index) { p.virtualServices = x.(*virtualServiceIndex) },
	},
	{
		name: IndexDestinationRules, kinds: withGatewayAPI(kind.DestinationRule),
		build: func(bc *buildContext) index { return buildDestinationRuleIndex(bc) },
		get:   func(p *PushContext) index { return p.destinationRules },
		set:   func(p *PushContext, x index) { p.destinationRules = x.(*destinationRuleIndex) },
	},
	{
		name: IndexGateways, kinds: withGatewayAPI(kind.Gateway),
		build: func(bc *buildContext) index { return buildGatewayIndex(bc) },
		get:   func(p *PushContext) index { return p.gateways },
		set:   func(p *PushContext, x index) { p.gateways = x.(*gatewayIndex) },
	},
	{
		name: IndexEnvoyFilters, kinds: []kind.Kind{kind.EnvoyFilter},
		build: func(bc *buildContext) index { return buildEnvoyFilterIndex(bc) },
		get:   func(p *PushContext) index { return p.envoyFilters },
		set:   func(p *PushContext, x index) { p.envoyFilters = x.(*envoyFilterIndex) },
	},
	policySpec(IndexTelemetry, kind.Telemetry, func(p *PushContext) **policyIndex { return &p.telemetry }),
	policySpec(IndexPeerAuthentications, kind.PeerAuthentication, func(p *PushContext) **policyIndex { return &p.peerAuthentications }),
	policySpec(IndexRequestAuthentications, kind.RequestAuthentication, func(p *PushContext) **policyIndex { return &p.requestAuthentications }),
	policySpec(IndexAuthorizationPolicies, kind.AuthorizationPolicy, func(p *PushContext) **policyIndex { return &p.authorizationPolicies }),
	policySpec(IndexProxyConfigs, kind.ProxyConfig, func(p *PushContext) **policyIndex { return &p.proxyConfigs }),
	{
		name: IndexSidecars, kinds: []kind.Kind{kind.Sidecar},
		deps:  []string{IndexServices, IndexVirtualServices, IndexDestinationRules},
		build: func(bc *buildContext) index { return buildSidecarIndex(bc) },
		get:   func(p *PushContext) index { return p.sidecars },
		set:   func(p *PushContext, x index) { p.sidecars = x.(*sidecarIndex) },
	},
	{
		name:  IndexRouteChecks,
		deps:  []string{IndexServices, IndexVirtualServices},
		build: func(bc *buildContext) index { return buildRouteChecks(bc) },
		get:   func(p *PushContext) index { return p.routeChecks },
		set:   func(p *PushContext, x index) { p.routeChecks = x.(*checkIndex) },
	},
	{
		name:  IndexSubsetChecks,
		deps:  []string{IndexServices, IndexDestinationRules},
		build: func(bc *buildContext) index { return buildSubsetChecks(bc) },
		get:   func(p *PushContext) index { return p.subsetChecks },
		set:   func(p *PushContext, x index) { p.subsetChecks = x.(*checkIndex) },
	},
}

// policySpec describes an index of namespaced policies of one kind.
func policySpec(name string, k kind.Kind, field func(p *PushContext) **policyIndex) *indexSpec {
	return &indexSpec{
		name: name, kinds: []kind.Kind{k},
		build: func(bc *buildContext) index { return buildPolicyIndex(bc, k) },
		get:   func(p *PushContext) index { return *field(p) },
		set:   func(p *PushContext, x index) { *field(p) = x.(*policyIndex) },
	}
}

// IndexNames lists the index names in build order.
func IndexNames() []string {
	out := make([]string, len(indexSpecs))
	for i, s := range indexSpecs {
		out[i] = s.name
	}
	return out
}

// IndexKinds returns the config kinds whose change rebuilds the named index
// (nil for an unknown name or an index that depends on indexes only).
func IndexKinds(name string) []kind.Kind {
	for _, s := range indexSpecs {
		if s.name == name {
			return slices.Clone(s.kinds)
		}
	}
	return nil
}

// buildContext is what an index build sees.
type buildContext struct {
	env    *Environment
	mesh   *meshconfig.MeshConfig
	root   string
	domain string
	// push is the snapshot being built: the indexes of spec.deps are set.
	push *PushContext
	// old is the previous snapshot on an incremental rebuild (nil on a full
	// one); builds may reuse what they derived from unchanged objects.
	old  *PushContext
	spec *indexSpec
}

// list returns the objects of kind k (shared, read-only). Listing a kind
// the index does not declare is a programming error: the index would not
// be rebuilt when that kind changes.
func (bc *buildContext) list(k kind.Kind) []config.Config {
	if !slices.Contains(bc.spec.kinds, k) {
		panic(fmt.Sprintf("push context index %q reads kind %v it does not declare", bc.spec.name, k))
	}
	g, ok := gvk.FromKind(k)
	if !ok {
		return nil
	}
	return bc.env.list(g)
}

// domainFor returns the domain short names of cfg are completed with.
func (bc *buildContext) domainFor(cfg *config.Config) string {
	if cfg.Domain != "" {
		return cfg.Domain
	}
	return bc.domain
}

// oldIndex returns the previous snapshot's instance of this index, or nil.
func (bc *buildContext) oldIndex() index {
	if bc.old == nil {
		return nil
	}
	return bc.spec.get(bc.old)
}
