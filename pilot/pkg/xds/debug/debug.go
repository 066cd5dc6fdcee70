package debug

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"html"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"sort"
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/log"
)

var debugLog = log.RegisterScope("debug", "debug endpoints")

// Options are the sources the debug endpoints read.
type Options struct {
	// Store is the aggregate config store (/debug/configz, /debug/resourcesz).
	Store model.ConfigStore
	// Mesh returns the active mesh config (/debug/mesh).
	Mesh func() *meshconfig.MeshConfig
	// Collections renders the collections registry (/debug/krtz).
	Collections json.Marshaler
	// Problems is the board of current configuration problems (/debug/warningz).
	Problems *diag.Board
	// Profile enables /debug/pprof/*.
	Profile bool
	// Registry is the service registries' view (/debug/registryz,
	// /debug/endpointShardz).
	Registry RegistryDebugSource
	// XDS is the ADS server's state (/debug/adsz, syncz, connections,
	// connectionz, config_dump, edsz, ecdsz, ndsz, sidecarz, instancesz,
	// push_status, pushcontext, indexz, authorizationz, telemetryz; nil:
	// not served).
	XDS XDSSource
	// PushAll pushes the current state to every connected proxy
	// (/debug/adsz?push=true; nil: that query is refused).
	PushAll func()
	// Clusters lists the clusters istiod reads (/debug/clusterz; nil:
	// answered 400, as Istio does without a multicluster controller).
	Clusters func() []ClusterInfo
	// Inject serves /debug/inject (the injection templates; nil: 404).
	Inject http.HandlerFunc
	// Pushz serves /debug/pushz (the push engine's record; nil: not served).
	Pushz http.HandlerFunc
	// CA is the certificate authority (/debug/ca; nil: not served).
	CA CASource
	// Authenticate identifies a caller that is not on loopback (a bearer
	// service-account token, as for xDS) and returns the namespace of its
	// identity; nil: only loopback callers are served. Callers of
	// SystemNamespace see everything; others only the config_dump, edsz
	// and ndsz of proxies in their own namespace.
	Authenticate func(r *http.Request) (namespace string, err error)
	// SystemNamespace is istiod's namespace.
	SystemNamespace string
	// NoAuth serves every caller without authentication
	// (ENABLE_DEBUG_ENDPOINT_AUTH=false).
	NoAuth bool
}

// CASource is what /debug/ca shows of the certificate authority.
type CASource interface {
	TrustDomain() string
	SelfSigned() bool
	RootCertPEM() []byte
	RootCerts() []*x509.Certificate
}

// XDSSource is what the xDS debug endpoints read: copies of the ADS
// server's state, never its internals.
type XDSSource interface {
	// ConnectionSnapshots copies every connection's state.
	ConnectionSnapshots() []xds.ConnectionSnapshot
	// GenerateFor generates a type for a connected proxy from the current
	// snapshot (read-only results).
	GenerateFor(proxyID, typeURL string) (xds.Generated, bool, error)
	// PushContext is the current snapshot (nil before the first).
	PushContext() *model.PushContext
}

var _ XDSSource = (*xds.DiscoveryServer)(nil)

// Debug serves the debug endpoints.
type Debug struct {
	opts     Options
	handlers map[string]debugEndpoint
	// variants are entries of the index and of /debug/list that are a
	// query of another endpoint ("adsz?push=true"), as Istio lists them
	variants map[string]string
}

type debugEndpoint struct {
	help string
	h    http.HandlerFunc
}

