package model

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// PushContext is the immutable snapshot a push is computed from. It is made
// of independent indexes (services, virtual services, destination rules,
// gateways, envoy filters, telemetry, authentication and authorization
// policies, proxy configs, sidecar scopes, and the checks that report
// problems), each in its own index_*.go file with its build function and the
// kinds it depends on (push_context_indexes.go lists them). An incremental
// update rebuilds only the indexes whose kinds changed and shares the others
// with the previous snapshot.
//
// Everything a PushContext returns is shared and read-only. The only state
// that changes after InitContext is the list of problems generators report
// with AddMetric (guarded by a lock) and the sidecar scopes, computed on
// first use.
type PushContext struct {
	// Mesh is the mesh configuration the snapshot was built with.
	Mesh *meshconfig.MeshConfig
	// Rebuilt and Reused name the indexes built for this snapshot and those
	// shared with the previous one, in build order.
	Rebuilt []string
	Reused  []string
	// FullRebuild reports whether every index was built.
	FullRebuild bool

	seq           uint64
	version       string
	rootNamespace string
	domainSuffix  string
	env           *Environment
	clusterLocal  clusterLocal

	services               *serviceIndex
	networkGateways        *networkGatewayIndex
	virtualServices        *virtualServiceIndex
	destinationRules       *destinationRuleIndex
	gateways               *gatewayIndex
	envoyFilters           *envoyFilterIndex
	telemetry              *policyIndex
	peerAuthentications    *policyIndex
	requestAuthentications *policyIndex
	authorizationPolicies  *policyIndex
	proxyConfigs           *policyIndex
	sidecars               *sidecarIndex
	routeChecks            *checkIndex
	subsetChecks           *checkIndex

	// lineage lists the earlier snapshots this one was derived from
	// incrementally, newest first, each with every kind changed since it
	// (see ChangedOnlySince); empty after a full rebuild.
	lineage []lineageEntry

	// prevSidecars is the sidecar index of the snapshot before the last
	// change of sidecar scopes, so that a proxy whose old scope depended on
	// a deleted object still gets pushed.
	prevSidecars *sidecarIndex

	statusMu sync.RWMutex
	status   map[string]map[string]ProxyPushStatus
}

// pushContextSeq numbers snapshots in the order they are built.
var pushContextSeq atomic.Uint64

// Seq numbers the snapshot: a later-built snapshot has a larger number.
func (p *PushContext) Seq() uint64 { return p.seq }

// PushVersion is the version responses generated from this snapshot carry,
// in Istio's shape: the build time (RFC 3339) and the sequence number.
func (p *PushContext) PushVersion() string { return p.version }

// NewPushContext returns an empty snapshot (no services, no configuration)
// with the default mesh configuration; handy before the first push and in
// tests.
func NewPushContext() *PushContext {
	return InitContext(NewEnvironment(EnvironmentOptions{}), nil, nil)
}

// InitContext builds the snapshot for req from env. It builds every index
// on the first push (oldPush nil), on a forced request, on a full request
// that names no object ("everything"), when the mesh configuration changed,
// or when MeshConfig/MeshNetworks keys are named. Otherwise it rebuilds the
// indexes whose kinds appear in req.ConfigsUpdated, and those that depend on
// a rebuilt index, and shares the others with oldPush. A request that is not
// Full (endpoints only) rebuilds nothing. oldPush is not modified.
func InitContext(env *Environment, oldPush *PushContext, req *PushRequest) *PushContext {
	m := env.Mesh()
	seq := pushContextSeq.Add(1)
	p := &PushContext{
		seq:           seq,
		version:       time.Now().UTC().Format(time.RFC3339) + "/" + strconv.FormatUint(seq, 10),
		Mesh:          m,
		rootNamespace: rootNamespace(m),
		domainSuffix:  env.DomainSuffix(),
		env:           env,
	}
	p.FullRebuild = needsFullRebuild(oldPush, req, m)
	rebuilt := map[string]bool{}
	for _, s := range indexSpecs {
		if p.FullRebuild || indexTriggered(s, req, rebuilt) {
			bc := &buildContext{env: env, mesh: m, root: p.rootNamespace, domain: p.domainSuffix, push: p, spec: s}
			if !p.FullRebuild {
				bc.old = oldPush
			}
			s.set(p, s.build(bc))
			rebuilt[s.name] = true
			p.Rebuilt = append(p.Rebuilt, s.name)
			continue
		}
		s.set(p, s.get(oldPush))
		p.Reused = append(p.Reused, s.name)
	}
	if oldPush != nil {
		if rebuilt[IndexSidecars] {
			p.prevSidecars = oldPush.sidecars
		} else {
			p.prevSidecars = oldPush.prevSidecars
		}
	}
	if !p.FullRebuild {
		p.lineage = deriveLineage(oldPush, req)
	}
	p.status = p.collectProblems()
	return p
}

// lineageEntry is an earlier snapshot and the kinds changed since.
type lineageEntry struct {
	seq   uint64
	kinds []kind.Kind
}

// maxLineage bounds how far back a snapshot remembers its ancestors.
const maxLineage = 16

