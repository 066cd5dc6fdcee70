package model

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
)

// NodeType is the kind of proxy: the first field of the node ID.
type NodeType string

// Node types istiod serves.
const (
	SidecarProxy NodeType = "sidecar"
	Router       NodeType = "router" // gateways
	Waypoint     NodeType = "waypoint"
	Ztunnel      NodeType = "ztunnel"
)

// IsValid reports whether t is a node type istiod serves.
func (t NodeType) IsValid() bool {
	switch t {
	case SidecarProxy, Router, Waypoint, Ztunnel:
		return true
	}
	return false
}

// Proxy is one connected data-plane client.
type Proxy struct {
	Type NodeType
	// IPAddresses from the node ID, then INSTANCE_IPS.
	IPAddresses []string
	// ID is the workload identity in the node ID: pod.namespace.
	ID string
	// DNSDomain is the fourth node ID field: namespace.svc.<domain>.
	DNSDomain string
	// Metadata is the typed node metadata.
	Metadata *NodeMetadata
	// ConfigNamespace is the namespace the proxy's config comes from.
	ConfigNamespace string
	// Labels are the workload's labels: the registry's, else the
	// metadata's, with the topology labels (see WithWorkloadLabels).
	Labels map[string]string
	// Locality is "region/zone/subzone" from the node (empty when unknown).
	Locality string
	// VerifiedIdentity is the identity the proxy proved on a TLS stream
	// (nil on the plaintext port).
	VerifiedIdentity *Identity
	// ServiceCluster is the node's cluster field (the agent's service
	// cluster): the service name of the proxy's spans.
	ServiceCluster string
}

// Identity is a workload identity: spiffe://<trust domain>/ns/<Namespace>/sa/<ServiceAccount>.
type Identity struct {
	Namespace      string
	ServiceAccount string
}

// NodeMetadata is the typed form of the metadata Istio's agents send. Fields
// not listed are kept in Raw.
type NodeMetadata struct {
	Namespace string            `json:"NAMESPACE,omitempty"`
	ClusterID string            `json:"CLUSTER_ID,omitempty"`
	Labels    map[string]string `json:"LABELS,omitempty"`
	// StaticLabels are the agent's ISTIO_METAJSON_LABELS: kept over the
	// registry's labels.
	StaticLabels map[string]string `json:"STATIC_LABELS,omitempty"`
	// NodeName is the Kubernetes node the proxy runs on.
	NodeName         string            `json:"NODE_NAME,omitempty"`
	Annotations      map[string]string `json:"ANNOTATIONS,omitempty"`
	IstioVersion     string            `json:"ISTIO_VERSION,omitempty"`
	InstanceIPs      StringList        `json:"INSTANCE_IPS,omitempty"`
	InterceptionMode string            `json:"INTERCEPTION_MODE,omitempty"`
	ServiceAccount   string            `json:"SERVICE_ACCOUNT,omitempty"`
	WorkloadName     string            `json:"WORKLOAD_NAME,omitempty"`
	Owner            string            `json:"OWNER,omitempty"`
	Generator        string            `json:"GENERATOR,omitempty"`
	Network          string            `json:"NETWORK,omitempty"`
	MeshID           string            `json:"MESH_ID,omitempty"`
	DNSCapture       string            `json:"DNS_CAPTURE,omitempty"`
	// DNSAutoAllocate is DNS_AUTO_ALLOCATE: with the older hashed
	// addresses (PILOT_ENABLE_IP_AUTOALLOCATE=false), a proxy that
	// captures DNS uses them only when this is true.
	DNSAutoAllocate string          `json:"DNS_AUTO_ALLOCATE,omitempty"`
	PodPorts        string          `json:"POD_PORTS,omitempty"`
	IstioProxySHA   string          `json:"ISTIO_PROXY_SHA,omitempty"`
	ProxyConfig     json.RawMessage `json:"PROXY_CONFIG,omitempty"`
	// IdleTimeout is the proxy's IDLE_TIMEOUT (a Go duration): the idle
	// timeout of its TCP proxies where no DestinationRule sets one, and of
	// its HTTP connection managers.
	IdleTimeout string `json:"IDLE_TIMEOUT,omitempty"`
	// AutoRegisterGroup is the WorkloadGroup a VM registers itself with
	// (ISTIO_META_AUTO_REGISTER_GROUP; see pilot/pkg/autoregistration).
	AutoRegisterGroup string `json:"AUTO_REGISTER_GROUP,omitempty"`
	// WorkloadEntry is the existing WorkloadEntry the proxy is
	// (ISTIO_META_WORKLOAD_ENTRY): its health reports go to that entry.
	WorkloadEntry string `json:"WORKLOAD_ENTRY,omitempty"`
	// RequestedNetworkView are the networks whose endpoints the proxy
	// wants (REQUESTED_NETWORK_VIEW; empty: every network).
	RequestedNetworkView StringList `json:"REQUESTED_NETWORK_VIEW,omitempty"`

	// Raw is the whole metadata as sent.
	Raw map[string]any `json:"-"`
}

// StringList is a comma-separated list in the metadata ("a,b").
type StringList []string

// UnmarshalJSON accepts "a,b" and ["a","b"].
func (l *StringList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = nil
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				*l = append(*l, p)
			}
		}
		return nil
	}
	var arr []string
	if err := json.Unmarshal(b, &arr); err != nil {
		return fmt.Errorf("want a comma-separated string or a list of strings")
	}
	*l = arr
	return nil
}

// MarshalJSON writes the comma-separated form.
func (l StringList) MarshalJSON() ([]byte, error) { return json.Marshal(strings.Join(l, ",")) }

