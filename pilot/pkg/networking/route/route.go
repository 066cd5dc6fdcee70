package route

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previoushosts "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// Names of special virtual hosts and routes.
const (
	AllowAny     = "allow_any"
	BlockAll     = "block_all"
	DefaultRoute = "default"
	// AllowAnyDynamicDNS is the catch-all host and route of the
	// ALLOW_ANY_DYNAMIC_DNS outbound policy.
	AllowAnyDynamicDNS = "allow_any_dynamic_dns"
)

// ServiceRoutes is one service on the port, with the VirtualService that
// applies to it (nil: default route). The VirtualService's hosts must be
// resolved to FQDNs already (the push context does this).
//
// HostOnly marks a VirtualService host that no service of the port has
// (Service holds just the hostname): Istio gives it a virtual host of its
// own, answering to that name alone, with the VirtualService's routes, and
// none when they leave nothing for the port (see BuildVirtualHost).
type ServiceRoutes struct {
	Service        *model.Service
	VirtualService *config.Config
	HostOnly       bool
}

// Options are the proxy-dependent inputs.
type Options struct {
	// ProxyNamespace decides the short-name domains ("reviews" only for
	// services of the proxy's namespace).
	ProxyNamespace string
	// DomainSuffix, e.g. cluster.local.
	DomainSuffix string
	// AllowAny routes unknown hosts to PassthroughCluster; otherwise they get
	// a 502 from the block_all host.
	AllowAny bool
	// AllowAnyDynamicDNS (with AllowAny) sends unknown hosts to the
	// dynamic forward proxy cluster instead, which resolves them itself
	// (a sidecar under ALLOW_ANY_DYNAMIC_DNS).
	AllowAnyDynamicDNS bool
	// ProxyLabels and Gateway select VirtualService matches (sourceLabels,
	// gateways: "mesh" for sidecars).
	ProxyLabels map[string]string
	Gateway     string
	// LookupService finds the service of a destination host as the proxy
	// sees it (nil: destinations without a port use the route's port).
	// Routes read of it only SinglePort.
	LookupService func(host string) *model.Service
	// Hash is the consistent hash of a destination's DestinationRule, as
	// the proxy sees the rule (nil: none); ServiceHash that of a service
	// port's default route.
	Hash        func(d *networking.Destination) *networking.LoadBalancerSettings_ConsistentHashLB
	ServiceHash func(svc *model.Service, port int) *networking.LoadBalancerSettings_ConsistentHashLB
	// MeshRetry is the mesh's defaultHttpRetryPolicy (nil: Istio's).
	MeshRetry *networking.HTTPRetry
	// IsTLS tells routes served behind TLS (a gateway's HTTPS server):
	// the scheme whose default port a redirect leaves out.
	IsTLS bool
	// ClusterID, IPMode and AutoAllocated are the proxy's, for the
	// addresses among a virtual host's domains (model.ProxyAddresses);
	// without a cluster, every cluster's VIPs are listed.
	ClusterID     string
	IPMode        model.IPMode
	AutoAllocated bool
}

// RouteSemanticsAnnotation marks VirtualServices translated from the
// Gateway API, whose routes follow its rules (segment-wise path prefixes,
// 500 for a missing backend).
const RouteSemanticsAnnotation = "internal.istio.io/route-semantics"

// GatewaySemantics tells a VirtualService translated from the Gateway API.
func GatewaySemantics(vs *config.Config) bool {
	return vs != nil && vs.Annotations[RouteSemanticsAnnotation] == "gateway"
}

// BuildRouteConfiguration builds the configuration of one port.
func BuildRouteConfiguration(port int, services []ServiceRoutes, o Options) *routev3.RouteConfiguration {
	SortServiceRoutes(services)
	rc := NewRouteConfiguration(port)
	for _, sr := range services {
		if vh := BuildVirtualHost(sr, port, o); vh != nil {
			rc.VirtualHosts = append(rc.VirtualHosts, vh)
		}
	}
	rc.VirtualHosts = append(rc.VirtualHosts, o.CatchAll())
	return rc
}

