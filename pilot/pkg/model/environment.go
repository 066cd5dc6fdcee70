package model

import (
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
)

// DefaultDomainSuffix is the cluster domain used when none is configured.
const DefaultDomainSuffix = "cluster.local"

// EnvironmentOptions are the inputs a PushContext is built from. They are
// set once in bootstrap; nothing here reads the process environment.
type EnvironmentOptions struct {
	// ConfigStore holds the Istio configuration (nil: no configuration).
	ConfigStore ConfigStore
	// ServiceDiscovery lists the services of every registry (nil: none).
	ServiceDiscovery ServiceDiscovery
	// Mesh returns the current mesh configuration; nil, or a nil result,
	// means Istio's built-in defaults.
	Mesh func() *meshconfig.MeshConfig
	// DomainSuffix is the cluster domain short host names are completed
	// with when a config carries no Domain of its own (default
	// cluster.local).
	DomainSuffix string
	// EndpointIndex, when set, lets the build check that DestinationRule
	// subsets select endpoints. It is read, never written.
	EndpointIndex *EndpointIndex
	// ScopeGatewayToNamespace restricts the Gateways a gateway proxy sees to
	// its own namespace (PILOT_SCOPE_GATEWAY_TO_NAMESPACE).
	ScopeGatewayToNamespace bool
	// HashAllocatedAddresses is PILOT_ENABLE_IP_AUTOALLOCATE=false: the
	// addresses of ServiceEntries without one are the registry's older
	// hashed ones, which a proxy that captures DNS uses only when it asks
	// for them (DNS_AUTO_ALLOCATE), as in Istio.
	HashAllocatedAddresses bool
	// MeshNetworks returns the current meshNetworks (nil: none); its
	// gateways given by address are network gateways.
	MeshNetworks func() *meshconfig.MeshNetworks
	// NetworkGateways lists the gateways the registries found (nil: none).
	NetworkGateways NetworkGatewaySource
	// GatewayResolver resolves network gateway hostnames (nil: gateways
	// given by hostname are dropped).
	GatewayResolver GatewayResolver
}

// Environment is what a PushContext is built from: the config store, the
// service registries, the mesh configuration and the cluster domain. It is
// shared by every push and safe for concurrent use as long as its sources
// are.
type Environment struct {
	opts        EnvironmentOptions
	defaultMesh *meshconfig.MeshConfig
}

// NewEnvironment returns an environment over opts.
func NewEnvironment(opts EnvironmentOptions) *Environment {
	if opts.DomainSuffix == "" {
		opts.DomainSuffix = DefaultDomainSuffix
	}
	return &Environment{opts: opts, defaultMesh: mesh.DefaultMeshConfig()}
}

// Mesh returns the current mesh configuration, never nil. The result is
// shared and read-only.
func (e *Environment) Mesh() *meshconfig.MeshConfig {
	if e.opts.Mesh != nil {
		if m := e.opts.Mesh(); m != nil {
			return m
		}
	}
	return e.defaultMesh
}

// DomainSuffix returns the cluster domain.
func (e *Environment) DomainSuffix() string { return e.opts.DomainSuffix }

// ConfigStore returns the config store (may be nil).
func (e *Environment) ConfigStore() ConfigStore { return e.opts.ConfigStore }

// ServiceDiscovery returns the service registries (may be nil).
func (e *Environment) ServiceDiscovery() ServiceDiscovery { return e.opts.ServiceDiscovery }

// EndpointIndex returns the endpoint index (may be nil).
func (e *Environment) EndpointIndex() *EndpointIndex { return e.opts.EndpointIndex }

// Options returns the options the environment was built with.
func (e *Environment) Options() EnvironmentOptions { return e.opts }

// list returns the objects of a kind in every namespace; shared, read-only.
func (e *Environment) list(g config.GroupVersionKind) []config.Config {
	if e.opts.ConfigStore == nil {
		return nil
	}
	return e.opts.ConfigStore.List(g, "")
}

// services returns every service; shared, read-only.
func (e *Environment) services() []*Service {
	if e.opts.ServiceDiscovery == nil {
		return nil
	}
	return e.opts.ServiceDiscovery.Services()
}

// rootNamespace returns the mesh root namespace of m (istio-system when
// unset).
func rootNamespace(m *meshconfig.MeshConfig) string {
	if ns := m.GetRootNamespace(); ns != "" {
		return ns
	}
	return mesh.DefaultRootNamespace
}
