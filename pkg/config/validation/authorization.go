package validation

import (
	"fmt"
	"strconv"
	"strings"

	security "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
)

const secDryRunAnnotation = "istio.io/dry-run"

// ValidateAuthorizationPolicy checks an AuthorizationPolicy.
func ValidateAuthorizationPolicy(cfg config.Config) (Warning, error) {
	in, ok := cfg.Spec.(*security.AuthorizationPolicy)
	if !ok {
		return nil, secCastError("AuthorizationPolicy", cfg.Spec)
	}
	if in == nil {
		in = &security.AuthorizationPolicy{}
	}
	r := &Report{}
	secDryRun(r, cfg, in.GetAction())
	secPolicyAttachment(r, secSpec, in.GetSelector(), in.GetTargetRef(), in.GetTargetRefs())
	secAuthzAction(r, in)
	if len(in.GetRules()) > 512 {
		r.Errorf(secSpec.Field("rules"), "at most 512 rules may be set, found %d", len(in.GetRules()))
	}
	for i, rule := range in.GetRules() {
		p := secSpec.Field("rules").Index(i)
		if rule == nil {
			r.Errorf(p, "`rule` must not be null")
			continue
		}
		secAuthzRule(r, p, rule, in.GetAction())
	}
	return r.Result()
}

