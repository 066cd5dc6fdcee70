package debug

import (
	"net/http"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// ClusterInfo is one cluster of /debug/clusterz, as Istio's cluster
// debug info: its ID, the remote secret it came from ("" for the cluster
// istiod runs in) and whether its informers have synced ("synced",
// "syncing").
type ClusterInfo struct {
	ID         string `json:"id"`
	SecretName string `json:"secretName"`
	SyncStatus string `json:"syncStatus"`
}

// The sync states of ClusterInfo.
const (
	ClusterSynced  = "synced"
	ClusterSyncing = "syncing"
)

// clusterz lists the clusters istiod reads; without a cluster source (no
// Kubernetes client) it answers 400, as Istio does without its
// multicluster controller.
func (d *Debug) clusterz(w http.ResponseWriter, r *http.Request) {
	if d.opts.Clusters == nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	out := d.opts.Clusters()
	if out == nil {
		out = []ClusterInfo{}
	}
	writeJSON(w, r, out)
}

// networkz lists the network gateways of the current snapshot in Istio's
// shape (its NetworkGateway struct, sorted by address and port; null when
// there is none, as Istio writes it).
func (d *Debug) networkz(w http.ResponseWriter, r *http.Request) {
	var out []model.NetworkGateway
	if d.opts.XDS != nil {
		out = d.opts.XDS.PushContext().NetworkGateways().All()
	}
	writeJSON(w, r, out)
}

// mcsz lists the Kubernetes MCS services (ServiceExports and
// ServiceImports): none, as this control plane reads neither (null, as
// Istio writes an empty list).
func (d *Debug) mcsz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, []any(nil))
}

// ambientz lists the ambient index: its workloads, services and policies.
// This control plane serves no ambient data plane, so the lists are
// empty, as Istio's without ambient workloads.
func (d *Debug) ambientz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, struct {
		Workloads []any `json:"workloads"`
		Services  []any `json:"services"`
		Policies  []any `json:"policies"`
	}{})
}

// cachez shows Istio's shared xDS cache. The generators here cache per
// push context, inside each generator, and keep no cache across
// snapshots, so there is nothing listed: an empty map by type, sizes of
// zero, and nothing to clear.
func (d *Debug) cachez(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Get("clear") != "":
		_, _ = w.Write([]byte("Nothing to clear: istiod caches generated resources per push context only\n"))
	case q.Get("sizes") != "":
		writeJSON(w, r, map[string]string{"total": "0B"})
	default:
		writeJSON(w, r, map[string][]string{})
	}
}

// inject serves the injection templates (404 without an injector).
func (d *Debug) inject(w http.ResponseWriter, r *http.Request) {
	if d.opts.Inject == nil {
		http.NotFound(w, r)
		return
	}
	d.opts.Inject(w, r)
}
