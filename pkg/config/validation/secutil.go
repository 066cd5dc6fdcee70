package validation

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Helpers shared by the security, telemetry, extension and mesh validators.

const secSpec = Path("spec")

// secMaxTargetRefs is the CRD limit on targetRefs for every policy kind.
const secMaxTargetRefs = 16

// secTargetKind is one kind a policy may attach to through targetRefs.
type secTargetKind struct {
	group   string // canonical group; "core" for the Kubernetes core group
	version string // only named in messages, as Istio does; not checked
	kind    string
}

var secAllowedTargets = []secTargetKind{
	{group: "core", version: "v1", kind: "Service"},
	{group: "networking.istio.io", version: "v1", kind: "ServiceEntry"},
	{group: "gateway.networking.k8s.io", version: "v1", kind: "Gateway"},
	{group: "gateway.networking.k8s.io", version: "v1", kind: "GatewayClass"},
}

// secAllowedTargetsText lists the allowed kinds as Istio prints them
// (group/version/kind).
func secAllowedTargetsText() string {
	parts := make([]string, 0, len(secAllowedTargets))
	for _, a := range secAllowedTargets {
		parts = append(parts, a.group+"/"+a.version+"/"+a.kind)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// secCastError is the error for a Spec of the wrong type.
func secCastError(want string, got any) error {
	return fmt.Errorf("cannot cast to %s (got %T)", want, got)
}

// secSortedKeys returns the keys of m in order, so reports are deterministic.
func secSortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// secPolicyAttachment validates the selector, targetRef and targetRefs of a
// policy and that at most one of them is set.
func secPolicyAttachment(r *Report, spec Path, sel *typev1beta1.WorkloadSelector,
	ref *typev1beta1.PolicyTargetReference, refs []*typev1beta1.PolicyTargetReference,
) {
	set := 0
	if sel != nil {
		set++
	}
	if ref != nil {
		set++
	}
	if len(refs) > 0 {
		set++
	}
	if set > 1 {
		at := spec.Field("targetRefs")
		if ref != nil && len(refs) == 0 {
			at = spec.Field("targetRef")
		}
		r.Errorf(at, "only one of targetRefs or workloadSelector can be set")
	}
	secWorkloadSelector(r, spec.Field("selector"), sel)
	if ref != nil {
		secPolicyTargetRef(r, spec.Field("targetRef"), ref)
	}
	if len(refs) > secMaxTargetRefs {
		r.Errorf(spec.Field("targetRefs"), "at most %d targetRefs may be set, found %d", secMaxTargetRefs, len(refs))
	}
	for i, t := range refs {
		p := spec.Field("targetRefs").Index(i)
		if t == nil {
			r.Errorf(p, "targetRef must not be null")
			continue
		}
		secPolicyTargetRef(r, p, t)
	}
}

// secWorkloadSelector validates matchLabels as Istio does: no empty keys,
// no wildcards. A selector without labels, and labels that are no valid
// Kubernetes labels, are warnings.
func secWorkloadSelector(r *Report, p Path, sel *typev1beta1.WorkloadSelector) {
	if sel == nil {
		return
	}
	if len(sel.GetMatchLabels()) == 0 {
		r.Warnf(p, "workload selector specified without labels")
		return
	}
	secSelectorLabels(r, p.Field("matchLabels"), sel.GetMatchLabels())
}

// secSelectorLabels validates selector labels key by key.
func secSelectorLabels(r *Report, p Path, labels map[string]string) {
	for _, k := range secSortedKeys(labels) {
		v := labels[k]
		switch {
		case k == "":
			r.Errorf(p, "empty key is not supported in selector: %q", k+"="+v)
		case strings.Contains(k, "*") || strings.Contains(v, "*"):
			r.Errorf(p.Key(k), "wildcard is not supported in selector: %q", k+"="+v)
		default:
			WarnSelectorLabels(r, p.Key(k), map[string]string{k: v})
		}
	}
}

func secPolicyTargetRef(r *Report, p Path, ref *typev1beta1.PolicyTargetReference) {
	if ref.GetName() == "" {
		r.Errorf(p.Field("name"), "targetRef name must be set")
	}
	if ref.GetNamespace() != "" {
		r.Errorf(p.Field("namespace"), "targetRef namespace must not be set; cross namespace referencing is not supported")
	}
	group := ref.GetGroup()
	if group == "" {
		group = "core"
	}
	for _, a := range secAllowedTargets {
		if a.group == group && a.kind == ref.GetKind() {
			return
		}
	}
	r.Errorf(p.Field("kind"), "targetRef must be to one of %s but was %s/%s",
		secAllowedTargetsText(), ref.GetGroup(), ref.GetKind())
}

// secPathLiteralRe is a path segment literal (RFC 3986 pchar).
var secPathLiteralRe = regexp.MustCompile(`^[a-zA-Z0-9-._~%!$&'()+,;:@=]+$`)

// secHostPort validates "host:port" where host is an FQDN or an IP.
func secHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("unable to split %q into host and port: %v", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("port %q of %q is not a number", port, addr)
	}
	if n < 1 || n > 65535 {
		return fmt.Errorf("port number %d must be in the range 1..65535", n)
	}
	if _, ipErr := netip.ParseAddr(host); ipErr == nil {
		return nil
	}
	if err := CheckFQDN(host); err != nil {
		return fmt.Errorf("%q is not a valid hostname or an IP address", host)
	}
	return nil
}

// secIntPort validates a port held in a signed field.
func secIntPort(port int64) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("port number %d must be in the range 1..65535", port)
	}
	return nil
}