// SortServiceRoutes puts services in the order of their virtual hosts in
// the port's configuration: by virtual host name ("<host>:<port>"), as
// Istio's SortVirtualHosts orders them; on one port that is the order of
// "<host>:".
func SortServiceRoutes(services []ServiceRoutes) {
	sort.SliceStable(services, func(i, j int) bool {
		return services[i].Service.Hostname+":" < services[j].Service.Hostname+":"
	})
}

// NewRouteConfiguration is the configuration of a port without its
// virtual hosts: the fields every port's configuration has.
func NewRouteConfiguration(port int) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name:                           strconv.Itoa(port),
		ValidateClusters:               wrapperspb.Bool(false),
		MaxDirectResponseBodySizeBytes: wrapperspb.UInt32(1 << 20),
		IgnorePortInHostMatching:       true,
	}
}

// BuildVirtualHost is the virtual host of one service on the port. It
// reads of the service only its hostname and Domains, and of the options
// only ProxyNamespace and DomainSuffix (through Domains), the proxy labels
// and namespace (through SourceLabelsKey), Gateway, LookupService, Hash,
// ServiceHash, MeshRetry and IsTLS: callers that share virtual hosts
// between proxies key them by exactly these (sidecars never set IsTLS).
//
// A VirtualService whose routes leave nothing for the port (matches of
// other ports, sources or gateways) does not take the service: it keeps
// its default route, as in Istio's BuildSidecarVirtualHostWrapper, where
// such a VirtualService yields no virtual host and the service is built as
// one without. A HostOnly host gets no virtual host then (nil).
func BuildVirtualHost(sr ServiceRoutes, port int, o Options) *routev3.VirtualHost {
	vh := &routev3.VirtualHost{
		Name:                       sr.Service.Hostname + ":" + strconv.Itoa(port),
		Domains:                    Domains(sr.Service, port, o),
		IncludeRequestAttemptCount: true,
	}
	if sr.HostOnly {
		vh.Domains = []string{strings.ToLower(sr.Service.Hostname)}
	}
	if sr.VirtualService != nil {
		vh.Routes = translateVirtualService(sr.VirtualService, port, o)
	}
	if len(vh.Routes) == 0 {
		if sr.HostOnly {
			return nil
		}
		vh.Routes = []*routev3.Route{defaultRoute(sr.Service, port, o)}
	}
	return vh
}

// SourceLabelsKey says which HTTP matches of a VirtualService the proxy's
// labels and namespace select (sourceLabels, sourceNamespace), the only
// way they reach its routes: proxies whose keys agree get the same routes
// from it. "" when no match selects on them.
func SourceLabelsKey(vs *networking.VirtualService, labels map[string]string, namespace string) string {
	var b []byte
	selects := false
	for _, hr := range vs.GetHttp() {
		for _, m := range hr.GetMatch() {
			switch {
			case len(m.GetGateways()) > 0 || (len(m.GetSourceLabels()) == 0 && m.GetSourceNamespace() == ""):
				b = append(b, '-')
			case sourceMatch(m, labels, namespace):
				b, selects = append(b, '1'), true
			default:
				b, selects = append(b, '0'), true
			}
		}
		b = append(b, '|')
	}
	if !selects {
		return ""
	}
	return string(b)
}

