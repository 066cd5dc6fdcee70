package gateway

import (
	"fmt"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// Annotations by which the Gateway API translation tells how a synthetic
// Gateway applies (Istio's internal.istio.io names).
const (
	// ServiceAnnotation lists the hostnames of the Services whose workloads
	// the Gateway configures (in the Gateway's namespace, or the parent's).
	ServiceAnnotation = "internal.istio.io/gateway-service"
	// ParentNamespaceAnnotation is the namespace of the Gateway API object
	// a synthetic Gateway came from, when it differs.
	ParentNamespaceAnnotation = "internal.istio.io/parent-namespace"
	// ServiceAccountAnnotation is the service account the gateway's
	// workload must run as to read the Gateway's certificates.
	ServiceAccountAnnotation = "internal.istio.io/service-account-name"
)

// ServerPort is one listener of the merged gateway.
type ServerPort struct {
	Number   uint32
	Protocol string
	Bind     string
}

// Servers are the servers of one listener, and for plain HTTP the route
// configuration they share.
type Servers struct {
	Servers   []*networking.Server
	RouteName string
}

// TLSInfo is what a TLS server's filter chain needs.
type TLSInfo struct {
	RouteName string
	SNIHosts  []string
}

// Problem is a server the merge dropped.
type Problem struct {
	// Gateway is "namespace/name".
	Gateway string
	// Server names the server: its port name and number.
	Server string
	Reason string
}

func (p Problem) Error() string {
	return fmt.Sprintf("gateway %s: server %s ignored: %s", p.Gateway, p.Server, p.Reason)
}

// Merged is the logical gateway of one proxy.
type Merged struct {
	// Ports lists the listeners in the order their first server came.
	Ports []ServerPort
	// Servers by listener.
	Servers map[ServerPort]*Servers
	// GatewayOf names the Gateway ("namespace/name") of each server.
	GatewayOf map[*networking.Server]string
	// ByRouteName are the servers behind each route configuration.
	ByRouteName map[string][]*networking.Server
	// TLS by server, for servers with TLS settings.
	TLS map[*networking.Server]*TLSInfo
	// AutoPassthroughHosts are the hosts of AUTO_PASSTHROUGH servers
	// (nil when there are none).
	AutoPassthroughHosts []string
	// Credentials are the SDS resource names ("kubernetes://..."), the
	// proxy may read: those its Gateways reference, when its verified
	// identity is in the Gateway's namespace (with the Gateway's service
	// account, for synthetic Gateways that name one).
	Credentials map[string]bool
	// Problems are the servers dropped, in the order met.
	Problems []Problem
}

// Candidate is a Gateway that applies to the proxy, with the service ports
// of the proxy it reaches.
type Candidate struct {
	Config *config.Config
	// ByLabels is true for Gateways that select by labels: a server port
	// that matches a service port of the proxy listens on the target port,
	// any other on itself. Synthetic Gateways name their Service and use
	// only its ports.
	ByLabels bool
	Targets  []model.ServiceTarget
}

// Select returns the Gateways that apply to the proxy, in order: those
// naming a Service the proxy is a target of (in the Gateway's, or its
// parent's, namespace), and those whose selector matches its labels (an
// empty selector applies to every gateway proxy).
func Select(gateways []config.Config, proxy *model.Proxy, targets []model.ServiceTarget) []Candidate {
	var out []Candidate
	for i := range gateways {
		cfg := &gateways[i]
		gw, ok := cfg.Spec.(*networking.Gateway)
		if !ok {
			continue
		}
		if svcs, named := cfg.Annotations[ServiceAnnotation]; named {
			ns := cfg.Namespace
			if p := cfg.Annotations[ParentNamespaceAnnotation]; p != "" {
				ns = p
			}
			known := map[string]bool{}
			for _, h := range strings.Split(svcs, ",") {
				known[h] = true
			}
			var mine []model.ServiceTarget
			for _, t := range targets {
				if known[t.Service.Hostname] && t.Service.Attributes.Namespace == ns {
					mine = append(mine, t)
				}
			}
			if len(mine) > 0 {
				out = append(out, Candidate{Config: cfg, Targets: mine})
			}
			continue
		}
		if selects(gw.GetSelector(), proxy.Labels) {
			out = append(out, Candidate{Config: cfg, ByLabels: true, Targets: targets})
		}
	}
	return out
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// DisablePortTranslationLabel on a Service stops label-selected Gateways
// from translating its ports to target ports.
const DisablePortTranslationLabel = "experimental.istio.io/disable-gateway-port-translation"

// listenPorts are the ports a server port listens on: the target ports of
// the proxy's service ports with that number. A label-selected Gateway
// takes the first match, or the port itself when none matches; a synthetic
// one listens only where its Service says.
func listenPorts(number uint32, c Candidate) []uint32 {
	var out []uint32
	seen := map[uint32]bool{}
	for _, t := range c.Targets {
		if _, off := t.Service.Attributes.Labels[DisablePortTranslationLabel]; off && c.ByLabels {
			continue
		}
		if t.Port.Port == nil || t.Port.Port.Port != int(number) {
			continue
		}
		if c.ByLabels {
			return []uint32{t.Port.TargetPort}
		}
		if !seen[t.Port.TargetPort] {
			seen[t.Port.TargetPort] = true
			out = append(out, t.Port.TargetPort)
		}
	}
	if len(out) == 0 && c.ByLabels {
		return []uint32{number}
	}
	return out
}

// RouteName is the route configuration of a server: "http.<port>[.<bind>]"
// for plain HTTP (shared by the port's HTTP servers),
// "https.<server port>.<port name>.<gateway>.<namespace>[.<bind>]" for
// HTTPS the gateway terminates, "" otherwise.
func RouteName(s *networking.Server, listenPort uint32, gw *config.Config) string {
	bind := ""
	if s.Bind != "" {
		bind = "." + s.Bind
	}
	p := protocol.Parse(s.GetPort().GetProtocol())
	switch {
	case p.IsHTTP():
		return "http." + strconv.Itoa(int(listenPort)) + bind
	case p == protocol.HTTPS && !IsPassthrough(s):
		return "https." + strconv.Itoa(int(s.Port.Number)) + "." + s.Port.Name + "." + gw.Name + "." + gw.Namespace + bind
	}
	return ""
}

// ParseRouteName reads the port of a route configuration name, and for
// HTTPS the port name and gateway ("namespace/name").
func ParseRouteName(name string) (port int, portName, gateway string) {
	if rest, ok := strings.CutPrefix(name, "http."); ok {
		p, _, _ := strings.Cut(rest, ".")
		port, _ = strconv.Atoi(p)
		return port, "", ""
	}
	rest, ok := strings.CutPrefix(name, "https.")
	if !ok || strings.Count(rest, ".") != 3 {
		return 0, "", ""
	}
	parts := strings.Split(rest, ".")
	port, _ = strconv.Atoi(parts[0])
	return port, parts[1], parts[3] + "/" + parts[2]
}
