package generators

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	rbactcp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	security "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
)

// This file explains the security policy of one proxy for
// /debug/authorizationz: which PeerAuthentications decide the mTLS mode of
// each inbound port, which RequestAuthentications and AuthorizationPolicies
// apply and in which order Envoy evaluates them, the RBAC rules they became
// (Istio's ns[<ns>]-policy[<name>]-rule[<i>] names, and each filter's
// config), and what was lost in translation. It translates exactly as the
// listener generator does (same builders, same snapshot), so the report is
// what the proxy gets. The shape follows `istioctl x authz check` (action,
// policy, rules) with the rest of the picture added.

// PolicyReport is the security policy of one proxy. Lists are in a fixed
// order, so the JSON of one snapshot is always the same.
type PolicyReport struct {
	Proxy         string            `json:"proxy"`
	ProxyType     string            `json:"proxyType"`
	Namespace     string            `json:"namespace"`
	Labels        map[string]string `json:"labels,omitempty"`
	RootNamespace string            `json:"rootNamespace"`
	PushVersion   string            `json:"pushVersion"`

	PeerAuthentication PeerAuthenticationReport `json:"peerAuthentication"`
	// RequestAuthentications apply together (their rules are merged into
	// one jwt_authn filter): workload, namespace, then mesh level.
	RequestAuthentications []RequestAuthenticationEntry `json:"requestAuthentications"`
	// AuthorizationPolicies in evaluation order: CUSTOM, DENY, ALLOW (a
	// request is denied by the first that denies it), then AUDIT (which
	// only logs); within an action, the proxy's namespace then the root
	// namespace, oldest first.
	AuthorizationPolicies []AuthorizationPolicyEntry `json:"authorizationPolicies"`
	// HTTPFilters and TCPFilters are the policy filters of the inbound
	// HTTP and TCP chains, in filter order.
	HTTPFilters []FilterReport `json:"httpFilters"`
	TCPFilters  []FilterReport `json:"tcpFilters"`
	// ProxylessFilters are, for a proxyless gRPC server (node metadata
	// GENERATOR grpc), the RBAC filters of its server listeners: the
	// policies as grpc-go enforces them, which differ from Envoy's.
	ProxylessFilters []FilterReport `json:"proxylessFilters,omitempty"`
	// Warnings are the translation warnings of the proxy's policies.
	Warnings []PolicyWarning `json:"warnings"`
	// Problems are what /debug/warningz says about the proxy's policies.
	Problems []model.PolicyProblem `json:"problems"`
}

// PeerAuthenticationReport is the effective mTLS of the proxy and where it
// comes from.
type PeerAuthenticationReport struct {
	// Workload is the mode of ports without a port-level setting and of
	// the inbound passthrough.
	Workload MTLSDecision `json:"workload"`
	// Ports are the inbound (target) ports of the proxy's services and the
	// ports with a port-level setting, ascending (sidecars only).
	Ports []MTLSDecision `json:"ports"`
	// Policies are the PeerAuthentications that select the proxy: mesh,
	// namespace, then workload level.
	Policies []PeerAuthenticationEntry `json:"policies"`
}

// MTLSDecision is one effective mode and the policy that decided it.
type MTLSDecision struct {
	Port     uint32     `json:"port,omitempty"`
	Protocol string     `json:"protocol,omitempty"`
	Mode     authn.Mode `json:"mode"`
	// Level is default (no policy sets a mode: PERMISSIVE), mesh,
	// namespace, workload or port (a port-level setting).
	Level string `json:"level"`
	// DecidedBy is the namespace/name of the deciding PeerAuthentication.
	DecidedBy string `json:"decidedBy,omitempty"`
}

// PeerAuthenticationEntry is one PeerAuthentication that selects the proxy.
type PeerAuthenticationEntry struct {
	Name          string     `json:"name"`
	Level         string     `json:"level"`
	Mode          string     `json:"mode"`
	PortLevelMtls []PortMode `json:"portLevelMtls,omitempty"`
	Applied       bool       `json:"applied"`
	// Ignored says why the policy, or a part of it, does not apply.
	Ignored string `json:"ignored,omitempty"`
}

