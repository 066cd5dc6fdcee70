package debug

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/resource"
	"github.com/meshplane/istiod/pkg/diag"
)

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
