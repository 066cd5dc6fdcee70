package debug

import (
	"net/http"
	"sort"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// connectionz is one connection of /debug/connectionz: what Istio's adsz,
// syncz and connections show of it together, with what they leave out
// (the protocol, the proxy's addresses and namespace, per type the
// version sent, a status word and the last NACK's detail, and the
// resources held back for failing validation).
type connectionz struct {
	ConnectionID string         `json:"connectionId"`
	ConnectedAt  time.Time      `json:"connectedAt"`
	PeerAddress  string         `json:"address"`
	Delta        bool           `json:"delta"`
	Proxy        string         `json:"proxy"`
	ProxyType    model.NodeType `json:"proxyType"`
	IPAddresses  []string       `json:"ipAddresses"`
	Namespace    string         `json:"namespace"`
	// Identity is the identity the caller proved over TLS
	// (<namespace>/<service account>; empty on the plaintext port).
	Identity string            `json:"identity,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Metadata map[string]any    `json:"metadata,omitempty"`
	Types    []typeStatus      `json:"types"`
}

// typeStatus is one watched type of a connection.
type typeStatus struct {
	Type string `json:"type"`
	// Names are the names subscribed, ["*"] for a wildcard subscription.
	Names       []string `json:"names"`
	VersionSent string   `json:"versionSent"`
	NonceSent   string   `json:"nonceSent"`
	NonceAcked  string   `json:"nonceAcked"`
	// Status: SYNCED (the last response acked), STALE (sent, not yet
	// acked), NACKED (rejected), NOT SENT.
	Status   string            `json:"status"`
	LastSent *time.Time        `json:"lastSent,omitempty"`
	LastNACK string            `json:"lastNack,omitempty"`
	Held     map[string]string `json:"held,omitempty"`
}

// connectionz lists every connection with its proxy and the state of each
// type it watches.
func (d *Debug) connectionz(w http.ResponseWriter, r *http.Request) {
	out := make([]connectionz, 0)
	for _, c := range d.opts.XDS.ConnectionSnapshots() {
		p := c.Proxy
		cz := connectionz{ConnectionID: c.ID, ConnectedAt: c.ConnectedAt, PeerAddress: c.PeerAddr, Delta: c.Delta,
			Proxy: p.ID, ProxyType: p.Type, IPAddresses: p.IPAddresses, Namespace: p.ConfigNamespace, Labels: p.Labels,
			Types: []typeStatus{}}
		if id := p.VerifiedIdentity; id != nil {
			cz.Identity = id.Namespace + "/" + id.ServiceAccount
		}
		if p.Metadata != nil {
			cz.Metadata = p.Metadata.Raw
		}
		for _, wr := range c.Watches {
			cz.Types = append(cz.Types, statusOf(wr))
		}
		out = append(out, cz)
	}
	writeJSON(w, r, out)
}

func statusOf(wr *xds.WatchedResource) typeStatus {
	names := wr.Names()
	if wr.Wildcard {
		names = []string{"*"}
	}
	sort.Strings(names)
	ts := typeStatus{Type: xds.ShortType(wr.TypeURL), Names: names, VersionSent: wr.VersionSent,
		NonceSent: wr.NonceSent, NonceAcked: wr.NonceAcked, LastNACK: wr.LastNACK, Held: wr.Held}
	if !wr.LastSent.IsZero() {
		t := wr.LastSent
		ts.LastSent = &t
	}
	switch {
	case wr.LastNACK != "":
		ts.Status = "NACKED"
	case wr.NonceSent == "":
		ts.Status = "NOT SENT"
	case wr.NonceSent == wr.NonceAcked:
		ts.Status = "SYNCED"
	default:
		ts.Status = "STALE"
	}
	return ts
}
