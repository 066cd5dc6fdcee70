package validation

import (
	"fmt"
	"strconv"
	"strings"

	security "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
)

const secDryRunAnnotation = "istio.io/dry-run"

// ValidateAuthorizationPolicy checks an AuthorizationPolicy. As in Istio,
// every error but those of the dry-run annotation reads "invalid policy
// <name>.<namespace>: ...", and the problems of a rule end with "found at
// rule <n>".
func ValidateAuthorizationPolicy(cfg config.Config) (Warning, error) {
	in, ok := cfg.Spec.(*security.AuthorizationPolicy)
	if !ok {
		return nil, secCastError("AuthorizationPolicy", cfg.Spec)
	}
	if in == nil {
		in = &security.AuthorizationPolicy{}
	}
	r := &Report{}
	secPolicyAttachment(r, secSpec, in.GetSelector(), in.GetTargetRef(), in.GetTargetRefs())
	secAuthzAction(r, in)
	if len(in.GetRules()) > 512 {
		r.Errorf(secSpec.Field("rules"), "at most 512 rules may be set, found %d", len(in.GetRules()))
	}
	for i, rule := range in.GetRules() {
		p := secSpec.Field("rules").Index(i)
		if rule == nil {
			r.Errorf(p, "`rule` must not be nil, found at rule %d", i)
			continue
		}
		secAuthzRule(r, p, i, rule, in.GetAction())
	}
	r.prefixErrors(fmt.Sprintf("invalid policy %s.%s: ", cfg.Name, cfg.Namespace))
	secDryRun(r, cfg, in.GetAction())
	return r.Result()
}

func secDryRun(r *Report, cfg config.Config, action security.AuthorizationPolicy_Action) {
	val, found := cfg.Annotations[secDryRunAnnotation]
	if !found {
		return
	}
	p := Path("metadata.annotations").Key(secDryRunAnnotation)
	if action != security.AuthorizationPolicy_ALLOW && action != security.AuthorizationPolicy_DENY {
		r.Errorf(p, "the annotation %s currently only supports action ALLOW/DENY, found action %v in %s/%s",
			secDryRunAnnotation, action, cfg.Namespace, cfg.Name)
		return
	}
	if _, err := strconv.ParseBool(val); err != nil {
		r.Errorf(p, "%s/%s has annotation %s with invalid value (%s): %v", cfg.Namespace, cfg.Name, secDryRunAnnotation, val, err)
	}
}

// secAuthzAction checks the action against the provider and the rules.
func secAuthzAction(r *Report, in *security.AuthorizationPolicy) {
	action := in.GetAction()
	if !secEnumKnown(action, security.AuthorizationPolicy_Action_name) {
		r.Errorf(secSpec.Field("action"), "unknown action %d", int32(action))
	}
	noRules := len(in.GetRules()) == 0
	switch action {
	case security.AuthorizationPolicy_CUSTOM:
		switch {
		case noRules:
			r.Errorf(secSpec.Field("rules"), "CUSTOM action without `rules` is meaningless as it will never be triggered, "+
				"add an empty rule `{}` if you want it be triggered for every request")
		case in.GetProvider().GetName() == "":
			r.Errorf(secSpec.Field("provider").Field("name"), "`provider.name` must not be empty")
		}
	case security.AuthorizationPolicy_DENY:
		if noRules {
			r.Errorf(secSpec.Field("rules"), "DENY action without `rules` is meaningless as it will never be triggered, "+
				"add an empty rule `{}` if you want it be triggered for every request")
		}
	case security.AuthorizationPolicy_AUDIT:
		if noRules {
			r.Warnf(secSpec.Field("rules"), "AUDIT action without `rules` will never be triggered, "+
				"add an empty rule `{}` if you want to audit every request")
		}
	}
	if in.GetProvider() != nil && action != security.AuthorizationPolicy_CUSTOM {
		// sic: Istio's wording
		r.Errorf(secSpec.Field("provider"), "`provider` must not be with non CUSTOM action, found %s", action)
	}
}