// PortMode is a port-level setting as written.
type PortMode struct {
	Port uint32 `json:"port"`
	Mode string `json:"mode"`
}

// RequestAuthenticationEntry is one RequestAuthentication of the proxy.
type RequestAuthenticationEntry struct {
	Name    string   `json:"name"`
	Level   string   `json:"level"`
	Issuers []string `json:"issuers"`
}

// AuthorizationPolicyEntry is one AuthorizationPolicy of the proxy, with
// the RBAC policy names its rules became in the HTTP and TCP filters.
type AuthorizationPolicyEntry struct {
	Name      string   `json:"name"`
	Level     string   `json:"level"`
	Action    string   `json:"action"`
	Provider  string   `json:"provider,omitempty"`
	DryRun    bool     `json:"dryRun,omitempty"`
	Rules     int      `json:"rules"`
	HTTPRules []string `json:"httpRules"`
	TCPRules  []string `json:"tcpRules"`
}

// FilterReport is one policy filter: for RBAC filters the action and the
// names of the enforced and shadow (dry-run, CUSTOM) rules; the config as
// the proxy gets it.
type FilterReport struct {
	Name        string          `json:"name"`
	Action      string          `json:"action,omitempty"`
	Rules       []string        `json:"rules,omitempty"`
	ShadowRules []string        `json:"shadowRules,omitempty"`
	Config      json.RawMessage `json:"config,omitempty"`
}

// PolicyWarning is one authz translation warning, on the chains it
// concerns (http, tcp).
type PolicyWarning struct {
	Chains  []string `json:"chains"`
	Policy  string   `json:"policy"`
	Rule    *int     `json:"rule,omitempty"`
	Field   string   `json:"field,omitempty"`
	Message string   `json:"message"`
}

// ConnectedProxies is what Authorizationz reads of the ADS server.
type ConnectedProxies interface {
	Connections() []*xds.Connection
	PushContext() *model.PushContext
}

var _ ConnectedProxies = (*xds.DiscoveryServer)(nil)

// Authorizationz returns the source of /debug/authorizationz: the
// PolicyReport of the first connected proxy with the ID (<pod>.<namespace>)
// from the current snapshot; connected is false when none is, and the
// report nil before the first snapshot.
func (g *SidecarGenerators) Authorizationz(src ConnectedProxies) func(proxyID string) (report any, connected bool) {
	return func(proxyID string) (any, bool) {
		for _, c := range src.Connections() {
			if p := c.Proxy(); p != nil && p.ID == proxyID {
				push := src.PushContext()
				if push == nil {
					return nil, true
				}
				return g.PolicyReport(push, p), true
			}
		}
		return nil, false
	}
}

// PolicyReport explains the security policy of proxy in push. The report
// is freshly built and owned by the caller.
func (g *SidecarGenerators) PolicyReport(push *model.PushContext, proxy *model.Proxy) *PolicyReport {
	root := push.RootNamespace()
	pas := push.PeerAuthentications(proxy)
	ras := push.RequestAuthentications(proxy)
	aps := push.AuthorizationPolicies(proxy)
	out := &PolicyReport{Proxy: proxy.ID, ProxyType: string(proxy.Type), Namespace: proxy.ConfigNamespace, Labels: proxy.Labels,
		RootNamespace: root, PushVersion: push.PushVersion()}
	out.PeerAuthentication = g.peerReport(proxy, pas, root)
	out.RequestAuthentications = requestReport(ras, root)

	sec := g.security(push)
	h := sec.authz.BuildHTTP(aps)
	t := sec.authz.BuildTCP(aps)
	jwt := authn.JwtFilter(ras, authn.JWTOptions{Resolver: g.JWKS})
	for _, f := range h.With(jwt) {
		out.HTTPFilters = append(out.HTTPFilters, describeFilter(f.GetName(), f.GetTypedConfig()))
	}
	for _, f := range t.All() {
		out.TCPFilters = append(out.TCPFilters, describeFilter(f.GetName(), f.GetTypedConfig()))
	}
	if proxy.Metadata != nil && proxy.Metadata.Generator == GRPCGenerator {
		for _, f := range g.grpcServerRBAC(push, proxy) {
			out.ProxylessFilters = append(out.ProxylessFilters, describeFilter(f.GetName(), f.GetTypedConfig()))
		}
	}
	out.AuthorizationPolicies = authorizationReport(aps, root, out.HTTPFilters, out.TCPFilters)
	out.Warnings = mergeWarnings(h.Warnings, t.Warnings)
	out.Problems = problemsOf(push, pas, ras, aps)
	if out.HTTPFilters == nil {
		out.HTTPFilters = []FilterReport{}
	}
	if out.TCPFilters == nil {
		out.TCPFilters = []FilterReport{}
	}
	return out
}

