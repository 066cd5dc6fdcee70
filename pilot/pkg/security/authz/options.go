package authz

import (
	meshconfig "istio.io/api/mesh/v1alpha1"
)

// ClusterLookup resolves an extension provider's service (a hostname, or
// <namespace>/<hostname>) and port to the hostname of the service it names
// and the name of the proxy's cluster for it, e.g.
// ("authz.bookinfo.svc.cluster.local", 9191) →
// ("authz.bookinfo.svc.cluster.local",
// "outbound|9191||authz.bookinfo.svc.cluster.local"). It returns an error
// when the service is unknown or ambiguous (a bare hostname present in more
// than one namespace), as Istio's model.LookupCluster.
type ClusterLookup func(service string, port uint32) (hostname, cluster string, err error)

// Options are the inputs of a translation besides the policies.
type Options struct {
	// Mesh supplies trustDomain (empty means cluster.local),
	// trustDomainAliases and extensionProviders. Nil means Istio's defaults
	// and no providers. Read only.
	Mesh *meshconfig.MeshConfig

	// LookupCluster resolves the services of envoyExtAuthzGrpc and
	// envoyExtAuthzHttp providers. Nil makes every such provider invalid
	// (CUSTOM policies then deny what they match).
	LookupCluster ClusterLookup

	// PeerPrincipalFromFilterState matches the peer identity with the
	// io.istio.peer_principal filter state instead of the connection's
	// authenticated principal: Istio does so on waypoints and HBONE inbound
	// chains (builder option UseFilterState).
	PeerPrincipalFromFilterState bool

	// MultipleCustomProviders allows CUSTOM policies naming different
	// providers on one workload (PILOT_ENABLE_MULTIPLE_CUSTOM_AUTHZ_PROVIDERS,
	// false by default). Without it such a workload gets, per provider, a
	// filter denying whatever the provider's policies match.
	MultipleCustomProviders bool
}

// defaultTrustDomain is the trust domain when the mesh config names none,
// and the one a principal may always use to mean "the local trust domain".
const defaultTrustDomain = "cluster.local"

func (o *Options) trustDomain() string {
	if td := o.Mesh.GetTrustDomain(); td != "" {
		return td
	}
	return defaultTrustDomain
}
