package debug

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// RegistryDebugSource is what /debug/registryz and /debug/endpointShardz
// read: the joined services and the endpoint index.
type RegistryDebugSource interface {
	// Services lists every service of every registry (read-only).
	Services() []*model.Service
	// EndpointIndex is the index of endpoints by service and shard.
	EndpointIndex() *model.EndpointIndex
}

// registryz lists every service of every registry, sorted by hostname then
// namespace, in the shape of Istio's /debug/registryz.
func (d *Debug) registryz(w http.ResponseWriter, r *http.Request) {
	out := make([]*model.Service, 0)
	if d.opts.Registry != nil {
		out = append(out, d.opts.Registry.Services()...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Hostname != out[j].Hostname {
			return out[i].Hostname < out[j].Hostname
		}
		return out[i].Attributes.Namespace < out[j].Attributes.Namespace
	})
	writeSortedJSON(w, r, out)
}

// endpointShardz lists the endpoint index: hostname → namespace →
// {Shards: {"<provider>/<cluster>": [endpoints]}, ServiceAccounts}.
func (d *Debug) endpointShardz(w http.ResponseWriter, r *http.Request) {
	out := map[string]map[string]model.ShardsView{}
	if d.opts.Registry != nil && d.opts.Registry.EndpointIndex() != nil {
		out = d.opts.Registry.EndpointIndex().Snapshot()
	}
	writeSortedJSON(w, r, out)
}

// writeSortedJSON writes v with the keys of every object sorted, as Istio's
// debug endpoints render these structures.
func writeSortedJSON(w http.ResponseWriter, r *http.Request, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, r, generic)
}