func secAuthzRule(r *Report, p Path, n int, rule *security.Rule, action security.AuthorizationPolicy_Action) {
	if rule.From != nil && len(rule.From) == 0 {
		r.Errorf(p.Field("from"), "`from` must not be empty, found at rule %d", n)
	}
	if rule.To != nil && len(rule.To) == 0 {
		r.Errorf(p.Field("to"), "`to` must not be empty, found at rule %d", n)
	}
	custom := action == security.AuthorizationPolicy_CUSTOM
	fromExists, toExists, tcpFrom, tcpTo := false, false, false, false
	for i, from := range rule.GetFrom() {
		fp := p.Field("from").Index(i)
		if from == nil {
			r.Errorf(fp, "`from` must not be nil, found at rule %d", n)
			continue
		}
		if from.GetSource() == nil {
			r.Errorf(fp.Field("source"), "`from.source` must not be nil, found at rule %d", n)
			continue
		}
		fromExists = true
		tcpFrom = secAuthzSource(r, fp.Field("source"), n, from.GetSource(), custom) || tcpFrom
	}
	for i, to := range rule.GetTo() {
		tp := p.Field("to").Index(i)
		if to == nil {
			r.Errorf(tp, "`to` must not be nil, found at rule %d", n)
			continue
		}
		if to.GetOperation() == nil {
			r.Errorf(tp.Field("operation"), "`to.operation` must not be nil, found at rule %d", n)
			continue
		}
		toExists = true
		tcpTo = secAuthzOperation(r, tp.Field("operation"), n, to.GetOperation()) || tcpTo
	}
	for i, cond := range rule.GetWhen() {
		secAuthzCondition(r, p.Field("when").Index(i), cond, custom)
	}
	if action == security.AuthorizationPolicy_DENY &&
		((fromExists && !toExists && !tcpFrom) || (toExists && !tcpTo)) {
		r.Warnf(p, "configured AuthorizationPolicy will deny all traffic to TCP ports under its scope due to "+
			"the use of only HTTP attributes in a DENY rule; it is recommended to explicitly specify the port")
	}
}

// secListField is one list of a Source or an Operation: its JSON name (for
// the path) and the name Istio's messages give it.
type secListField struct {
	name, key string
	values    []string
}

func secSourceFields(src *security.Source) []secListField {
	return []secListField{
		{"principals", "Principals", src.GetPrincipals()},
		{"notPrincipals", "NotPrincipals", src.GetNotPrincipals()},
		{"requestPrincipals", "RequestPrincipals", src.GetRequestPrincipals()},
		{"notRequestPrincipals", "NotRequestPrincipals", src.GetNotRequestPrincipals()},
		{"namespaces", "Namespaces", src.GetNamespaces()},
		{"notNamespaces", "NotNamespaces", src.GetNotNamespaces()},
		{"serviceAccounts", "ServiceAccounts", src.GetServiceAccounts()},
		{"notServiceAccounts", "NotServiceAccounts", src.GetNotServiceAccounts()},
		{"ipBlocks", "IpBlocks", src.GetIpBlocks()},
		{"notIpBlocks", "NotIpBlocks", src.GetNotIpBlocks()},
		{"remoteIpBlocks", "RemoteIpBlocks", src.GetRemoteIpBlocks()},
		{"notRemoteIpBlocks", "NotRemoteIpBlocks", src.GetNotRemoteIpBlocks()},
		{"trustDomains", "TrustDomains", src.GetTrustDomains()},
		{"notTrustDomains", "NotTrustDomains", src.GetNotTrustDomains()},
	}
}

// secCustomUnsupported lists the Source fields the CUSTOM action cannot
// use.
var secCustomUnsupported = map[string]bool{
	"principals": true, "notPrincipals": true,
	"requestPrincipals": true, "notRequestPrincipals": true,
	"namespaces": true, "notNamespaces": true,
	"serviceAccounts": true, "notServiceAccounts": true,
	"trustDomains": true, "notTrustDomains": true,
}

