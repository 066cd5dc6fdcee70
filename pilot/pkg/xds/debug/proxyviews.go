package debug

import (
	"net/http"

	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
)

// istioConfig renders a config.Config as Istio's config.Config renders
// through encoding/json: the metadata fields by their tags, then Spec,
// Status and Extra by their Go names.
type istioConfig struct {
	config.Meta
	Spec   config.Spec
	Status config.Status
	Extra  map[string]any
}

func istioConfigOf(c *config.Config) *istioConfig {
	if c == nil {
		return nil
	}
	return &istioConfig{Meta: c.Meta, Spec: c.Spec, Status: c.Status, Extra: c.Extra}
}

// consolidatedRule is a DestinationRule of a sidecar scope as Istio's
// sidecarz renders it: the namespaces it is exported to, the merged rule
// and the rules merged into it.
type consolidatedRule struct {
	ExportTo map[string]struct{}    `json:"exportTo"`
	Rule     *istioConfig           `json:"rule"`
	From     []types.NamespacedName `json:"from"`
}

func consolidatedRuleOf(dr *model.ConsolidatedDestRule) consolidatedRule {
	out := consolidatedRule{ExportTo: map[string]struct{}{}, Rule: istioConfigOf(dr.Rule()), From: dr.From()}
	// the rule's own exportTo (empty: the mesh default applies), "." for
	// a rule with a workload selector
	spec := dr.Spec()
	if spec.GetWorkloadSelector() != nil {
		out.ExportTo["."] = struct{}{}
		return out
	}
	for _, e := range spec.GetExportTo() {
		out.ExportTo[e] = struct{}{}
	}
	return out
}

// sidecarz shows the sidecar scope of a connected proxy
// (?proxyID=<pod>.<namespace>) in the shape of Istio's: the services it
// imports (in all, per egress listener, by hostname), the DestinationRules
// by host, the Sidecar and the outbound traffic policy.
func (d *Debug) sidecarz(w http.ResponseWriter, r *http.Request) {
	c, ok := d.proxyConnection(w, r)
	if !ok {
		return
	}
	pc := d.opts.XDS.PushContext()
	if pc == nil {
		http.Error(w, "no push context yet", http.StatusServiceUnavailable)
		return
	}
	sc := pc.SidecarScope(c.Proxy)
	if sc == nil {
		writeJSON(w, r, nil)
		return
	}
	services := sc.Services()
	byHost := make(map[string]*model.Service, len(services))
	rules := map[string][]consolidatedRule{}
	for _, s := range services {
		byHost[s.Hostname] = s
		for _, dr := range sc.DestinationRules(s.Hostname) {
			rules[s.Hostname] = append(rules[s.Hostname], consolidatedRuleOf(dr))
		}
	}
	perListener := make([][]*model.Service, 0, len(sc.EgressListeners))
	for _, l := range sc.EgressListeners {
		perListener = append(perListener, l.Services())
	}
	var sidecar config.Spec
	if sc.Sidecar != nil {
		sidecar = sc.Sidecar.Spec
	}
	writeSortedJSON(w, r, map[string]any{
		"version":                pc.PushVersion(),
		"name":                   sc.Name,
		"namespace":              sc.Namespace,
		"outboundTrafficPolicy":  sc.OutboundTrafficPolicy,
		"services":               services,
		"egressListenerServices": perListener,
		"servicesByHostname":     byHost,
		"sidecar":                sidecar,
		"destinationRules":       rules,
	})
}

// instancesz lists, per connected proxy, the services (and ports) its
// workload serves, as Istio's: proxy ID → service targets.
func (d *Debug) instancesz(w http.ResponseWriter, r *http.Request) {
	out := map[string][]model.ServiceTarget{}
	pc := d.opts.XDS.PushContext()
	var sd model.ServiceDiscovery
	if pc != nil && pc.Environment() != nil {
		sd = pc.Environment().ServiceDiscovery()
	}
	for _, c := range d.opts.XDS.ConnectionSnapshots() {
		p := c.Proxy
		var targets []model.ServiceTarget
		if sd != nil {
			q := &model.ProxyQuery{ID: p.ID, IPAddresses: p.IPAddresses, Labels: p.Labels, Namespace: p.ConfigNamespace}
			if p.Metadata != nil {
				q.ClusterID = p.Metadata.ClusterID
			}
			targets = sd.GetProxyServiceTargets(q)
		}
		out[p.ID] = targets
	}
	writeSortedJSON(w, r, out)
}