// ParseMetadata turns node metadata into NodeMetadata; a field of the wrong
// type is an error naming it.
func ParseMetadata(md *structpb.Struct) (*NodeMetadata, error) {
	out := &NodeMetadata{Raw: map[string]any{}}
	if md == nil {
		return out, nil
	}
	out.Raw = md.AsMap()
	b, err := protojson.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("node metadata: %v", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("node metadata: %v", err)
	}
	return out, nil
}

// ParseServiceNodeWithMetadata parses a node ID of the form
// type~ip~pod.namespace~namespace.svc.<domain> and its metadata.
func ParseServiceNodeWithMetadata(nodeID string, md *structpb.Struct) (*Proxy, error) {
	parts := strings.Split(nodeID, "~")
	if len(parts) != 4 {
		return nil, fmt.Errorf("node ID %q: want 4 parts separated by '~' (type~ip~pod.namespace~namespace.svc.domain), got %d", nodeID, len(parts))
	}
	t := NodeType(parts[0])
	if !t.IsValid() {
		return nil, fmt.Errorf("node ID %q: invalid node type %q (sidecar, router, waypoint, ztunnel)", nodeID, parts[0])
	}
	if _, err := netip.ParseAddr(parts[1]); err != nil {
		return nil, fmt.Errorf("node ID %q: invalid IP address %q", nodeID, parts[1])
	}
	if parts[2] == "" {
		return nil, fmt.Errorf("node ID %q: empty workload ID", nodeID)
	}
	meta, err := ParseMetadata(md)
	if err != nil {
		return nil, fmt.Errorf("node %q: %v", nodeID, err)
	}
	p := &Proxy{Type: t, ID: parts[2], DNSDomain: parts[3], Metadata: meta, Labels: meta.Labels}
	p.IPAddresses = []string{parts[1]}
	for _, ip := range meta.InstanceIPs {
		if ip != parts[1] {
			if _, err := netip.ParseAddr(ip); err == nil {
				p.IPAddresses = append(p.IPAddresses, ip)
			}
		}
	}
	p.ConfigNamespace = meta.Namespace
	if p.ConfigNamespace == "" {
		// pod.namespace
		if i := strings.LastIndex(p.ID, "."); i >= 0 {
			p.ConfigNamespace = p.ID[i+1:]
		}
	}
	return p, nil
}

// IPAddress is the proxy's primary IP.
func (p *Proxy) IPAddress() string {
	if len(p.IPAddresses) == 0 {
		return ""
	}
	return p.IPAddresses[0]
}

// HasIP reports whether ip is one of the proxy's addresses.
func (p *Proxy) HasIP(ip string) bool { return slices.Contains(p.IPAddresses, ip) }

// GeneratorName is the metadata GENERATOR (e.g. "grpc" for proxyless gRPC).
func (p *Proxy) GeneratorName() string {
	if p.Metadata == nil {
		return ""
	}
	return p.Metadata.Generator
}

// ClusterID is the cluster the proxy says it runs in ("" when it does not).
func (p *Proxy) ClusterID() string {
	if p.Metadata == nil {
		return ""
	}
	return p.Metadata.ClusterID
}

// IPMode is the IP family a proxy speaks, decided from its addresses.
type IPMode int

// IP modes, as Istio decides them: IPv4 when no address is IPv6 (a proxy
// without addresses included), IPv6 when no address is IPv4, Dual otherwise.
const (
	IPv4 IPMode = iota
	IPv6
	Dual
)

// String names the mode ("IPv4", "IPv6", "Dual").
func (m IPMode) String() string {
	switch m {
	case IPv6:
		return "IPv6"
	case Dual:
		return "Dual"
	}
	return "IPv4"
}

// DiscoverIPMode is the IP mode of a list of addresses; entries that do not
// parse are skipped, as Istio skips them.
func DiscoverIPMode(addrs []string) IPMode {
	v4, v6 := false, false
	for _, s := range addrs {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		if a.Is4() {
			v4 = true
		} else {
			v6 = true
		}
	}
	switch {
	case v6 && !v4:
		return IPv6
	case v4 && v6:
		return Dual
	}
	return IPv4
}

// IPMode is the proxy's IP mode, from its addresses.
func (p *Proxy) IPMode() IPMode { return DiscoverIPMode(p.IPAddresses) }

// InterceptionMode is how traffic reaches a sidecar.
type InterceptionMode string

// Interception modes the agent reports in INTERCEPTION_MODE.
const (
	InterceptionRedirect InterceptionMode = "REDIRECT"
	InterceptionTproxy   InterceptionMode = "TPROXY"
	InterceptionNone     InterceptionMode = "NONE"
)

// Interception is the proxy's INTERCEPTION_MODE; anything but TPROXY or
// NONE (unset included) is REDIRECT, as in Istio.
func (p *Proxy) Interception() InterceptionMode {
	if p == nil || p.Metadata == nil {
		return InterceptionRedirect
	}
	switch m := InterceptionMode(p.Metadata.InterceptionMode); m {
	case InterceptionTproxy, InterceptionNone:
		return m
	}
	return InterceptionRedirect
}

// ProxyConfigOrDefault is the ProxyConfig the agent sent in PROXY_CONFIG,
// its unknown fields ignored as Istio reads it, else def (the mesh's
// defaultConfig). A PROXY_CONFIG that does not parse counts as none: Istio
// would refuse the node, here the proxy keeps the mesh's settings.
func (p *Proxy) ProxyConfigOrDefault(def *meshconfig.ProxyConfig) *meshconfig.ProxyConfig {
	if p == nil || p.Metadata == nil || len(p.Metadata.ProxyConfig) == 0 || string(p.Metadata.ProxyConfig) == "null" {
		return def
	}
	pc := &meshconfig.ProxyConfig{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(p.Metadata.ProxyConfig, pc); err != nil {
		return def
	}
	return pc
}
