package debug

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"sort"
	"strings"
	"time"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/resource"
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
	// config_dump, edsz, push_status, pushcontext; nil: not served).
	XDS XDSSource
	// Pushz serves /debug/pushz (the push engine's record; nil: not served).
	Pushz http.HandlerFunc
	// CA is the certificate authority (/debug/ca; nil: not served).
	CA CASource
	// Authenticate identifies a caller that is not on loopback (a bearer
	// service-account token, as for xDS) and returns the namespace of its
	// identity; nil: only loopback callers are served. Callers of
	// SystemNamespace see everything; others only the config_dump and edsz
	// of proxies in their own namespace.
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
}

type debugEndpoint struct {
	help string
	h    http.HandlerFunc
}

// New builds the debug endpoints.
func New(opts Options) *Debug {
	d := &Debug{opts: opts, handlers: map[string]debugEndpoint{}}
	d.add("configz", "every stored object in Kubernetes shape", d.configz)
	d.add("mesh", "the active MeshConfig", d.mesh)
	d.add("krtz", "the collections, their state and dependencies", d.krtz)
	d.add("resourcesz", "the kinds the store holds", d.resourcesz)
	d.add("warningz", "current configuration problems: dropped fields, warnings, rejected documents, mesh errors", d.warningz)
	d.add("list", "the debug endpoints (JSON)", d.list)
	if opts.XDS != nil {
		d.add("adsz", "connected proxies, their metadata and watches", d.adsz)
		d.add("syncz", "per proxy and type: what was sent and acknowledged", d.syncz)
		d.add("connections", "connection IDs and peer addresses", d.connections)
		d.add("config_dump", "what a proxy would be sent now (?proxyID=<pod>.<namespace>)", d.configDumpHandler)
		d.add("edsz", "the endpoints a proxy would be sent now (?proxyID=<pod>.<namespace>)", d.edsz)
		d.add("push_status", "the problems the current push context found", d.pushStatus)
		d.add("pushcontext", "what the current push context holds", d.pushContext)
	}
	if opts.CA != nil {
		d.add("ca", "the certificate authority: trust domain, root certificate (PEM) and its expiry", d.ca)
	}
	if opts.Pushz != nil {
		d.add("pushz", "recent pushes and suppressed updates", opts.Pushz)
	}
	d.add("registryz", "every service of every registry", d.registryz)
	d.add("endpointShardz", "the endpoints of every service, by namespace and shard", d.endpointShardz)
	return d
}

func (d *Debug) add(name, help string, h http.HandlerFunc) {
	d.handlers[name] = debugEndpoint{help: help, h: h}
}

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
// may read, for the proxies of its own namespace (?proxyID=<pod>.<ns>).
var namespaceScoped = map[string]bool{"config_dump": true, "edsz": true}

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
		if ns == d.opts.SystemNamespace || (namespaceScoped[name] && namespaceOf(r.URL.Query().Get("proxyID")) == ns) {
			h.ServeHTTP(w, r)
			return
		}
		http.Error(w, "the caller's namespace "+ns+" may not read "+r.URL.Path+" (only config_dump and edsz of its own proxies)", http.StatusForbidden)
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

func (d *Debug) names() []string {
	names := make([]string, 0, len(d.handlers))
	for n := range d.handlers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (d *Debug) index(w http.ResponseWriter, r *http.Request) {
	if p := strings.TrimSuffix(r.URL.Path, "/"); p != "/debug" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	b.WriteString("<html><head><title>istiod debug</title></head><body><h1>istiod debug endpoints</h1><table>\n")
	for _, n := range d.names() {
		b.WriteString(`<tr><td><a href="/debug/` + n + `">` + n + "</a></td><td>" + d.handlers[n].help + "</td></tr>\n")
	}
	b.WriteString("</table></body></html>\n")
	_, _ = w.Write([]byte(b.String()))
}

func (d *Debug) list(w http.ResponseWriter, r *http.Request) {
	names := d.names()
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "/debug/" + n
	}
	writeJSON(w, r, out)
}

// configz lists every stored object in its Kubernetes shape, walking the
// store's schemas in order.
func (d *Debug) configz(w http.ResponseWriter, r *http.Request) {
	out := make([]json.RawMessage, 0)
	if d.opts.Store != nil {
		d.opts.Store.Schemas().ForEach(func(s resource.Schema) bool {
			for _, c := range d.opts.Store.List(s.GroupVersionKind(), "") {
				b, err := kubernetesJSON(c)
				if err != nil {
					debugLog.Warnf("configz: %v", err)
					continue
				}
				out = append(out, b)
			}
			return false
		})
	}
	writeJSON(w, r, out)
}

// kubernetesJSON renders a config as Istio's configz does: the Kubernetes
// shape with object keys sorted at every level (apiVersion, kind, metadata,
// spec, status).
func kubernetesJSON(c config.Config) (json.RawMessage, error) {
	k, err := crd.ConvertConfig(c)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	var generic map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return json.Marshal(generic)
}

func (d *Debug) mesh(w http.ResponseWriter, r *http.Request) {
	if d.opts.Mesh == nil {
		http.Error(w, "no mesh config", http.StatusServiceUnavailable)
		return
	}
	b, err := crd.MarshalSpec(d.opts.Mesh())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, r, b)
}

func (d *Debug) krtz(w http.ResponseWriter, r *http.Request) {
	if d.opts.Collections == nil {
		writeJSON(w, r, []any{})
		return
	}
	writeJSON(w, r, d.opts.Collections)
}

func (d *Debug) resourcesz(w http.ResponseWriter, r *http.Request) {
	out := make([]config.GroupVersionKind, 0)
	if d.opts.Store != nil {
		for _, s := range d.opts.Store.Schemas().All() {
			out = append(out, s.GroupVersionKind())
		}
	}
	writeJSON(w, r, out)
}

func (d *Debug) warningz(w http.ResponseWriter, r *http.Request) {
	out := make([]diag.Problem, 0)
	if d.opts.Problems != nil {
		out = append(out, d.opts.Problems.List()...)
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

// ca shows the root that workloads must trust: in a cluster it is also in
// every namespace's istio-ca-root-cert ConfigMap; without one, here (and in
// the CA directory).
func (d *Debug) ca(w http.ResponseWriter, r *http.Request) {
	type root struct {
		Subject  string    `json:"subject"`
		NotAfter time.Time `json:"notAfter"`
	}
	out := struct {
		TrustDomain string `json:"trustDomain"`
		SelfSigned  bool   `json:"selfSigned"`
		Roots       []root `json:"roots"`
		RootCert    string `json:"rootCert"`
	}{TrustDomain: d.opts.CA.TrustDomain(), SelfSigned: d.opts.CA.SelfSigned(), Roots: []root{}, RootCert: string(d.opts.CA.RootCertPEM())}
	for _, c := range d.opts.CA.RootCerts() {
		out.Roots = append(out.Roots, root{Subject: c.Subject.String(), NotAfter: c.NotAfter})
	}
	writeJSON(w, r, out)
}