// levelOf says how a policy attaches: targetRef (gateways), workload
// (selector), namespace, or mesh (no selector in the root namespace).
func levelOf(cfg *config.Config, selector map[string]string, targeted bool, root string) string {
	switch {
	case targeted:
		return "targetRef"
	case len(selector) > 0:
		return "workload"
	case cfg.Namespace == root:
		return "mesh"
	}
	return "namespace"
}

var levelRank = map[string]int{"mesh": 0, "namespace": 1, "workload": 2, "targetRef": 3}

// peerReport explains the effective mTLS as authn.EffectiveMTLS computes
// it: the mesh, namespace and workload layers, each overriding the one
// above unless UNSET; port-level settings from the workload layer only.
func (g *SidecarGenerators) peerReport(proxy *model.Proxy, pas []config.Config, root string) PeerAuthenticationReport {
	opts := authn.MTLSOptions{RootNamespace: root}
	lay := authn.LayerPeerAuthentications(pas, root)
	pol := authn.EffectiveMTLS(lay, opts)

	workload := MTLSDecision{Mode: pol.Workload, Level: "default"}
	for _, l := range []struct {
		level string
		cfg   *config.Config
	}{{"mesh", lay.Root}, {"namespace", lay.Namespace}, {"workload", lay.Workload}} {
		if spec := peerSpec(l.cfg); spec != nil && spec.GetMtls().GetMode() != security.PeerAuthentication_MutualTLS_UNSET {
			workload.Level, workload.DecidedBy = l.level, nameOfConfig(l.cfg)
		}
	}
	out := PeerAuthenticationReport{Workload: workload, Ports: []MTLSDecision{}}

	ports := map[uint32]string{}
	if proxy.Type == model.SidecarProxy {
		for _, t := range g.proxyTargets(proxy) {
			ports[uint32(t.Port)] = string(t.Protocol)
		}
	}
	for _, p := range pol.PortLevel() {
		if _, ok := ports[p]; !ok {
			ports[p] = ""
		}
	}
	wspec := peerSpec(lay.Workload)
	for _, p := range slices.Sorted(maps.Keys(ports)) {
		d := MTLSDecision{Port: p, Protocol: ports[p], Mode: pol.Mode(p), Level: workload.Level, DecidedBy: workload.DecidedBy}
		if s, ok := wspec.GetPortLevelMtls()[p]; ok && s.GetMode() != security.PeerAuthentication_MutualTLS_UNSET {
			d.Level, d.DecidedBy = "port", nameOfConfig(lay.Workload)
		}
		out.Ports = append(out.Ports, d)
	}

	out.Policies = []PeerAuthenticationEntry{}
	for i := range pas {
		cfg := &pas[i]
		spec := peerSpec(cfg)
		if spec == nil {
			continue
		}
		e := PeerAuthenticationEntry{Name: nameOfConfig(cfg), Level: levelOf(cfg, spec.GetSelector().GetMatchLabels(), false, root),
			Mode: spec.GetMtls().GetMode().String()}
		for _, p := range slices.Sorted(maps.Keys(spec.GetPortLevelMtls())) {
			e.PortLevelMtls = append(e.PortLevelMtls, PortMode{Port: p, Mode: spec.GetPortLevelMtls()[p].GetMode().String()})
		}
		var chosen *config.Config
		switch e.Level {
		case "mesh":
			chosen = lay.Root
		case "namespace":
			chosen = lay.Namespace
		default:
			chosen = lay.Workload
		}
		switch {
		case e.Level == "workload" && cfg.Namespace == root:
			e.Ignored = "a PeerAuthentication with a selector in the root namespace applies to no workload"
		case chosen != cfg:
			e.Ignored = fmt.Sprintf("the older %s-level PeerAuthentication %s applies instead", e.Level, nameOfConfig(chosen))
		default:
			e.Applied = true
			if e.Level != "workload" && len(e.PortLevelMtls) > 0 {
				e.Ignored = "portLevelMtls: only a workload policy's port-level settings apply"
			}
		}
		out.Policies = append(out.Policies, e)
	}
	sort.SliceStable(out.Policies, func(i, j int) bool { return levelRank[out.Policies[i].Level] < levelRank[out.Policies[j].Level] })
	return out
}

