// Package authz translates the AuthorizationPolicies that apply to one
// workload into the Envoy filters Istio 1.31 puts on its inbound chains: the
// RBAC filters that enforce ALLOW, DENY and AUDIT, and for CUSTOM a shadow
// RBAC filter and the ext_authz filter of the mesh's extension provider.
//
// It is a pure translation: policies and a typed [Options] in, filters and
// [Warning]s out; no I/O, no globals, no clock. The policies arrive already
// selected for the workload and ordered by the push context
// (model.PushContext.AuthorizationPolicies); this package never selects.
//
// What it owns, one feature per file:
//
//   - builder.go: [Builder], [HTTPFilters], [TCPFilters]; filter order
//     (CUSTOM, then AUDIT, DENY, ALLOW).
//   - action.go: the RBAC rules of one action: policy names
//     ns[<ns>]-policy[<name>]-rule[<i>], the istio.io/dry-run annotation
//     (shadow rules and their stat prefixes), "allow nothing" for a policy
//     without rules.
//   - custom.go, extauthz.go: CUSTOM: per-provider shadow rules named
//     istio-ext-authz-<provider>-…, the provider's ext_authz config and the
//     deny-all fallback for a bad provider.
//   - rule.go, generate.go: one rule → one RBAC policy: sources into
//     principals, operations into permissions, when conditions into either;
//     how errors and HTTP-only attributes on TCP chains widen DENY/AUDIT and
//     drop ALLOW rules.
//   - source.go, operation.go, condition.go: the attributes (sources,
//     operations, every when key Istio 1.31 knows).
//   - matcher.go: Envoy string, header and metadata matchers; rbac.go: RBAC
//     permission and principal constructors; jwt.go: the jwt_authn metadata
//     (payload) request principals and claims read; pathtemplate.go: {*}
//     and {**} path templates.
//   - trustdomain.go: trust domain and trustDomainAliases rewriting.
//   - warning.go: [Warning]s for /debug/warningz.
//
// Selection (namespace, root namespace, selector, targetRefs) is the push
// context's job, so no option names the root namespace: nothing in the
// output depends on it.
//
// Returned filters are freshly built and owned by the caller, except the
// packed ext_authz configs, which a Builder shares between calls: callers
// must not modify the typed configs of the filters they get.
package authz