// secTrustDomain validates a trust domain: DNS-1123 labels separated by
// dots, with an optional trailing dot.
func secTrustDomain(td string) error {
	if td == "" {
		return fmt.Errorf("empty trust domain not allowed")
	}
	parts := strings.Split(td, ".")
	for i, l := range parts {
		if i == len(parts)-1 && l == "" && i > 0 {
			break
		}
		if len(validation.IsDNS1123Label(l)) > 0 {
			return fmt.Errorf("trust domain %q invalid (label %q)", td, l)
		}
	}
	return nil
}

// secEnumKnown reports whether v is a value listed in an enum's name map.
func secEnumKnown[E ~int32](v E, names map[int32]string) bool {
	_, ok := names[int32(v)]
	return ok
}

// errorfSec is fmt.Errorf under a name private to these validators.
func errorfSec(format string, args ...any) error { return fmt.Errorf(format, args...) }

// Topology labels that cannot be combined with failover in failoverPriority.
var secTopologyLabels = map[string]bool{
	"topology.kubernetes.io/region": true,
	"topology.kubernetes.io/zone":   true,
	"topology.istio.io/subzone":     true,
}

// secLocalityLbSetting validates a locality load-balancer setting.
func secLocalityLbSetting(r *Report, p Path, lb *networking.LocalityLoadBalancerSetting) {
	if lb == nil {
		return
	}
	if len(lb.GetDistribute()) > 0 && len(lb.GetFailover()) > 0 {
		r.Errorf(p, "can not simultaneously specify 'distribute' and 'failover'")
		return
	}
	if len(lb.GetFailover()) > 0 {
		for i, l := range lb.GetFailoverPriority() {
			if secTopologyLabels[l] {
				r.Errorf(p.Field("failoverPriority").Index(i),
					"can not simultaneously set 'failover' and topology label '%s' in 'failover_priority'", l)
			}
		}
	}
	var srcs []string
	for i, d := range lb.GetDistribute() {
		dp := p.Field("distribute").Index(i)
		if d == nil {
			r.Errorf(dp, "distribute entry must not be null")
			continue
		}
		srcs = append(srcs, d.GetFrom())
		var total uint32
		for _, loc := range secSortedKeys(d.GetTo()) {
			w := d.GetTo()[loc]
			if w < 1 || w > 100 {
				r.Errorf(dp.Field("to").Key(loc), "locality weight must be in range [1, 100], found %d", w)
			}
			total += w
		}
		if total != 100 {
			r.Errorf(dp.Field("to"), "total locality weight %d != 100", total)
		}
		r.Add(dp.Field("to"), secLocalities(secSortedKeys(d.GetTo())))
	}
	r.Add(p.Field("distribute"), secLocalities(srcs))
	for i, f := range lb.GetFailover() {
		fp := p.Field("failover").Index(i)
		switch {
		case f == nil:
			r.Errorf(fp, "failover entry must not be null")
		case f.GetFrom() == f.GetTo():
			r.Errorf(fp, "locality lb failover settings must specify different regions")
		case strings.Contains(f.GetFrom(), "/") || strings.Contains(f.GetTo(), "/"):
			r.Errorf(fp, "locality lb failover only specify region")
		case strings.Contains(f.GetFrom(), "*") || strings.Contains(f.GetTo(), "*"):
			r.Errorf(fp, "locality lb failover region should not contain '*' wildcard")
		}
	}
}

// secLocalities checks region/zone/subzone localities: no empty parts, a
// wildcard only at the end, and no locality covered by an earlier one.
func secLocalities(locs []string) error {
	var seen []string
	for _, loc := range locs {
		if n := strings.Count(loc, "*"); n > 1 || (n == 1 && !strings.HasSuffix(loc, "*")) {
			return fmt.Errorf("locality %s wildcard '*' number can not exceed 1 and must be in the end", loc)
		}
		parts := strings.SplitN(loc, "/", 3)
		if slices.Contains(parts, "") {
			return fmt.Errorf("locality %s must not contain empty region/zone/subzone info", loc)
		}
		for _, prev := range seen {
			if secLocalityCovers(prev, parts) || secLocalityCovers(strings.Join(parts, "/"), strings.SplitN(prev, "/", 3)) {
				return fmt.Errorf("locality %s overlap with previous specified ones", loc)
			}
		}
		seen = append(seen, strings.Join(parts, "/"))
	}
	return nil
}

// secLocalityCovers reports whether locality a matches everything parts names.
func secLocalityCovers(a string, parts []string) bool {
	ap := strings.SplitN(a, "/", 3)
	for i, x := range ap {
		if x == "*" {
			return true
		}
		if i >= len(parts) || parts[i] != x {
			return false
		}
	}
	return true
}