func peerSpec(cfg *config.Config) *security.PeerAuthentication {
	if cfg == nil {
		return nil
	}
	s, _ := cfg.Spec.(*security.PeerAuthentication)
	return s
}

func nameOfConfig(cfg *config.Config) string {
	if cfg == nil {
		return ""
	}
	return cfg.Namespace + "/" + cfg.Name
}

func requestReport(ras []config.Config, root string) []RequestAuthenticationEntry {
	out := []RequestAuthenticationEntry{}
	for i := range ras {
		cfg := &ras[i]
		spec, ok := cfg.Spec.(*security.RequestAuthentication)
		if !ok {
			continue
		}
		e := RequestAuthenticationEntry{Name: nameOfConfig(cfg), Issuers: []string{},
			Level: levelOf(cfg, spec.GetSelector().GetMatchLabels(), spec.GetTargetRef() != nil || len(spec.GetTargetRefs()) > 0, root)}
		for _, r := range spec.GetJwtRules() {
			e.Issuers = append(e.Issuers, r.GetIssuer())
		}
		out = append(out, e)
	}
	// workload, namespace, then mesh level
	sort.SliceStable(out, func(i, j int) bool { return levelRank[out[i].Level] > levelRank[out[j].Level] })
	return out
}

// actionRank is the evaluation order of actions: CUSTOM, DENY, ALLOW, then
// AUDIT; anything else last.
func actionRank(a security.AuthorizationPolicy_Action) int {
	switch a {
	case security.AuthorizationPolicy_CUSTOM:
		return 0
	case security.AuthorizationPolicy_DENY:
		return 1
	case security.AuthorizationPolicy_ALLOW:
		return 2
	case security.AuthorizationPolicy_AUDIT:
		return 3
	}
	return 4
}

func authorizationReport(aps []config.Config, root string, httpFilters, tcpFilters []FilterReport) []AuthorizationPolicyEntry {
	type ranked struct {
		rank int
		e    AuthorizationPolicyEntry
	}
	var rs []ranked
	for i := range aps {
		cfg := &aps[i]
		spec, ok := cfg.Spec.(*security.AuthorizationPolicy)
		if !ok {
			continue
		}
		dry, _ := strconv.ParseBool(cfg.Annotations["istio.io/dry-run"])
		prefix := fmt.Sprintf("ns[%s]-policy[%s]-rule[", cfg.Namespace, cfg.Name)
		e := AuthorizationPolicyEntry{Name: nameOfConfig(cfg), Action: spec.GetAction().String(), Provider: spec.GetProvider().GetName(),
			DryRun: dry, Rules: len(spec.GetRules()),
			Level:     levelOf(cfg, spec.GetSelector().GetMatchLabels(), spec.GetTargetRef() != nil || len(spec.GetTargetRefs()) > 0, root),
			HTTPRules: rulesOf(httpFilters, prefix), TCPRules: rulesOf(tcpFilters, prefix)}
		rs = append(rs, ranked{rank: actionRank(spec.GetAction()), e: e})
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].rank < rs[j].rank })
	out := make([]AuthorizationPolicyEntry, len(rs))
	for i, r := range rs {
		out[i] = r.e
	}
	return out
}

