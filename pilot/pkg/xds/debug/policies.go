package debug

import (
	"net/http"
	"slices"
	"strings"

	telemetry "istio.io/api/telemetry/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// namedPolicy is one Telemetry of Istio's Telemetries view: its name,
// namespace and spec (rendered by the API types' own JSON marshalling, as
// Istio's).
type namedPolicy struct {
	Name      string      `json:"name"`
	Namespace string      `json:"namespace"`
	Spec      config.Spec `json:"spec"`
}

// authorizationPolicies is Istio's model.AuthorizationPolicies.
type authorizationPolicies struct {
	NamespaceToPolicies map[string][]authzPolicy `json:"namespace_to_policies"`
	RootNamespace       string                   `json:"root_namespace"`
}

// authzPolicy is one AuthorizationPolicy of Istio's view (annotations
// rendered even when empty, as null).
type authzPolicy struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Annotations map[string]string `json:"annotations"`
	Spec        config.Spec       `json:"spec"`
}

// telemetries is Istio's model.Telemetries.
type telemetries struct {
	NamespaceToTelemetries map[string][]namedPolicy `json:"namespace_to_telemetries"`
	RootNamespace          string                   `json:"root_namespace"`
}

// policiesOf lists the objects of a kind of the push context's store,
// oldest first (then by name and namespace), as Istio orders policies.
func (d *Debug) policiesOf(pc *model.PushContext, k config.GroupVersionKind) []config.Config {
	store := d.opts.Store
	if pc != nil && pc.Environment() != nil && pc.Environment().ConfigStore() != nil {
		store = pc.Environment().ConfigStore()
	}
	if store == nil {
		return nil
	}
	out := slices.Clone(store.List(k, ""))
	slices.SortFunc(out, func(a, b config.Config) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace, b.Namespace)
	})
	return out
}

func (d *Debug) authorizationPolicies(pc *model.PushContext) authorizationPolicies {
	out := authorizationPolicies{NamespaceToPolicies: map[string][]authzPolicy{}, RootNamespace: pc.RootNamespace()}
	for _, c := range d.policiesOf(pc, gvk.AuthorizationPolicy) {
		out.NamespaceToPolicies[c.Namespace] = append(out.NamespaceToPolicies[c.Namespace],
			authzPolicy{Name: c.Name, Namespace: c.Namespace, Annotations: c.Annotations, Spec: c.Spec})
	}
	return out
}

// authorizationz serves Istio's view: every AuthorizationPolicy by
// namespace, and the root namespace.
func (d *Debug) authorizationz(w http.ResponseWriter, r *http.Request) {
	pc := d.opts.XDS.PushContext()
	if pc == nil {
		http.Error(w, "no push context yet", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, r, struct {
		AuthorizationPolicies authorizationPolicies `json:"authorization_policies"`
	}{d.authorizationPolicies(pc)})
}

// pushContext serves Istio's view of the push context: the authorization
// policies and the network gateways (those EDS uses, with an IP address,
// and all of them).
func (d *Debug) pushContext(w http.ResponseWriter, r *http.Request) {
	pc := d.opts.XDS.PushContext()
	if pc == nil {
		http.Error(w, "no push context yet", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, r, struct {
		AuthorizationPolicies authorizationPolicies
		NetworkGateways       []model.NetworkGateway
		UnresolvedGateways    []model.NetworkGateway
	}{AuthorizationPolicies: d.authorizationPolicies(pc), NetworkGateways: pc.NetworkGateways().All(),
		UnresolvedGateways: pc.UnresolvedNetworkGateways()})
}

// telemetryLevels is Istio's key of the Telemetry resources that apply to
// a proxy: the root namespace's, the proxy namespace's (Proxy), a
// waypoint's service namespace's (Namespace) and the workload's.
type telemetryLevels struct {
	Root      types.NamespacedName
	Proxy     types.NamespacedName
	Namespace types.NamespacedName
	Workload  types.NamespacedName
}

// computedTelemetry is what Istio's telemetryz shows of one proxy: the
// levels, and the metrics, access logging and tracing of each, broadest
// first.
type computedTelemetry struct {
	telemetryLevels
	Metrics []any
	Logging []computedLogging
	Tracing []any
}

type computedLogging struct {
	telemetryLevels
	Logging []any
}

// telemetryz serves Istio's view: every Telemetry by namespace, or, with
// ?proxyID=, the Telemetry resources of a connected proxy by level.
func (d *Debug) telemetryz(w http.ResponseWriter, r *http.Request) {
	pc := d.opts.XDS.PushContext()
	if pc == nil {
		http.Error(w, "no push context yet", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Query().Get("proxyID") == "" {
		out := telemetries{NamespaceToTelemetries: map[string][]namedPolicy{}, RootNamespace: pc.RootNamespace()}
		for _, c := range d.policiesOf(pc, gvk.Telemetry) {
			out.NamespaceToTelemetries[c.Namespace] = append(out.NamespaceToTelemetries[c.Namespace],
				namedPolicy{Name: c.Name, Namespace: c.Namespace, Spec: c.Spec})
		}
		writeJSON(w, r, struct {
			Telemetries telemetries `json:"telemetries"`
		}{out})
		return
	}
	c, ok := d.proxyConnection(w, r)
	if !ok {
		return
	}
	writeJSON(w, r, computedTelemetryOf(pc.Telemetry(c.Proxy)))
}

// computedTelemetryOf lays out the Telemetry resources of a proxy as
// Istio's: each level's metrics and tracing appended, broadest first; the
// access logging of each level apart with its level (the proxy
// namespace's under no level, as Istio's).
func computedTelemetryOf(l model.LayeredPolicies) computedTelemetry {
	out := computedTelemetry{Metrics: []any{}, Logging: []computedLogging{}, Tracing: []any{}}
	for _, level := range []struct {
		cfg *config.Config
		key *types.NamespacedName
		// logKey is the level under which Istio lists the access logging
		logKey func(types.NamespacedName) telemetryLevels
	}{
		{l.Root, &out.Root, func(n types.NamespacedName) telemetryLevels { return telemetryLevels{Root: n} }},
		{l.Namespace, &out.Proxy, func(types.NamespacedName) telemetryLevels { return telemetryLevels{} }},
		{l.Workload, &out.Workload, func(n types.NamespacedName) telemetryLevels { return telemetryLevels{Workload: n} }},
	} {
		if level.cfg == nil {
			continue
		}
		name := types.NamespacedName{Name: level.cfg.Name, Namespace: level.cfg.Namespace}
		*level.key = name
		m, lg, tr := telemetryParts(level.cfg.Spec)
		out.Metrics = append(out.Metrics, m...)
		out.Tracing = append(out.Tracing, tr...)
		if len(lg) > 0 {
			out.Logging = append(out.Logging, computedLogging{telemetryLevels: level.logKey(name), Logging: lg})
		}
	}
	return out
}

// telemetryParts are the metrics, access logging and tracing of a
// Telemetry spec.
func telemetryParts(spec config.Spec) (metrics, logging, tracing []any) {
	t, ok := spec.(*telemetry.Telemetry)
	if !ok {
		return nil, nil, nil
	}
	for _, m := range t.GetMetrics() {
		metrics = append(metrics, m)
	}
	for _, l := range t.GetAccessLogging() {
		logging = append(logging, l)
	}
	for _, tr := range t.GetTracing() {
		tracing = append(tracing, tr)
	}
	return metrics, logging, tracing
}
