package debug

import (
	"net/http"
	"sort"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// adsClient is one connection in /debug/adsz.
type adsClient struct {
	ConnectionID string              `json:"connectionId"`
	ConnectedAt  time.Time           `json:"connectedAt"`
	PeerAddress  string              `json:"address"`
	Delta        bool                `json:"delta"`
	ProxyType    model.NodeType      `json:"proxyType"`
	IPAddresses  []string            `json:"ipAddresses"`
	Namespace    string              `json:"namespace"`
	Labels       map[string]string   `json:"labels,omitempty"`
	Metadata     map[string]any      `json:"metadata,omitempty"`
	Watches      map[string][]string `json:"watches"`
}

// syncStatus is one connection and type in /debug/syncz.
type syncStatus struct {
	ConnectionID string `json:"connectionId"`
	ProxyID      string `json:"proxy"`
	Type         string `json:"type"`
	VersionSent  string `json:"versionSent"`
	NonceSent    string `json:"nonceSent"`
	NonceAcked   string `json:"nonceAcked"`
	// Status: SYNCED (last response acked), STALE (sent, not yet acked),
	// NACKED (rejected), NOT SENT.
	Status   string `json:"status"`
	LastNACK string `json:"lastNack,omitempty"`
}

// adsz lists connected proxies, their metadata and watches.
func (d *Debug) adsz(w http.ResponseWriter, r *http.Request) {
	out := make([]adsClient, 0)
	for _, c := range d.opts.XDS.ConnectionSnapshots() {
		p := c.Proxy
		ac := adsClient{ConnectionID: c.ID, ConnectedAt: c.ConnectedAt, PeerAddress: c.PeerAddr, Delta: c.Delta,
			ProxyType: p.Type, IPAddresses: p.IPAddresses, Namespace: p.ConfigNamespace, Labels: p.Labels,
			Watches: map[string][]string{}}
		if p.Metadata != nil {
			ac.Metadata = p.Metadata.Raw
		}
		for _, wr := range c.Watches {
			names := wr.Names()
			if wr.Wildcard {
				names = []string{"*"}
			}
			sort.Strings(names)
			ac.Watches[xds.ShortType(wr.TypeURL)] = names
		}
		out = append(out, ac)
	}
	writeJSON(w, r, out)
}

// syncz shows, per connection and type, what was sent and acked.
func (d *Debug) syncz(w http.ResponseWriter, r *http.Request) {
	out := make([]syncStatus, 0)
	for _, c := range d.opts.XDS.ConnectionSnapshots() {
		for _, wr := range c.Watches {
			st := syncStatus{ConnectionID: c.ID, ProxyID: c.Proxy.ID, Type: xds.ShortType(wr.TypeURL), VersionSent: wr.VersionSent,
				NonceSent: wr.NonceSent, NonceAcked: wr.NonceAcked, LastNACK: wr.LastNACK}
			switch {
			case wr.LastNACK != "":
				st.Status = "NACKED"
			case wr.NonceSent == "":
				st.Status = "NOT SENT"
			case wr.NonceSent == wr.NonceAcked:
				st.Status = "SYNCED"
			default:
				st.Status = "STALE"
			}
			out = append(out, st)
		}
	}
	writeJSON(w, r, out)
}

// connections lists connection IDs and peer addresses.
func (d *Debug) connections(w http.ResponseWriter, r *http.Request) {
	type conn struct {
		ID      string `json:"id"`
		Address string `json:"address"`
		Proxy   string `json:"proxy"`
	}
	out := make([]conn, 0)
	for _, c := range d.opts.XDS.ConnectionSnapshots() {
		out = append(out, conn{ID: c.ID, Address: c.PeerAddr, Proxy: c.Proxy.ID})
	}
	writeJSON(w, r, out)
}