// deriveLineage is the lineage of a snapshot built from old by req: old
// itself with the kinds req changed, then old's ancestors with those kinds
// added.
func deriveLineage(old *PushContext, req *PushRequest) []lineageEntry {
	var changed []kind.Kind
	for k := range req.ConfigsUpdated {
		if !slices.Contains(changed, k.Kind) {
			changed = append(changed, k.Kind)
		}
	}
	out := make([]lineageEntry, 0, min(len(old.lineage)+1, maxLineage))
	out = append(out, lineageEntry{seq: old.seq, kinds: changed})
	for _, e := range old.lineage {
		if len(out) == maxLineage {
			break
		}
		ks := slices.Clone(e.kinds)
		for _, k := range changed {
			if !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
		out = append(out, lineageEntry{seq: e.seq, kinds: ks})
	}
	return out
}

// ChangedOnlySince reports whether this snapshot was derived, by
// incremental rebuilds only, from the snapshot numbered seq, with every
// change since then of one of the given kinds: what was generated from
// that snapshot and depends on nothing else of it still holds. Full
// rebuilds (the mesh configuration, forced pushes) break the chain.
func (p *PushContext) ChangedOnlySince(seq uint64, kinds []kind.Kind) bool {
	for _, e := range p.lineage {
		if e.seq == seq {
			for _, k := range e.kinds {
				if !slices.Contains(kinds, k) {
					return false
				}
			}
			return true
		}
	}
	return false
}

// needsFullRebuild decides whether no index may be shared with oldPush.
func needsFullRebuild(oldPush *PushContext, req *PushRequest, m *meshconfig.MeshConfig) bool {
	if oldPush == nil || req == nil || req.Forced || req.IsEverything() {
		return true
	}
	if oldPush.Mesh != m && !proto.Equal(oldPush.Mesh, m) {
		return true
	}
	for _, k := range fullRebuildKinds {
		if HasConfigsOfKind(req.ConfigsUpdated, k) {
			return true
		}
	}
	return false
}

// indexTriggered reports whether an incremental request rebuilds s.
func indexTriggered(s *indexSpec, req *PushRequest, rebuilt map[string]bool) bool {
	if !req.Full {
		return false
	}
	for _, d := range s.deps {
		if rebuilt[d] {
			return true
		}
	}
	for k := range req.ConfigsUpdated {
		if slices.Contains(s.kinds, k.Kind) {
			return true
		}
	}
	return false
}

// RootNamespace returns the mesh root namespace.
func (p *PushContext) RootNamespace() string { return p.rootNamespace }

// DomainSuffix returns the cluster domain.
func (p *PushContext) DomainSuffix() string { return p.domainSuffix }

// Environment returns the environment the snapshot was built from.
func (p *PushContext) Environment() *Environment { return p.env }

// Summary is a compact description of a snapshot for debug endpoints.
type Summary struct {
	RootNamespace          string   `json:"rootNamespace"`
	FullRebuild            bool     `json:"fullRebuild"`
	Rebuilt                []string `json:"rebuilt"`
	Reused                 []string `json:"reused"`
	Services               int      `json:"services"`
	VirtualServices        int      `json:"virtualServices"`
	DestinationRules       int      `json:"destinationRules"`
	Gateways               int      `json:"gateways"`
	EnvoyFilters           int      `json:"envoyFilters"`
	Telemetry              int      `json:"telemetry"`
	PeerAuthentications    int      `json:"peerAuthentications"`
	RequestAuthentications int      `json:"requestAuthentications"`
	AuthorizationPolicies  int      `json:"authorizationPolicies"`
	ProxyConfigs           int      `json:"proxyConfigs"`
	Sidecars               int      `json:"sidecars"`
}

// Summary counts what the snapshot holds.
func (p *PushContext) Summary() Summary {
	return Summary{
		RootNamespace: p.rootNamespace, FullRebuild: p.FullRebuild,
		Rebuilt: slices.Clone(p.Rebuilt), Reused: slices.Clone(p.Reused),
		Services:               len(p.services.all),
		VirtualServices:        len(p.virtualServices.all),
		DestinationRules:       p.destinationRules.count,
		Gateways:               len(p.gateways.all),
		EnvoyFilters:           p.envoyFilters.count,
		Telemetry:              p.telemetry.count,
		PeerAuthentications:    p.peerAuthentications.count,
		RequestAuthentications: p.requestAuthentications.count,
		AuthorizationPolicies:  p.authorizationPolicies.count,
		ProxyConfigs:           p.proxyConfigs.count,
		Sidecars:               p.sidecars.count,
	}
}

// UsesAllocatedAddresses tells whether a proxy listens on, and routes by,
// the addresses allocated to ServiceEntries that declare none: a proxy that
// captures DNS, and a waypoint; with the older hashed addresses
// (HashAllocatedAddresses) only when it asks for them (DNS_AUTO_ALLOCATE),
// as Istio's nodeUsesAutoallocatedIPs has it.
func (pc *PushContext) UsesAllocatedAddresses(proxy *Proxy) bool {
	if proxy == nil {
		return false
	}
	var capture, auto bool
	if proxy.Metadata != nil {
		capture, _ = strconv.ParseBool(proxy.Metadata.DNSCapture)
		auto, _ = strconv.ParseBool(proxy.Metadata.DNSAutoAllocate)
	}
	if !capture && proxy.Type != Waypoint {
		return false
	}
	return auto || pc.env == nil || !pc.env.opts.HashAllocatedAddresses
}