// New builds the debug endpoints: Istio's, each with the shape of Istio
// 1.31's answer, and ours (warningz, connectionz, indexz, pushz, ca,
// and the per-proxy reports added by AddPolicyz and AddProxyTelemetryz).
func New(opts Options) *Debug {
	d := &Debug{opts: opts, handlers: map[string]debugEndpoint{}, variants: map[string]string{}}
	d.add("configz", "every stored object in Kubernetes shape", d.configz)
	d.add("mesh", "the active MeshConfig", d.mesh)
	d.add("krtz", "the collections, their state and dependencies", d.krtz)
	d.add("resourcesz", "the kinds the store holds", d.resourcesz)
	d.add("warningz", "current configuration problems: dropped fields, warnings, rejected documents, mesh errors", d.warningz)
	d.add("list", "the debug endpoints (JSON)", d.list)
	d.add("registryz", "every service of every registry", d.registryz)
	d.add("endpointShardz", "the endpoints of every service, by namespace and shard", d.endpointShardz)
	d.add("endpointz", "the same as endpointShardz (Istio's older name)", d.endpointShardz)
	d.add("clusterz", "the clusters istiod reads endpoints from, with their sync status", d.clusterz)
	d.add("networkz", "the cross-network gateways", d.networkz)
	d.add("mcsz", "the Kubernetes multi-cluster (MCS) services", d.mcsz)
	d.add("ambientz", "the ambient workloads, services and policies", d.ambientz)
	d.add("cachez", "the shared xDS cache, by type", d.cachez)
	d.listVariant("cachez?sizes=true", "the size of the shared xDS cache, by type")
	d.listVariant("cachez?clear=true", "clear the shared xDS cache")
	d.add("inject", "the active injection templates by name", d.inject)
	if opts.XDS != nil {
		d.add("adsz", "connected proxies, their metadata and watches (?proxyID= one of them)", d.adsz)
		d.listVariant("adsz?push=true", "push the current state to every connected proxy")
		d.add("syncz", "per proxy: what was sent and acknowledged of each type (?namespace= the proxies of one)", d.syncz)
		d.add("connections", "the connected clients", d.connections)
		d.add("connectionz", "per connection: the proxy, and per type the names watched, what was sent and acknowledged, the last NACK", d.connectionz)
		d.add("config_dump", "what a proxy would be sent now (?proxyID=<pod>.<namespace>)", d.configDumpHandler)
		d.add("edsz", "the endpoints a proxy would be sent now (?proxyID=<pod>.<namespace>)", d.typedConfigDump("eds"))
		d.add("ecdsz", "the extension configs a proxy would be sent now (?proxyID=<pod>.<namespace>)", d.typedConfigDump("ecds"))
		d.add("ndsz", "the name table a proxy would be sent now (?proxyID=<pod>.<namespace>)", d.typedConfigDump("nds"))
		d.add("sidecarz", "the sidecar scope of a proxy (?proxyID=<pod>.<namespace>)", d.sidecarz)
		d.add("instancesz", "per connected proxy: the services and ports its workload serves", d.instancesz)
		d.add("push_status", "the problems the current push context found", d.pushStatus)
		d.add("pushcontext", "the authorization policies and network gateways of the current push context", d.pushContext)
		d.add("indexz", "what the current push context holds and which indexes its last build rebuilt or reused", d.indexz)
		d.add("authorizationz", "the authorization policies by namespace", d.authorizationz)
		d.add("telemetryz", "the Telemetry resources by namespace, or those of a proxy (?proxyID=<pod>.<namespace>)", d.telemetryz)
	}
	if opts.CA != nil {
		d.add("ca", "the certificate authority: trust domain, root certificate (PEM) and its expiry", d.ca)
	}
	if opts.Pushz != nil {
		d.add("pushz", "recent pushes and suppressed updates", opts.Pushz)
	}
	return d
}

func (d *Debug) add(name, help string, h http.HandlerFunc) {
	d.handlers[name] = debugEndpoint{help: help, h: h}
}

// listVariant lists a query of an endpoint ("adsz?push=true") in the index
// and /debug/list; the endpoint serves it.
func (d *Debug) listVariant(name, help string) { d.variants[name] = help }

// Install mounts the endpoints under /debug/ on mux. Loopback callers are
// always served (but 127.0.0.6, Envoy's passthrough source: see
// fromLoopback); others must authenticate (see Options.Authenticate).
func (d *Debug) Install(mux *http.ServeMux) {
	mux.Handle("/debug", d.guard("", http.HandlerFunc(d.index)))
	mux.Handle("/debug/", d.guard("", http.HandlerFunc(d.index)))
	for name, e := range d.handlers {
		mux.Handle("/debug/"+name, d.guard(name, e.h))
	}
	if d.opts.Profile {
		mux.Handle("/debug/pprof/", d.guard("pprof", http.HandlerFunc(pprof.Index)))
		mux.Handle("/debug/pprof/cmdline", d.guard("pprof", http.HandlerFunc(pprof.Cmdline)))
		mux.Handle("/debug/pprof/profile", d.guard("pprof", http.HandlerFunc(pprof.Profile)))
		mux.Handle("/debug/pprof/symbol", d.guard("pprof", http.HandlerFunc(pprof.Symbol)))
		mux.Handle("/debug/pprof/trace", d.guard("pprof", http.HandlerFunc(pprof.Trace)))
	}
}

