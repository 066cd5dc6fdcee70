package debug

import "net/http"

// pushStatus serves /debug/push_status: the problems the current
// PushContext found (duplicate domains, subsets without endpoints, routes to
// unknown hosts), in Istio's shape.
func (d *Debug) pushStatus(w http.ResponseWriter, r *http.Request) {
	pc := d.opts.XDS.PushContext()
	if pc == nil {
		http.Error(w, "no push context yet", http.StatusServiceUnavailable)
		return
	}
	b, err := pc.StatusJSON()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// indexz serves /debug/indexz: what the current snapshot holds and which
// indexes its last build rebuilt or reused.
func (d *Debug) indexz(w http.ResponseWriter, r *http.Request) {
	pc := d.opts.XDS.PushContext()
	if pc == nil {
		http.Error(w, "no push context yet", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, r, struct {
		Version string `json:"version"`
		any
	}{pc.PushVersion(), pc.Summary()})
}
