package ambient

import (
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pkg/workloadapi"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
)

// Address is one resource of type istio.workload.Address, as ztunnel
// receives it: a workload named by its UID
// ("Kubernetes//Pod/<ns>/<name>"), or a service named
// "<namespace>/<hostname>". Proto is immutable once in a collection.
type Address struct {
	Name  string
	Proto *workloadapi.Address
	// IPs are the network/IP keys the address answers to
	// ("<network>/<ip>"), for ztunnel's on-demand lookups by address.
	IPs []string
}

// ResourceName is the resource name (krt key).
func (a Address) ResourceName() string { return a.Name }

// Equals compares content (krt change detection).
func (a Address) Equals(b Address) bool {
	return a.Name == b.Name && proto.Equal(a.Proto, b.Proto)
}

// Authorization is one resource of type istio.security.Authorization,
// named "<namespace>/<name>" as Istio names them (converted
// PeerAuthentications included: "istio-system/istio_converted_static_strict",
// "<ns>/converted_peer_authentication_<name>").
type Authorization struct {
	Name  string
	Proto *security.Authorization
}

// ResourceName is the resource name (krt key).
func (a Authorization) ResourceName() string { return a.Name }

// Equals compares content (krt change detection).
func (a Authorization) Equals(b Authorization) bool {
	return a.Name == b.Name && proto.Equal(a.Proto, b.Proto)
}