// Domains are the names a service answers to from the proxy: FQDN, FQDN
// with a trailing dot, short names (the bare name only from the same
// namespace), and its virtual IPs. A headless Kubernetes service
// (Passthrough) also answers to every name below each of those, as
// Istio's generateVirtualHostDomains (pilot/pkg/networking/core/
// httproute.go) adds "*.<domain>" for them: the per-pod names of a
// StatefulSet.
func Domains(svc *model.Service, port int, o Options) []string {
	h := svc.Hostname
	out := []string{h, h + "."}
	if suffix := ".svc." + o.DomainSuffix; o.DomainSuffix != "" && strings.HasSuffix(h, suffix) {
		nameNS := strings.TrimSuffix(h, suffix) // name.namespace
		name, ns, _ := strings.Cut(nameNS, ".")
		if ns == o.ProxyNamespace {
			out = append(out, name, nameNS+".svc", nameNS)
		} else {
			// Istio's order for services of other namespaces
			out = append(out, nameNS, nameNS+".svc")
		}
	}
	if svc.Resolution == model.Passthrough && svc.Attributes.ServiceRegistry == model.Kubernetes {
		for _, d := range out {
			out = append(out, "*."+d)
		}
	}
	// the addresses the proxy reaches the service on, as Istio's
	// GetAllAddressesForProxy gives them: the VIPs of the proxy's cluster
	// (of a Kubernetes service), else those allocated to a service without
	// one (a proxy capturing DNS), else the default address
	var addrs []string
	if o.ClusterID != "" {
		addrs = svc.ProxyAddresses(o.ClusterID, o.IPMode, o.AutoAllocated)
	} else {
		// clusters in a fixed order: the map's would make the
		// configuration, and its version, change from one build to the next
		for _, c := range slices.Sorted(maps.Keys(svc.ClusterVIPs.Addresses)) {
			addrs = append(addrs, svc.ClusterVIPs.Addresses[c]...)
		}
	}
	for _, a := range addrs {
		if a != "" && a != model.UnspecifiedIP {
			// an IPv6 address in brackets, as a Host header has it
			// (Istio's util.IPv6Compliant)
			if strings.Contains(a, ":") {
				a = "[" + a + "]"
			}
			out = append(out, a)
		}
	}
	return dedupe(out)
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// defaultRetry is the retry policy Istio gives routes without one.
func defaultRetry() *routev3.RetryPolicy {
	a := protoconv.MessageToAny(&previoushosts.PreviousHostsPredicate{})
	return &routev3.RetryPolicy{
		RetryOn:                       "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes",
		NumRetries:                    wrapperspb.UInt32(2),
		RetryHostPredicate:            []*routev3.RetryPolicy_RetryHostPredicate{{Name: "envoy.retry_host_predicates.previous_hosts", ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: a}}},
		HostSelectionRetryMaxAttempts: 5,
	}
}

func defaultRoute(svc *model.Service, port int, o Options) *routev3.Route {
	c := cluster.SubsetKey(cluster.Outbound, "", svc.Hostname, port)
	ra := &routev3.RouteAction{
		ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: c},
		Timeout:          durationpb.New(0),
		// Istio keeps the previous-hosts predicate here even with a hash
		RetryPolicy:    retryPolicy(nil, o.MeshRetry, false),
		MaxGrpcTimeout: durationpb.New(0),
	}
	if o.ServiceHash != nil {
		if hp := hashPolicy(o.ServiceHash(svc, port)); hp != nil {
			ra.HashPolicy = []*routev3.RouteAction_HashPolicy{hp}
		}
	}
	return &routev3.Route{
		Name:      DefaultRoute,
		Match:     &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action:    &routev3.Route_Route{Route: ra},
		Decorator: &routev3.Decorator{Operation: svc.Hostname + ":" + strconv.Itoa(port) + "/*"},
	}
}

// CatchAll is the last virtual host of the options' configurations.
func (o Options) CatchAll() *routev3.VirtualHost {
	if o.AllowAnyDynamicDNS {
		return CatchAllDynamicDNS()
	}
	return CatchAll(o.AllowAny)
}

// CatchAllDynamicDNS is the last virtual host under ALLOW_ANY_DYNAMIC_DNS:
// unknown hosts go to the dynamic forward proxy cluster, without timeout.
func CatchAllDynamicDNS() *routev3.VirtualHost {
	return catchAllTo(AllowAnyDynamicDNS, cluster.AllowAnyDynamicDNS)
}

