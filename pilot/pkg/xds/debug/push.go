package xds

import "net/http"

// PushStatusHandler serves /debug/push_status: the problems the current
// PushContext found (duplicate domains, subsets without endpoints, routes to
// unknown hosts), in Istio's shape.
func (s *DiscoveryServer) PushStatusHandler(w http.ResponseWriter, r *http.Request) {
	ps := s.push.Load()
	if ps == nil || ps.ctx == nil {
		http.Error(w, "no push context yet", http.StatusServiceUnavailable)
		return
	}
	b, err := ps.ctx.StatusJSON()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// PushContextHandler serves /debug/pushcontext: what the current snapshot
// holds and which indexes its last build rebuilt or reused.
func (s *DiscoveryServer) PushContextHandler(w http.ResponseWriter, r *http.Request) {
	ps := s.push.Load()
	if ps == nil || ps.ctx == nil {
		http.Error(w, "no push context yet", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, r, struct {
		Version string `json:"version"`
		any
	}{ps.version, ps.ctx.Summary()})
}