// namespaceScoped are the endpoints a caller outside the system namespace
// may read, for the proxies of its own namespace (?proxyID=<pod>.<ns>), as
// Istio's activeNamespaceDebuggers.
var namespaceScoped = map[string]bool{"config_dump": true, "edsz": true, "ndsz": true}

// callerNamespaceKey holds, in a request's context, the namespace of an
// authenticated caller outside the system namespace: the proxies it may
// see. Absent for loopback, system-namespace and unauthenticated
// (NoAuth) callers, who see every proxy.
type callerNamespaceKey struct{}

// guard serves loopback callers, and authenticated ones as their
// namespace allows: 401 without an accepted credential, 403 outside it.
// (Istio serves its debug port 8080 to anyone who reaches it; ours asks
// for the same credentials on every port.)
func (d *Debug) guard(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.opts.NoAuth || fromLoopback(r) {
			h.ServeHTTP(w, r)
			return
		}
		if d.opts.Authenticate == nil {
			http.Error(w, "debug endpoints are only served to localhost", http.StatusForbidden)
			return
		}
		ns, err := d.opts.Authenticate(r)
		if err != nil {
			debugLog.Warnf("refused %s from %s: authentication failure: %v", r.URL.Path, r.RemoteAddr, err)
			http.Error(w, "authentication failure", http.StatusUnauthorized)
			return
		}
		if ns == d.opts.SystemNamespace {
			h.ServeHTTP(w, r)
			return
		}
		if namespaceScoped[name] && namespaceOf(r.URL.Query().Get("proxyID")) == ns {
			h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerNamespaceKey{}, ns)))
			return
		}
		http.Error(w, "the caller's namespace "+ns+" may not read "+r.URL.Path+" (only config_dump, edsz and ndsz of its own proxies)", http.StatusForbidden)
	})
}

// envoyPassthroughSource is the source address Envoy gives inbound traffic
// it passes through to the application (the sidecar's inbound passthrough
// clusters bind upstream connections to it; its IPv6 twin ::6 is no
// loopback address). A request from it arrived at the pod from elsewhere,
// so it is not local.
var envoyPassthroughSource = netip.AddrFrom4([4]byte{127, 0, 0, 6})

// fromLoopback tells whether the TCP peer of r is on this host: any
// loopback address (127.0.0.0/8, ::1, and IPv4-mapped forms) except
// 127.0.0.6. Only the connection's peer counts, never a forwarding header
// (X-Forwarded-For, Forwarded), which the caller writes.
//
// Istio 1.31 trusts the whole of 127.0.0.0/8 (isRequestFromLocalhost in
// pilot/pkg/xds/debug.go). If istiod runs beside a sidecar, every inbound
// request Envoy passes through reaches it from 127.0.0.6, so any caller
// that reaches the pod would be local there; here it must authenticate.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() && ip != envoyPassthroughSource
}

// entries are the names of the index and of /debug/list: the endpoints
// and their listed query variants, sorted.
func (d *Debug) entries() []string {
	names := make([]string, 0, len(d.handlers)+len(d.variants))
	for n := range d.handlers {
		names = append(names, n)
	}
	for n := range d.variants {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (d *Debug) help(name string) string {
	if e, ok := d.handlers[name]; ok {
		return e.help
	}
	return d.variants[name]
}

func (d *Debug) index(w http.ResponseWriter, r *http.Request) {
	if p := strings.TrimSuffix(r.URL.Path, "/"); p != "/debug" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	b.WriteString("<html><head><title>istiod debug</title></head><body><h1>istiod debug endpoints</h1><table>\n")
	for _, n := range d.entries() {
		b.WriteString(`<tr><td><a href="/debug/` + html.EscapeString(n) + `">` + html.EscapeString(n) + "</a></td><td>" + html.EscapeString(d.help(n)) + "</td></tr>\n")
	}
	b.WriteString("</table></body></html>\n")
	_, _ = w.Write([]byte(b.String()))
}

// list serves /debug/list as Istio does: the names of the endpoints
// without their /debug/ prefix, query variants included, sorted, without
// list itself (and pprof).
func (d *Debug) list(w http.ResponseWriter, r *http.Request) {
	out := []string{}
	for _, n := range d.entries() {
		if n != "list" {
			out = append(out, n)
		}
	}
	writeJSON(w, r, out)
}

// writeJSON writes v indented, as Istio's debug endpoints do.
func writeJSON(w http.ResponseWriter, _ *http.Request, v any) {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
	_, _ = w.Write([]byte("\n"))
}