// secAuthzSource validates one source of rule n and reports whether it
// uses attributes that also apply to TCP traffic.
func secAuthzSource(r *Report, p Path, n int, src *security.Source, custom bool) (tcp bool) {
	empty := true
	for _, f := range secSourceFields(src) {
		if f.values == nil {
			continue
		}
		if len(f.values) > 0 {
			empty = false
		}
		fp := p.Field(f.name)
		if custom && secCustomUnsupported[f.name] && len(f.values) > 0 {
			r.Errorf(fp, "From.%s is currently not supported with CUSTOM action", f.key)
		}
		switch f.name {
		case "serviceAccounts", "notServiceAccounts":
			i, err := secServiceAccountValueErr(f.key, f.values)
			secReportAt(r, fp, i, err)
		case "trustDomains", "notTrustDomains":
			i, err := secTrustDomainValueErr(f.key, f.values)
			secReportAt(r, fp, i, err)
		case "ipBlocks", "notIpBlocks", "remoteIpBlocks", "notRemoteIpBlocks":
			secReportAll(r, fp, f.values, secIPErrs(f.values))
			secCheckEmpty(r, fp, f.key, f.values)
		default:
			secCheckEmpty(r, fp, f.key, f.values)
		}
		switch f.name {
		case "requestPrincipals", "notRequestPrincipals", "trustDomains", "notTrustDomains":
		default:
			tcp = true
		}
	}
	if empty {
		r.Errorf(p, "`from.source` must not be empty, found at rule %d", n)
	}
	identity := len(src.GetPrincipals()) + len(src.GetNotPrincipals()) + len(src.GetNamespaces()) + len(src.GetNotNamespaces())
	if identity > 0 && len(src.GetServiceAccounts())+len(src.GetNotServiceAccounts()) > 0 {
		r.Errorf(p, "cannot set serviceAccounts with namespaces or principals, found at rule %d", n)
	}
	return tcp
}

// secAuthzOperation validates one operation of rule n and reports whether
// it names ports (the only attribute that also applies to TCP traffic).
func secAuthzOperation(r *Report, p Path, n int, op *security.Operation) (tcp bool) {
	fields := []secListField{
		{"hosts", "Hosts", op.GetHosts()}, {"notHosts", "NotHosts", op.GetNotHosts()},
		{"ports", "Ports", op.GetPorts()}, {"notPorts", "NotPorts", op.GetNotPorts()},
		{"methods", "Methods", op.GetMethods()}, {"notMethods", "NotMethods", op.GetNotMethods()},
		{"paths", "Paths", op.GetPaths()}, {"notPaths", "NotPaths", op.GetNotPaths()},
	}
	empty := true
	for _, f := range fields {
		if f.values == nil {
			continue
		}
		if len(f.values) > 0 {
			empty = false
		}
		fp := p.Field(f.name)
		switch f.name {
		case "ports", "notPorts":
			secReportAll(r, fp, f.values, secPortErrs(f.values))
			tcp = true
		case "paths", "notPaths":
			i, err := secPathTemplateValueErr(f.key, f.values)
			secReportAt(r, fp, i, err)
		}
		secCheckEmpty(r, fp, f.key, f.values)
	}
	if empty {
		r.Errorf(p, "`to.operation` must not be empty, found at rule %d", n)
	}
	return tcp
}

func secAuthzCondition(r *Report, p Path, cond *security.Condition, custom bool) {
	key := cond.GetKey()
	if cond == nil && custom {
		r.Errorf(p, "when field cannot be nil")
	}
	if key == "" {
		r.Errorf(p.Field("key"), "`key` must not be empty")
		return
	}
	if custom && (key == "source.namespace" || key == "source.principal" || key == "source.serviceAccount" ||
		key == "source.trustDomain" || strings.HasPrefix(key, "request.auth.")) {
		r.Errorf(p.Field("key"), "%s is currently not supported with CUSTOM action", key)
	}
	if len(cond.GetValues()) == 0 && len(cond.GetNotValues()) == 0 {
		r.Errorf(p, "at least one of `values` or `notValues` must be set for key %s", key)
		return
	}
	for _, side := range []struct {
		field, what string
		values      []string
	}{{"values", "value", cond.GetValues()}, {"notValues", "notValue", cond.GetNotValues()}} {
		idx, errs := secAttributeErrs(key, side.values)
		for j, err := range errs {
			at := p.Field("key")
			if idx[j] >= 0 {
				at = p.Field(side.field).Index(idx[j])
			}
			r.Errorf(at, "invalid `%s` for `key` %s: %v", side.what, key, err)
		}
	}
}
