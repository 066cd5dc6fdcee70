package model

import (
	"slices"

	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// This file decides who gets a push and of which xDS types, following
// Istio's push behaviour:
//
//  1. A forced request, a request that names nothing ("everything"), and
//     any request to a waypoint or ztunnel concern the proxy.
//  2. Gateways ignore Sidecar changes; sidecars ignore Gateway (Istio and
//     Gateway API) changes.
//  3. A sidecar is concerned by a key its sidecar scope depends on — in the
//     current snapshot or the one before (a deleted object was only in the
//     old scope) — see SidecarScope.DependsOnConfig.
//  4. A gateway is concerned by every key, except ServiceEntry keys of
//     services its namespace cannot see.
//  5. Per xDS type, kinds that cannot change that type are skipped (e.g. an
//     AuthorizationPolicy never changes clusters); a request that is not
//     Full (endpoints only) regenerates EDS only.

// xDS type URLs the push decisions know.
const (
	ClusterTypeURL  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	EndpointTypeURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	ListenerTypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
	RouteTypeURL    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	SecretTypeURL   = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
	// NameTableTypeURL is Istio's DNS name table (NDS).
	NameTableTypeURL = "type.googleapis.com/istio.networking.nds.v1.NameTable"
	// ExtensionConfigTypeURL is ECDS (Wasm and other filter configs).
	ExtensionConfigTypeURL = "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig"
)

// PushTypeURLs lists the types TypesNeedPush decides, in push order.
var PushTypeURLs = []string{
	ClusterTypeURL, EndpointTypeURL, ListenerTypeURL, RouteTypeURL, SecretTypeURL, NameTableTypeURL, ExtensionConfigTypeURL,
}

// unaffectedKinds are the kinds that never concern a proxy type.
var unaffectedKinds = map[NodeType][]kind.Kind{
	Router:       {kind.Sidecar, kind.Address},
	SidecarProxy: {kind.Gateway, kind.KubernetesGateway, kind.Address},
}

// ProxyNeedsPush reports whether req concerns proxy (rules 1–4 above),
// comparing with the proxy's scope in req.Push and in the snapshot before.
// A request without a PushContext concerns everyone.
func ProxyNeedsPush(proxy *Proxy, req *PushRequest) bool {
	return ProxyNeedsPushSince(proxy, req, nil)
}

// ProxyNeedsPushSince is ProxyNeedsPush that also checks last, the scope the
// proxy was last pushed with (nil when unknown): when pushes were merged or
// skipped, the previous snapshot's scope may not be the one the proxy has.
func ProxyNeedsPushSince(proxy *Proxy, req *PushRequest, last *SidecarScope) bool {
	if req == nil || req.Forced || len(req.ConfigsUpdated) == 0 || req.Push == nil || proxy == nil {
		return true
	}
	if proxy.Type == Ztunnel {
		// ztunnel holds the workload API only: every change of it is an
		// Address update (the ambient index signals its policies too)
		return HasConfigsOfKind(req.ConfigsUpdated, kind.Address)
	}
	if proxy.Type == Waypoint {
		return true
	}
	push := req.Push
	var scopes []*SidecarScope // computed on first need
	for key := range req.ConfigsUpdated {
		if slices.Contains(unaffectedKinds[proxy.Type], key.Kind) {
			continue
		}
		if proxy.Type == Router && key.Kind == kind.Secret {
			// only the gateways whose servers name the Secret, or whose
			// DestinationRules originate TLS with it (sidecars are pushed
			// for every Secret: their extension configs may pull with one)
			if push.GatewaysReferenceSecret(proxy, key.Namespace, key.Name) ||
				push.DestinationRulesReferenceSecret(proxy, key.Namespace, key.Name) {
				return true
			}
			continue
		}
		if proxy.Type == Router && key.Kind != kind.ServiceEntry {
			return true
		}
		if proxy.Type != SidecarProxy && proxy.Type != Router {
			return true
		}
		if scopes == nil {
			scopes = []*SidecarScope{push.SidecarScope(proxy)}
			if prev := push.PreviousSidecarScope(proxy); prev != nil {
				scopes = append(scopes, prev)
			}
			if last != nil {
				scopes = append(scopes, last)
			}
		}
		for _, sc := range scopes {
			if sc.DependsOnConfig(key) {
				return true
			}
		}
	}
	return false
}

// Kinds that cannot change a type (Istio's skip lists). A kind not listed
// may change the type.
var (
	kindsNotAffectingClusters = []kind.Kind{
		kind.Gateway, kind.WorkloadEntry, kind.WorkloadGroup, kind.AuthorizationPolicy,
		kind.RequestAuthentication, kind.Secret, kind.Telemetry, kind.WasmPlugin, kind.ProxyConfig,
	}
	// A VirtualService changes the clusters of a sidecar only through the
	// hosts its Sidecar's egress imports.
	kindsNotAffectingDefaultScopeClusters = append([]kind.Kind{kind.VirtualService}, kindsNotAffectingClusters...)
	kindsNotAffectingEndpoints            = []kind.Kind{
		kind.Gateway, kind.VirtualService, kind.WorkloadGroup, kind.AuthorizationPolicy,
		kind.RequestAuthentication, kind.Secret, kind.Telemetry, kind.WasmPlugin, kind.ProxyConfig,
	}
	kindsNotAffectingListeners = map[NodeType][]kind.Kind{
		// a gateway's listeners leave out servers whose certificate Secret
		// is missing or invalid, so Secrets change them (not in Istio)
		Router:       {kind.WorkloadGroup, kind.WorkloadEntry, kind.ProxyConfig},
		SidecarProxy: {kind.Gateway, kind.WorkloadGroup, kind.WorkloadEntry, kind.Secret, kind.ProxyConfig},
	}
	// A VirtualService without tcp or tls routes never changes the
	// listeners of a sidecar without a Sidecar
	// (SidecarListenersUnchangedSince).
	kindsNotAffectingDefaultScopeListeners = append([]kind.Kind{kind.VirtualService}, kindsNotAffectingListeners[SidecarProxy]...)
	kindsNotAffectingRoutes                = []kind.Kind{
		kind.WorkloadEntry, kind.WorkloadGroup, kind.AuthorizationPolicy, kind.RequestAuthentication,
		kind.PeerAuthentication, kind.Secret, kind.WasmPlugin, kind.Telemetry, kind.ProxyConfig,
	}
	kindsNotAffectingNameTable = []kind.Kind{
		kind.Gateway, kind.VirtualService, kind.DestinationRule, kind.Secret, kind.Telemetry,
		kind.EnvoyFilter, kind.WorkloadEntry, kind.WorkloadGroup, kind.AuthorizationPolicy,
		kind.RequestAuthentication, kind.PeerAuthentication, kind.WasmPlugin, kind.ProxyConfig,
	}
	// Only these kinds change secrets and extension configs.
	kindsAffectingSecrets         = []kind.Kind{kind.Secret, kind.ConfigMap}
	kindsAffectingExtensionConfig = []kind.Kind{kind.EnvoyFilter, kind.WasmPlugin, kind.Secret}
)

// TypeNeedsPush reports whether req may change resources of typeURL for
// proxy (rule 5 above), assuming ProxyNeedsPush already said yes. Unknown
// types are regenerated on every full request.
func TypeNeedsPush(proxy *Proxy, req *PushRequest, typeURL string) bool {
	return TypeNeedsPushSince(proxy, req, typeURL, 0)
}

// TypeNeedsPushSince is TypeNeedsPush for a proxy whose resources of the
// type were last generated from snapshot generated (0: unknown), which
// lets it also skip what did not change since then
// (SidecarListenersUnchangedSince).
func TypeNeedsPushSince(proxy *Proxy, req *PushRequest, typeURL string, generated uint64) bool {
	if req == nil {
		return true
	}
	if !req.Full {
		return typeURL == EndpointTypeURL
	}
	if len(req.ConfigsUpdated) == 0 {
		return true
	}
	switch typeURL {
	case ClusterTypeURL:
		if proxy != nil && proxy.Type == Router && HasConfigsOfKind(req.ConfigsUpdated, kind.Gateway) {
			return true // gateway clusters (SNI auto-passthrough) follow the Gateways
		}
		if proxy != nil && proxy.Type == SidecarProxy && req.Push != nil && !anyKindNotIn(req, kindsNotAffectingDefaultScopeClusters) &&
			req.Push.SidecarScope(proxy).Sidecar == nil {
			// ours: a sidecar without a Sidecar sees every service, so
			// which clusters it has does not follow VirtualServices, and
			// no cluster's content ever does (Istio regenerates them all
			// and sends the same clusters again)
			return false
		}
		return anyKindNotIn(req, kindsNotAffectingClusters)
	case EndpointTypeURL:
		return anyKindNotIn(req, kindsNotAffectingEndpoints)
	case ListenerTypeURL:
		var skip []kind.Kind
		if proxy != nil {
			skip = kindsNotAffectingListeners[proxy.Type]
		}
		return anyKindNotIn(req, skip) && !SidecarListenersUnchangedSince(proxy, req, generated)
	case RouteTypeURL:
		return anyKindNotIn(req, kindsNotAffectingRoutes)
	case NameTableTypeURL:
		return anyKindNotIn(req, kindsNotAffectingNameTable)
	case SecretTypeURL:
		return anyKindIn(req, kindsAffectingSecrets)
	case ExtensionConfigTypeURL:
		return anyKindIn(req, kindsAffectingExtensionConfig)
	}
	return true
}

// SidecarListenersUnchangedSince reports that req leaves the listeners of a
// sidecar without a Sidecar as they were generated from snapshot seq: it
// names only VirtualServices and kinds that never change a sidecar's
// listeners, and no VirtualService with tcp or tls routes changed since
// seq. Such a sidecar's listeners read VirtualServices only for their tcp
// and tls routes (its HTTP routes are in RDS), and which listeners it has
// follows its services, not VirtualServices. Ours: Istio regenerates them
// and sends the same listeners again. A forced request, one that names
// nothing, and seq 0 (never generated) are never unchanged.
func SidecarListenersUnchangedSince(proxy *Proxy, req *PushRequest, seq uint64) bool {
	if proxy == nil || proxy.Type != SidecarProxy || req == nil || req.Push == nil || req.Forced || !req.Full ||
		len(req.ConfigsUpdated) == 0 || seq == 0 || seq > req.Push.Seq() {
		return false
	}
	if anyKindNotIn(req, kindsNotAffectingDefaultScopeListeners) {
		return false
	}
	return !req.Push.L4VirtualServicesChangedSince(seq) && req.Push.SidecarScope(proxy).Sidecar == nil
}

// TypesNeedPush returns the types of typeURLs (PushTypeURLs when nil) that
// req requires for proxy, in the order given; nil when the proxy is not
// concerned at all.
func TypesNeedPush(proxy *Proxy, req *PushRequest, typeURLs []string) []string {
	if !ProxyNeedsPush(proxy, req) {
		return nil
	}
	if typeURLs == nil {
		typeURLs = PushTypeURLs
	}
	var out []string
	for _, t := range typeURLs {
		if TypeNeedsPush(proxy, req, t) {
			out = append(out, t)
		}
	}
	return out
}

func anyKindNotIn(req *PushRequest, skip []kind.Kind) bool {
	for k := range req.ConfigsUpdated {
		if !slices.Contains(skip, k.Kind) {
			return true
		}
	}
	return false
}

func anyKindIn(req *PushRequest, kinds []kind.Kind) bool {
	for k := range req.ConfigsUpdated {
		if slices.Contains(kinds, k.Kind) {
			return true
		}
	}
	return false
}

// PartialEndpointHosts tells whether a push changes the load assignments
// of some services only, and which (their hostnames): so for an incremental
// push, and for a full one, not forced, whose every change is a service or
// of a kind endpoints do not depend on. The other assignments a proxy
// holds are then unchanged and need not be sent again, as Istio's EDS
// generator leaves them out (Envoy keeps what a response of a non-wildcard
// type does not name). A full push with no named change, or a forced one,
// is never partial.
func PartialEndpointHosts(req *PushRequest) (map[string]struct{}, bool) {
	if req == nil {
		return nil, false
	}
	if req.Full {
		if req.Forced || len(req.ConfigsUpdated) == 0 {
			return nil, false
		}
		for k := range req.ConfigsUpdated {
			// a WorkloadEntry changes endpoints through the registries,
			// which name the services it changed (Istio's config handler
			// leaves WorkloadEntries to its registry, so its requests never
			// name one)
			if k.Kind != kind.ServiceEntry && k.Kind != kind.WorkloadEntry && !slices.Contains(kindsNotAffectingEndpoints, k.Kind) {
				return nil, false
			}
		}
	}
	hosts := make(map[string]struct{}, len(req.ConfigsUpdated))
	for k := range req.ConfigsUpdated {
		if k.Kind == kind.ServiceEntry {
			hosts[k.Name] = struct{}{}
		}
	}
	return hosts, true
}