func secDryRun(r *Report, cfg config.Config, action security.AuthorizationPolicy_Action) {
	val, found := cfg.Annotations[secDryRunAnnotation]
	if !found {
		return
	}
	p := Path("metadata.annotations").Key(secDryRunAnnotation)
	if action != security.AuthorizationPolicy_ALLOW && action != security.AuthorizationPolicy_DENY {
		r.Errorf(p, "the annotation %s currently only supports action ALLOW/DENY, found action %v", secDryRunAnnotation, action)
		return
	}
	if _, err := strconv.ParseBool(val); err != nil {
		r.Errorf(p, "invalid value %q for annotation %s: must be a boolean", val, secDryRunAnnotation)
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
		if in.GetProvider().GetName() == "" {
			r.Errorf(secSpec.Field("provider").Field("name"), "`provider.name` must not be empty with CUSTOM action")
		}
		if noRules {
			r.Errorf(secSpec.Field("rules"), "CUSTOM action without `rules` is meaningless as it will never be triggered, "+
				"add an empty rule `{}` if you want it be triggered for every request")
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
		r.Errorf(secSpec.Field("provider"), "`provider` must not be set with non CUSTOM action, found %s", action)
	}
}

func secAuthzRule(r *Report, p Path, rule *security.Rule, action security.AuthorizationPolicy_Action) {
	if rule.From != nil && len(rule.From) == 0 {
		r.Errorf(p.Field("from"), "`from` must not be empty")
	}
	if rule.To != nil && len(rule.To) == 0 {
		r.Errorf(p.Field("to"), "`to` must not be empty")
	}
	custom := action == security.AuthorizationPolicy_CUSTOM
	fromExists, toExists, tcpFrom, tcpTo := false, false, false, false
	for i, from := range rule.GetFrom() {
		fp := p.Field("from").Index(i)
		if from == nil {
			r.Errorf(fp, "`from` must not be null")
			continue
		}
		if from.GetSource() == nil {
			r.Errorf(fp.Field("source"), "`from.source` must not be null")
			continue
		}
		fromExists = true
		tcpFrom = secAuthzSource(r, fp.Field("source"), from.GetSource(), custom) || tcpFrom
	}
	for i, to := range rule.GetTo() {
		tp := p.Field("to").Index(i)
		if to == nil {
			r.Errorf(tp, "`to` must not be null")
			continue
		}
		if to.GetOperation() == nil {
			r.Errorf(tp.Field("operation"), "`to.operation` must not be null")
			continue
		}
		toExists = true
		tcpTo = secAuthzOperation(r, tp.Field("operation"), to.GetOperation()) || tcpTo
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

// secListField is one list of a Source, with its JSON name.
type secListField struct {
	name   string
	values []string
}

func secSourceFields(src *security.Source) []secListField {
	return []secListField{
		{"principals", src.GetPrincipals()},
		{"notPrincipals", src.GetNotPrincipals()},
		{"requestPrincipals", src.GetRequestPrincipals()},
		{"notRequestPrincipals", src.GetNotRequestPrincipals()},
		{"namespaces", src.GetNamespaces()},
		{"notNamespaces", src.GetNotNamespaces()},
		{"serviceAccounts", src.GetServiceAccounts()},
		{"notServiceAccounts", src.GetNotServiceAccounts()},
		{"ipBlocks", src.GetIpBlocks()},
		{"notIpBlocks", src.GetNotIpBlocks()},
		{"remoteIpBlocks", src.GetRemoteIpBlocks()},
		{"notRemoteIpBlocks", src.GetNotRemoteIpBlocks()},
		{"trustDomains", src.GetTrustDomains()},
		{"notTrustDomains", src.GetNotTrustDomains()},
	}
}

// secCustomUnsupported lists Source fields the CUSTOM action cannot use.
var secCustomUnsupported = map[string]bool{
	"principals": true, "notPrincipals": true,
	"requestPrincipals": true, "notRequestPrincipals": true,
	"namespaces": true, "notNamespaces": true,
	"serviceAccounts": true, "notServiceAccounts": true,
}

// secAuthzSource validates one source and reports whether it uses
// attributes that also apply to TCP traffic.
func secAuthzSource(r *Report, p Path, src *security.Source, custom bool) (tcp bool) {
	empty := true
	for _, f := range secSourceFields(src) {
		if len(f.values) == 0 {
			continue
		}
		empty = false
		fp := p.Field(f.name)
		if custom && secCustomUnsupported[f.name] {
			r.Errorf(fp, "%s is currently not supported with CUSTOM action", f.name)
		}
		switch f.name {
		case "serviceAccounts", "notServiceAccounts":
			secServiceAccountValues(r, fp, f.values)
		case "ipBlocks", "notIpBlocks", "remoteIpBlocks", "notRemoteIpBlocks":
			secNoEmptyValues(r, fp, f.values)
			secIPValues(r, fp, f.values)
		default:
			secNoEmptyValues(r, fp, f.values)
		}
		if f.name != "requestPrincipals" && f.name != "notRequestPrincipals" {
			tcp = true
		}
	}
	if empty {
		r.Errorf(p, "`from.source` must not be empty")
	}
	identity := len(src.GetPrincipals()) + len(src.GetNotPrincipals()) + len(src.GetNamespaces()) + len(src.GetNotNamespaces())
	if identity > 0 && len(src.GetServiceAccounts())+len(src.GetNotServiceAccounts()) > 0 {
		r.Errorf(p, "cannot set serviceAccounts with namespaces or principals")
	}
	return tcp
}

// secAuthzOperation validates one operation and reports whether it names
// ports (the only attribute that also applies to TCP traffic).
func secAuthzOperation(r *Report, p Path, op *security.Operation) (tcp bool) {
	fields := []secListField{
		{"hosts", op.GetHosts()}, {"notHosts", op.GetNotHosts()},
		{"ports", op.GetPorts()}, {"notPorts", op.GetNotPorts()},
		{"methods", op.GetMethods()}, {"notMethods", op.GetNotMethods()},
		{"paths", op.GetPaths()}, {"notPaths", op.GetNotPaths()},
	}
	empty := true
	for _, f := range fields {
		if len(f.values) == 0 {
			continue
		}
		empty = false
		fp := p.Field(f.name)
		secNoEmptyValues(r, fp, f.values)
		switch f.name {
		case "ports", "notPorts":
			secPortStrings(r, fp, f.values)
			tcp = true
		case "paths", "notPaths":
			for i, v := range f.values {
				r.Add(fp.Index(i), secPathTemplate(v))
			}
		}
	}
	if empty {
		r.Errorf(p, "`to.operation` must not be empty")
	}
	return tcp
}

func secAuthzCondition(r *Report, p Path, cond *security.Condition, custom bool) {
	if cond == nil {
		r.Errorf(p, "`when` condition must not be null")
		return
	}
	key := cond.GetKey()
	if key == "" {
		r.Errorf(p.Field("key"), "`key` must not be empty")
		return
	}
	if custom && (key == "source.namespace" || key == "source.principal" || key == "source.serviceAccount" ||
		strings.HasPrefix(key, "request.auth.")) {
		r.Errorf(p.Field("key"), "%s is currently not supported with CUSTOM action", key)
	}
	if err := secAttributeKey(key); err != nil {
		r.Errorf(p.Field("key"), "%v", err)
		return
	}
	if len(cond.GetValues()) == 0 && len(cond.GetNotValues()) == 0 {
		r.Errorf(p, "at least one of `values` or `notValues` must be set for key %s", key)
		return
	}
	secAttributeValues(r, p.Field("values"), key, cond.GetValues())
	secAttributeValues(r, p.Field("notValues"), key, cond.GetNotValues())
}

// secMapKeyAttributes are condition keys of the form name[key].
var secMapKeyAttributes = []string{
	"request.headers", "request.experimental.inline.headers", "request.auth.claims",
}

// secPlainAttributes are condition keys used as they are.
var secPlainAttributes = map[string]bool{
	"source.ip": true, "remote.ip": true, "source.namespace": true, "source.principal": true,
	"source.serviceAccount": true, "source.trustDomain": true,
	"request.auth.principal": true, "request.auth.audiences": true, "request.auth.presenter": true,
	"destination.ip": true, "destination.port": true, "connection.sni": true,
}

// secAttributeKey reports whether key names a supported condition attribute.
func secAttributeKey(key string) error {
	if secPlainAttributes[key] {
		return nil
	}
	for _, prefix := range secMapKeyAttributes {
		if strings.HasPrefix(key, prefix) {
			return secMapKey(key)
		}
	}
	switch {
	case strings.HasPrefix(key, "experimental.envoy.filters."):
		return secMapKey(key)
	case key == "destination.namespace":
		return fmt.Errorf("attribute %s is replaced by the metadata.namespace", key)
	case strings.HasPrefix(key, "destination.labels"):
		return fmt.Errorf("attribute %s is replaced by the workload selector", key)
	case key == "destination.name" || key == "destination.user":
		return fmt.Errorf("deprecated attribute %s: only supported in v1alpha1", key)
	}
	return fmt.Errorf("unknown attribute: %s", key)
}

func secMapKey(key string) error {
	open := strings.Index(key, "[")
	if strings.HasSuffix(key, "]") && open > 0 && open < len(key)-2 {
		return nil
	}
	return fmt.Errorf("bad key (%s): should have format a[b]", key)
}

func secAttributeValues(r *Report, p Path, key string, values []string) {
	if key == "source.serviceAccount" {
		secServiceAccountValues(r, p, values)
		return
	}
	secNoEmptyValues(r, p, values)
	switch key {
	case "source.ip", "remote.ip", "destination.ip":
		secIPValues(r, p, values)
	case "destination.port":
		secPortStrings(r, p, values)
	}
}