// CatchAll is the last virtual host of a port: unknown hosts go to the
// passthrough cluster, or get a 502 under REGISTRY_ONLY.
func CatchAll(allowAny bool) *routev3.VirtualHost {
	if allowAny {
		return catchAllTo(AllowAny, cluster.Passthrough)
	}
	return &routev3.VirtualHost{Name: BlockAll, Domains: []string{"*"}, IncludeRequestAttemptCount: true,
		Routes: []*routev3.Route{{
			Name:   BlockAll,
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 502}},
		}}}
}

// catchAllTo is a catch-all virtual host, and its one route, named name,
// sending every request to a cluster without timeout.
func catchAllTo(name, clusterName string) *routev3.VirtualHost {
	return &routev3.VirtualHost{Name: name, Domains: []string{"*"}, IncludeRequestAttemptCount: true,
		Routes: []*routev3.Route{{
			Name:  name,
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: clusterName},
				Timeout:          durationpb.New(0),
				MaxGrpcTimeout:   durationpb.New(0),
			}},
		}}}
}

// configMetadata names the VirtualService a route came from.
func configMetadata(vs *config.Config) *core.Metadata {
	path := "/apis/" + vs.GroupVersionKind.GroupVersion() + "/namespaces/" + vs.Namespace + "/virtual-service/" + vs.Name
	return &core.Metadata{FilterMetadata: map[string]*structpb.Struct{
		"istio": {Fields: map[string]*structpb.Value{"config": structpb.NewStringValue(path)}},
	}}
}

func durationOrZero(d *durationpb.Duration) *durationpb.Duration {
	if d == nil {
		return durationpb.New(0)
	}
	return d
}

// translateVirtualService turns the HTTP routes of a VirtualService into
// Envoy routes for one port; routes whose matches exclude the port, the
// proxy's labels or its gateway are skipped.
func translateVirtualService(vs *config.Config, port int, o Options) []*routev3.Route {
	spec, ok := vs.Spec.(*networking.VirtualService)
	if !ok {
		return nil
	}
	var out []*routev3.Route
	for _, hr := range spec.Http {
		matches := applicableMatches(hr.Match, port, o)
		if len(hr.Match) > 0 && len(matches) == 0 {
			continue
		}
		if len(matches) == 0 {
			matches = []*networking.HTTPMatchRequest{nil}
		}
		catchAll := len(hr.Match) == 0
		for _, m := range matches {
			r := translateRoute(hr, m, port, vs, o)
			if r == nil {
				continue
			}
			r.Metadata = configMetadata(vs)
			out = append(out, r)
			if isCatchAllRoute(r) {
				// Istio's BuildHTTPRoutesForVirtualService stops here: no
				// later match or route is ever reached
				catchAll = true
				break
			}
		}
		if catchAll {
			break // a route without matches catches everything after it
		}
	}
	return out
}

func applicableMatches(ms []*networking.HTTPMatchRequest, port int, o Options) []*networking.HTTPMatchRequest {
	var out []*networking.HTTPMatchRequest
	for _, m := range ms {
		if m.Port != 0 && int(m.Port) != port {
			continue
		}
		if len(m.Gateways) > 0 {
			// a match naming gateways selects by them alone (Istio's
			// sourceMatchHTTP)
			if !contains(m.Gateways, o.Gateway) {
				continue
			}
		} else if !sourceMatch(m, o.ProxyLabels, o.ProxyNamespace) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// sourceMatch tells a match without gateways that selects the proxy by
// its labels and namespace.
func sourceMatch(m *networking.HTTPMatchRequest, labels map[string]string, namespace string) bool {
	return labelsMatch(m.SourceLabels, labels) && (m.SourceNamespace == "" || m.SourceNamespace == namespace)
}

func labelsMatch(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
