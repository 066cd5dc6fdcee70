package authz

import (
	"fmt"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rbactcp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	authzpb "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// Builder translates AuthorizationPolicies with fixed [Options]: the mesh's
// trust domains and its ext_authz providers are resolved once, in [New].
// A Builder is immutable and safe for concurrent use; build one per push
// (it depends on the mesh config and the services providers name) and use
// it for every proxy.
type Builder struct {
	opts         Options
	trustDomains trustDomains
	providers    map[string]*extAuthz
}

// New resolves the options. Problems with providers surface as warnings of
// the CUSTOM policies that name them.
func New(opts Options) *Builder {
	return &Builder{opts: opts, trustDomains: newTrustDomains(&opts), providers: resolveProviders(&opts)}
}

// HTTPFilters are the authorization filters of an inbound HTTP chain (the
// HTTP connection manager's filters). Istio 1.31 places them
//
//	istio.metadata_exchange, Custom..., jwt_authn, Local..., grpc_stats, fault, cors, router
//
// with the JWT filter (package authn) between the two groups.
type HTTPFilters struct {
	// Custom: per CUSTOM provider (sorted by name) an envoy.filters.http.rbac
	// with the provider's rules as shadow rules and its
	// envoy.filters.http.ext_authz; a bad provider gets one RBAC filter
	// denying what its rules match instead.
	Custom []*hcm.HttpFilter
	// Local: one envoy.filters.http.rbac each for AUDIT (action LOG), DENY
	// and ALLOW, in that order, for the actions that have policies.
	Local []*hcm.HttpFilter
	// Warnings lists rules and policies that were not translated as
	// written.
	Warnings []Warning
}

// With returns the filters in Istio's order with the JWT filter (if any)
// between the groups.
func (f HTTPFilters) With(jwt *hcm.HttpFilter) []*hcm.HttpFilter {
	out := append([]*hcm.HttpFilter{}, f.Custom...)
	if jwt != nil {
		out = append(out, jwt)
	}
	return append(out, f.Local...)
}

// TCPFilters are the authorization network filters of an inbound TCP chain,
// to go before tcp_proxy (in this order: Custom then Local).
type TCPFilters struct {
	// Custom: per CUSTOM gRPC provider an envoy.filters.network.rbac with
	// shadow rules and its envoy.filters.network.ext_authz (HTTP providers
	// do not apply to TCP); a bad provider gets one RBAC filter denying what
	// its rules match instead.
	Custom []*listener.Filter
	// Local: one envoy.filters.network.rbac each for AUDIT, DENY and ALLOW.
	// HTTP-only conditions are dropped from DENY and AUDIT rules (which then
	// match more, any/any when nothing is left) and ALLOW rules needing them
	// are left out (an ALLOW filter with no rules left denies all).
	Local []*listener.Filter
	// Warnings: as HTTPFilters.Warnings; HTTPOnly ones have Port 0.
	Warnings []Warning
}

// All returns Custom then Local.
func (f TCPFilters) All() []*listener.Filter {
	return append(append([]*listener.Filter{}, f.Custom...), f.Local...)
}

// BuildHTTP is New(opts).BuildHTTP(policies).
func BuildHTTP(policies []config.Config, opts Options) HTTPFilters {
	return New(opts).BuildHTTP(policies)
}

// BuildTCP is New(opts).BuildTCP(policies).
func BuildTCP(policies []config.Config, opts Options) TCPFilters {
	return New(opts).BuildTCP(policies)
}

// BuildHTTP translates the policies that apply to a workload (selected and
// ordered by the push context; read only) into the filters of its inbound
// HTTP chains. No policies, no filters.
func (b *Builder) BuildHTTP(policies []config.Config) HTTPFilters {
	ws := &warnings{}
	byAction := splitByAction(policies, ws)
	var out HTTPFilters
	if cs := byAction[authzpb.AuthorizationPolicy_CUSTOM]; len(cs) > 0 {
		out.Custom = b.customHTTP(b.planCustom(b.customRules(cs, false, ws), false, ws, cs))
	}
	for _, a := range localActions {
		if rs := b.localRules(byAction[a.istio], a.envoy, false, ws); rs != nil {
			rbac := &rbachttp.RBAC{Rules: rs.enforce, ShadowRules: rs.dryRun, ShadowRulesStatPrefix: shadowStatPrefix(rs.dryRun)}
			out.Local = append(out.Local, httpFilter(httpRBACFilter, protoconv.MessageToAny(rbac)))
		}
	}
	out.Warnings = ws.list
	return out
}

// BuildTCP translates the policies that apply to a workload into the
// network filters of its inbound TCP chains.
func (b *Builder) BuildTCP(policies []config.Config) TCPFilters {
	ws := &warnings{}
	byAction := splitByAction(policies, ws)
	var out TCPFilters
	if cs := byAction[authzpb.AuthorizationPolicy_CUSTOM]; len(cs) > 0 {
		out.Custom = b.customTCP(b.planCustom(b.customRules(cs, true, ws), true, ws, cs))
	}
	for _, a := range localActions {
		if rs := b.localRules(byAction[a.istio], a.envoy, true, ws); rs != nil {
			rbac := &rbactcp.RBAC{Rules: rs.enforce, StatPrefix: tcpStatPrefix, ShadowRules: rs.dryRun, ShadowRulesStatPrefix: shadowStatPrefix(rs.dryRun)}
			out.Local = append(out.Local, tcpFilter(tcpRBACFilter, protoconv.MessageToAny(rbac)))
		}
	}
	out.Warnings = ws.list
	return out
}

// localActions are the RBAC-enforced actions in filter order.
var localActions = []struct {
	istio authzpb.AuthorizationPolicy_Action
	envoy rbacpb.RBAC_Action
}{
	{authzpb.AuthorizationPolicy_AUDIT, rbacpb.RBAC_LOG},
	{authzpb.AuthorizationPolicy_DENY, rbacpb.RBAC_DENY},
	{authzpb.AuthorizationPolicy_ALLOW, rbacpb.RBAC_ALLOW},
}

// splitByAction groups the policies by action, keeping their order.
func splitByAction(cfgs []config.Config, ws *warnings) map[authzpb.AuthorizationPolicy_Action][]policy {
	out := map[authzpb.AuthorizationPolicy_Action][]policy{}
	for i := range cfgs {
		cfg := &cfgs[i]
		ref := cfg.Namespace + "/" + cfg.Name
		spec, ok := cfg.Spec.(*authzpb.AuthorizationPolicy)
		if !ok || spec == nil {
			ws.policy(ref, fmt.Sprintf("spec is %T, not an AuthorizationPolicy", cfg.Spec), "ignored")
			continue
		}
		switch a := spec.GetAction(); a {
		case authzpb.AuthorizationPolicy_ALLOW, authzpb.AuthorizationPolicy_DENY,
			authzpb.AuthorizationPolicy_AUDIT, authzpb.AuthorizationPolicy_CUSTOM:
			out[a] = append(out[a], policy{cfg: cfg, spec: spec, ref: ref})
		default:
			ws.policy(ref, fmt.Sprintf("unsupported action %v", a), "ignored")
		}
	}
	return out
}

// Explain translates each policy on its own, for HTTP and for TCP, and
// returns what the translation lost (HTTP-only fields on TCP, invalid
// rules, unsupported keys), once each, in policy order: what
// /debug/warningz and `istiod validate` say about the policies whatever
// workloads they select.
func (b *Builder) Explain(policies []config.Config) []Warning {
	seen := map[string]bool{}
	var out []Warning
	for i := range policies {
		one := policies[i : i+1]
		for _, ws := range [][]Warning{b.BuildHTTP(one).Warnings, b.BuildTCP(one).Warnings} {
			for _, w := range ws {
				if k := w.Error(); !seen[k] {
					seen[k] = true
					out = append(out, w)
				}
			}
		}
	}
	return out
}
