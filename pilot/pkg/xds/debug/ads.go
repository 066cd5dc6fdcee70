package debug

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// adsClients is /debug/adsz and /debug/connections in Istio's shape.
type adsClients struct {
	Total   int         `json:"totalClients"`
	Clients []adsClient `json:"clients,omitempty"`
}

// adsClient is one connection of /debug/adsz (all fields) and of
// /debug/connections (the first three).
type adsClient struct {
	ConnectionID string              `json:"connectionId"`
	ConnectedAt  time.Time           `json:"connectedAt"`
	PeerAddress  string              `json:"address"`
	Labels       map[string]string   `json:"labels,omitempty"`
	Metadata     map[string]any      `json:"metadata,omitempty"`
	Locality     *locality           `json:"locality,omitempty"`
	Watches      map[string][]string `json:"watches,omitempty"`
}

// locality is a proxy's locality as Envoy's core.Locality renders through
// encoding/json (Istio's adsz does so).
type locality struct {
	Region  string `json:"region,omitempty"`
	Zone    string `json:"zone,omitempty"`
	SubZone string `json:"sub_zone,omitempty"`
}

func localityOf(p *model.Proxy) *locality {
	parts := strings.SplitN(p.Locality, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return &locality{Region: parts[0], Zone: parts[1], SubZone: parts[2]}
}

// syncStatus is one proxy of /debug/syncz, in Istio's shape: the nonce
// sent and acknowledged of the four main types and ECDS, and of every type
// watched under resources.
type syncStatus struct {
	ClusterID            string                    `json:"cluster_id,omitempty"`
	ProxyID              string                    `json:"proxy,omitempty"`
	ProxyType            model.NodeType            `json:"proxy_type,omitempty"`
	ProxyVersion         string                    `json:"proxy_version,omitempty"`
	IstioVersion         string                    `json:"istio_version,omitempty"`
	ClusterSent          string                    `json:"cluster_sent,omitempty"`
	ClusterAcked         string                    `json:"cluster_acked,omitempty"`
	ListenerSent         string                    `json:"listener_sent,omitempty"`
	ListenerAcked        string                    `json:"listener_acked,omitempty"`
	RouteSent            string                    `json:"route_sent,omitempty"`
	RouteAcked           string                    `json:"route_acked,omitempty"`
	EndpointSent         string                    `json:"endpoint_sent,omitempty"`
	EndpointAcked        string                    `json:"endpoint_acked,omitempty"`
	ExtensionConfigSent  string                    `json:"extensionconfig_sent,omitempty"`
	ExtensionConfigAcked string                    `json:"extensionconfig_acked,omitempty"`
	Resources            map[string]resourceStatus `json:"resources,omitempty"`
}

// resourceStatus is the state of one watched type.
type resourceStatus struct {
	Sent      string    `json:"sent,omitempty"`
	Acked     string    `json:"acked,omitempty"`
	SentTime  time.Time `json:"sentTime"`
	LastError string    `json:"lastError,omitempty"`
}

// adsz lists the connected proxies with their metadata and watches
// (?proxyID= one of them, 404 when it is not connected here), or, with
// ?push=true, pushes the current state to all of them.
func (d *Debug) adsz(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("push") != "" {
		d.pushAll(w)
		return
	}
	conns := d.opts.XDS.ConnectionSnapshots()
	if r.URL.Query().Get("proxyID") != "" {
		c, ok := d.proxyConnection(w, r)
		if !ok {
			return
		}
		conns = []xds.ConnectionSnapshot{c}
	}
	out := adsClients{Total: len(conns)}
	for _, c := range conns {
		p := c.Proxy
		ac := adsClient{ConnectionID: c.ID, ConnectedAt: c.ConnectedAt, PeerAddress: c.PeerAddr, Labels: p.Labels,
			Locality: localityOf(p), Watches: map[string][]string{}}
		if p.Metadata != nil {
			ac.Metadata = p.Metadata.Raw
		}
		for _, wr := range c.Watches {
			ac.Watches[wr.TypeURL] = watchedNames(wr)
		}
		out.Clients = append(out.Clients, ac)
	}
	writeJSON(w, r, out)
}

// watchedNames are the names subscribed, sorted; none for a wildcard
// subscription (Istio's view of a wildcard watch).
func watchedNames(wr *xds.WatchedResource) []string {
	names := []string{}
	if !wr.Wildcard {
		names = append(names, wr.Names()...)
	}
	sort.Strings(names)
	return names
}

func (d *Debug) pushAll(w http.ResponseWriter) {
	if d.opts.PushAll == nil {
		http.Error(w, "pushing from the debug endpoint is not available", http.StatusNotImplemented)
		return
	}
	d.opts.PushAll()
	_, _ = fmt.Fprintf(w, "Pushed to %d servers\n", len(d.opts.XDS.ConnectionSnapshots()))
}

// connections lists the connected clients: connection ID, when and from
// where.
func (d *Debug) connections(w http.ResponseWriter, r *http.Request) {
	conns := d.opts.XDS.ConnectionSnapshots()
	out := adsClients{Total: len(conns)}
	for _, c := range conns {
		out.Clients = append(out.Clients, adsClient{ConnectionID: c.ID, ConnectedAt: c.ConnectedAt, PeerAddress: c.PeerAddr})
	}
	writeJSON(w, r, out)
}

// syncz shows, per proxy (?namespace= of one namespace), the nonce sent
// and acknowledged of each type.
func (d *Debug) syncz(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("namespace")
	out := make([]syncStatus, 0)
	for _, c := range d.opts.XDS.ConnectionSnapshots() {
		p := c.Proxy
		if ns != "" && p.ConfigNamespace != ns {
			continue
		}
		st := syncStatus{ProxyID: p.ID, ProxyType: p.Type, Resources: map[string]resourceStatus{}}
		if p.Metadata != nil {
			st.ClusterID, st.IstioVersion = p.Metadata.ClusterID, p.Metadata.IstioVersion
		}
		for _, wr := range c.Watches {
			st.Resources[wr.TypeURL] = resourceStatus{Sent: wr.NonceSent, Acked: wr.NonceAcked, SentTime: wr.LastSent, LastError: wr.LastNACK}
			switch wr.TypeURL {
			case xds.ClusterType:
				st.ClusterSent, st.ClusterAcked = wr.NonceSent, wr.NonceAcked
			case xds.ListenerType:
				st.ListenerSent, st.ListenerAcked = wr.NonceSent, wr.NonceAcked
			case xds.RouteType:
				st.RouteSent, st.RouteAcked = wr.NonceSent, wr.NonceAcked
			case xds.EndpointType:
				st.EndpointSent, st.EndpointAcked = wr.NonceSent, wr.NonceAcked
			case model.ExtensionConfigTypeURL:
				st.ExtensionConfigSent, st.ExtensionConfigAcked = wr.NonceSent, wr.NonceAcked
			}
		}
		out = append(out, st)
	}
	writeJSON(w, r, out)
}

// findConnection resolves a proxyID as Istio does: the connection of the
// proxy of that ID, else the first whose connection ID contains it. A
// caller restricted to a namespace (see callerNamespaceKey) finds only the
// proxies of that namespace.
func (d *Debug) findConnection(r *http.Request, id string) (xds.ConnectionSnapshot, bool) {
	restricted, _ := r.Context().Value(callerNamespaceKey{}).(string)
	conns := d.opts.XDS.ConnectionSnapshots()
	visible := func(c xds.ConnectionSnapshot) bool {
		return restricted == "" || c.Proxy.ConfigNamespace == restricted
	}
	for _, c := range conns {
		if c.Proxy.ID == id {
			return c, visible(c)
		}
	}
	for _, c := range conns {
		if strings.Contains(c.ID, id) {
			return c, visible(c)
		}
	}
	return xds.ConnectionSnapshot{}, false
}

// proxyConnection is the connection of ?proxyID=: 400 without one, 404
// when no such proxy is connected here (another replica may hold it).
func (d *Debug) proxyConnection(w http.ResponseWriter, r *http.Request) (xds.ConnectionSnapshot, bool) {
	id, ok := proxyID(w, r)
	if !ok {
		return xds.ConnectionSnapshot{}, false
	}
	c, ok := d.findConnection(r, id)
	if !ok {
		http.Error(w, "proxy "+id+" is not connected to this istiod (another replica may hold its connection)", http.StatusNotFound)
		return xds.ConnectionSnapshot{}, false
	}
	return c, true
}

func proxyID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.URL.Query().Get("proxyID")
	if id == "" {
		http.Error(w, "proxyID=<pod>.<namespace> is required", http.StatusBadRequest)
		return "", false
	}
	return id, true
}
