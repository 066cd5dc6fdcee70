package xds

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/diag"
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

// AdszHandler lists connected proxies, their metadata and watches.
func (s *DiscoveryServer) AdszHandler(w http.ResponseWriter, r *http.Request) {
	out := make([]adsClient, 0)
	for _, c := range s.Connections() {
		p := c.Proxy()
		ac := adsClient{ConnectionID: c.ID, ConnectedAt: c.connectedAt, PeerAddress: c.peerAddr, Delta: c.delta,
			ProxyType: p.Type, IPAddresses: p.IPAddresses, Namespace: p.ConfigNamespace, Labels: p.Labels,
			Metadata: p.Metadata.Raw, Watches: map[string][]string{}}
		for _, t := range c.watchedTypes() {
			wr := c.Watched(t)
			names := wr.Names()
			if wr.Wildcard {
				names = []string{"*"}
			}
			sort.Strings(names)
			ac.Watches[ShortType(t)] = names
		}
		out = append(out, ac)
	}
	writeJSON(w, r, out)
}

// SynczHandler shows, per connection and type, what was sent and acked.
func (s *DiscoveryServer) SynczHandler(w http.ResponseWriter, r *http.Request) {
	out := make([]syncStatus, 0)
	for _, c := range s.Connections() {
		for _, t := range c.watchedTypes() {
			wr := c.Watched(t)
			st := syncStatus{ConnectionID: c.ID, ProxyID: c.Proxy().ID, Type: ShortType(t), VersionSent: wr.VersionSent,
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

// ConnectionsHandler lists connection IDs and peer addresses.
func (s *DiscoveryServer) ConnectionsHandler(w http.ResponseWriter, r *http.Request) {
	type conn struct {
		ID      string `json:"id"`
		Address string `json:"address"`
		Proxy   string `json:"proxy"`
	}
	out := make([]conn, 0)
	for _, c := range s.Connections() {
		out = append(out, conn{ID: c.ID, Address: c.peerAddr, Proxy: c.Proxy().ID})
	}
	writeJSON(w, r, out)
}

// RejectedConfig lists, as problems for /debug/warningz, the config proxies
// currently reject: one problem per type and error detail, with how many
// proxies reject it and a few of them. A rejection disappears when the
// proxies accept a later response. A diag.Board provider.
func (s *DiscoveryServer) RejectedConfig() []diag.Problem {
	type rejection struct {
		typ, detail string
	}
	proxies := map[rejection][]string{}
	for _, c := range s.Connections() {
		c.mu.Lock()
		for t, w := range c.watched {
			if w.LastNACK != "" {
				k := rejection{ShortType(t), w.LastNACK}
				proxies[k] = append(proxies[k], c.proxy.ID)
			}
		}
		c.mu.Unlock()
	}
	out := make([]diag.Problem, 0, len(proxies))
	for k, ids := range proxies {
		sort.Strings(ids)
		sample := ids
		if len(sample) > 3 {
			sample = sample[:3]
		}
		msg := fmt.Sprintf("%d proxies reject %s: %s (%s", len(ids), k.typ, k.detail, strings.Join(sample, ", "))
		if len(ids) > len(sample) {
			msg += ", …"
		}
		out = append(out, diag.Problem{Severity: diag.Error, Source: "xds", Subject: "rejected " + k.typ, Message: msg + ")"})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Message < out[j].Message
	})
	return out
}