// rulesOf returns the RBAC policy names of the filters that came from one
// AuthorizationPolicy (names containing prefix), sorted.
func rulesOf(filters []FilterReport, prefix string) []string {
	out := []string{}
	for _, f := range filters {
		for _, n := range append(slices.Clone(f.Rules), f.ShadowRules...) {
			if strings.Contains(n, prefix) && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// describeFilter unpacks a filter's typed config: RBAC rule names and the
// config as canonical JSON (keys sorted).
func describeFilter(name string, cfg *anypb.Any) FilterReport {
	out := FilterReport{Name: name}
	if cfg == nil {
		return out
	}
	msg, err := cfg.UnmarshalNew()
	if err != nil {
		out.Config, _ = json.Marshal(map[string]string{"@type": cfg.GetTypeUrl(), "error": err.Error()})
		return out
	}
	var rules, shadow *rbacpb.RBAC
	switch m := msg.(type) {
	case *rbachttp.RBAC:
		rules, shadow = m.GetRules(), m.GetShadowRules()
	case *rbactcp.RBAC:
		rules, shadow = m.GetRules(), m.GetShadowRules()
	}
	if rules != nil {
		out.Action = rules.GetAction().String()
		out.Rules = slices.Sorted(maps.Keys(rules.GetPolicies()))
	}
	if shadow != nil {
		out.ShadowRules = slices.Sorted(maps.Keys(shadow.GetPolicies()))
	}
	b, err := protojson.Marshal(msg)
	if err != nil {
		out.Config, _ = json.Marshal(map[string]string{"@type": cfg.GetTypeUrl(), "error": err.Error()})
		return out
	}
	out.Config = canonicalJSON(b)
	return out
}

// canonicalJSON re-encodes JSON with sorted keys and no insignificant
// space (protojson's output is deliberately unstable).
func canonicalJSON(b []byte) json.RawMessage {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

// mergeWarnings lists the HTTP and TCP warnings once each, with the chains
// they were found on, sorted by policy, rule, field and message.
func mergeWarnings(httpWs, tcpWs []authz.Warning) []PolicyWarning {
	byMsg := map[string]*PolicyWarning{}
	var order []string
	add := func(chain string, ws []authz.Warning) {
		for _, w := range ws {
			msg := w.Error()
			pw, ok := byMsg[msg]
			if !ok {
				pw = &PolicyWarning{Policy: w.Policy, Field: w.Field, Message: msg}
				if w.Rule >= 0 {
					r := w.Rule
					pw.Rule = &r
				}
				byMsg[msg] = pw
				order = append(order, msg)
			}
			if !slices.Contains(pw.Chains, chain) {
				pw.Chains = append(pw.Chains, chain)
			}
		}
	}
	add("http", httpWs)
	add("tcp", tcpWs)
	out := make([]PolicyWarning, 0, len(order))
	for _, m := range order {
		out = append(out, *byMsg[m])
	}
	rule := func(w PolicyWarning) int {
		if w.Rule == nil {
			return -1
		}
		return *w.Rule
	}
	slices.SortFunc(out, func(a, b PolicyWarning) int {
		return cmp.Or(cmp.Compare(a.Policy, b.Policy), cmp.Compare(rule(a), rule(b)), cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
	return out
}

// problemsOf are the snapshot's policy problems about the given policies.
func problemsOf(push *model.PushContext, lists ...[]config.Config) []model.PolicyProblem {
	mine := map[string]bool{}
	for _, l := range lists {
		for i := range l {
			mine[l[i].GroupVersionKind.Kind+" "+l[i].Namespace+"/"+l[i].Name] = true
		}
	}
	out := []model.PolicyProblem{}
	for _, pp := range push.PolicyProblems() {
		if mine[pp.Object()] {
			out = append(out, pp)
		}
	}
	return out
}
