package validation

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	dns1123LabelMaxLength = 63
	dnsNameMaxLength      = 255
)

// CheckDNS1123Label reports whether s is a DNS-1123 label (lowercase
// alphanumerics and '-', at most 63 characters).
func CheckDNS1123Label(s string) error {
	if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid DNS-1123 label: %s", s, strings.Join(errs, "; "))
	}
	return nil
}

// CheckFQDN validates a fully qualified domain name (no wildcard). Labels may
// hold uppercase letters, as Istio allows, and a trailing dot is accepted.
// The messages are Istio's.
func CheckFQDN(host string) error {
	if err := checkDomainPreconditions(host); err != nil {
		return err
	}
	return checkDomainLabels(host, host)
}

// checkDomainPreconditions bounds the length of a domain name, as Istio
// does before looking at its labels.
func checkDomainPreconditions(host string) error {
	if len(host) > dnsNameMaxLength {
		return fmt.Errorf("domain name %q too long (max %d)", host, dnsNameMaxLength)
	}
	if host == "" {
		return fmt.Errorf("empty domain name not allowed")
	}
	return nil
}

// checkDomainLabels requires every label of labels (a domain name, or the
// part of one after its first label) to be a DNS-1123 label; a trailing dot
// is allowed, an all-numeric last label is not. domain is the name the
// message reports.
func checkDomainLabels(domain, labels string) error {
	parts := strings.Split(strings.TrimSuffix(labels, "."), ".")
	if tld := parts[len(parts)-1]; tld != "" && strings.Trim(tld, "0123456789") == "" {
		return fmt.Errorf("domain name %q invalid (top level domain %q cannot be all-numeric)", domain, tld)
	}
	for _, label := range parts {
		if checkDNSLabel(label) != nil {
			return fmt.Errorf("domain name %q invalid (label %q invalid)", domain, label)
		}
	}
	return nil
}

func checkDNSLabel(label string) error {
	if label == "" {
		return fmt.Errorf("empty label")
	}
	if len(label) > dns1123LabelMaxLength {
		return fmt.Errorf("longer than %d characters", dns1123LabelMaxLength)
	}
	for i, c := range label {
		alnum := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if alnum {
			continue
		}
		if c == '-' && i != 0 && i != len(label)-1 {
			continue
		}
		return fmt.Errorf("invalid character %q", c)
	}
	return nil
}

// CheckWildcardDNSName validates a host whose first label may be a
// wildcard: "*" alone, or "*", "*" or "*-" followed by a DNS-1123 label
// ("*.example.com", "*foo.example.com", "*-foo.example.com"); the other
// labels are DNS-1123 labels. The messages are Istio's.
func CheckWildcardDNSName(host string) error {
	if err := checkDomainPreconditions(host); err != nil {
		return err
	}
	first, rest, more := strings.Cut(host, ".")
	if !isWildcardLabel(first) {
		return fmt.Errorf("domain name %q invalid (label %q invalid)", host, first)
	}
	if more {
		return checkDomainLabels(rest, rest)
	}
	return nil
}

// isWildcardLabel reports whether label is a DNS-1123 label, "*", or one
// prefixed with "*" or "*-".
func isWildcardLabel(label string) bool {
	if label == "*" {
		return true
	}
	if rest, ok := strings.CutPrefix(label, "*-"); ok && checkDNSLabel(rest) == nil && len(label) <= dns1123LabelMaxLength {
		return true
	}
	if rest, ok := strings.CutPrefix(label, "*"); ok {
		return checkDNSLabel(rest) == nil && len(label) <= dns1123LabelMaxLength
	}
	return checkDNSLabel(label) == nil
}

// CheckNamespacedHost validates a "namespace/dnsName" host as used by Gateway
// and Sidecar: namespace is "*", "." or "~" or a DNS-1123 label; dnsName may be
// a wildcard name.
func CheckNamespacedHost(h string) error {
	ns, host, ok := strings.Cut(h, "/")
	if !ok {
		return fmt.Errorf("host %q must be of form namespace/dnsName", h)
	}
	if ns == "" || host == "" {
		return fmt.Errorf("host %q must be of form namespace/dnsName", h)
	}
	if ns != "*" && ns != "." && ns != "~" {
		if err := CheckDNS1123Label(ns); err != nil {
			return fmt.Errorf("invalid namespace in host %q: %v", h, err)
		}
	}
	return CheckWildcardDNSName(host)
}

// CheckPort validates a port number in 1..65535.
func CheckPort(port uint32) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("port number %d must be in the range 1..65535", port)
	}
	return nil
}

// CheckDuration requires a positive duration of at least one millisecond.
func CheckDuration(d *durationpb.Duration) error {
	if d == nil {
		return nil
	}
	if err := d.CheckValid(); err != nil {
		return fmt.Errorf("invalid duration: %v", err)
	}
	if d.AsDuration().Milliseconds() < 1 {
		return fmt.Errorf("duration must be greater than 1ms")
	}
	return nil
}

// CheckNonNegativeDuration accepts zero and positive durations.
func CheckNonNegativeDuration(d *durationpb.Duration) error {
	if d == nil {
		return nil
	}
	if err := d.CheckValid(); err != nil {
		return fmt.Errorf("invalid duration: %v", err)
	}
	if d.AsDuration() < 0 {
		return fmt.Errorf("duration must be non-negative")
	}
	return nil
}

// CheckPercent requires 0 <= v <= 100.
func CheckPercent(v float64) error {
	if v < 0 || v > 100 {
		return fmt.Errorf("percentage %v is not in range 0..100", v)
	}
	return nil
}

// Label syntax as Istio checks the labels workloads carry (WorkloadEntry,
// subsets, sourceLabels): a key is a qualified name with an optional DNS
// prefix, a value is empty or a qualified name (of any length).
const (
	labelQualifiedFmt = "(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
	labelDNSLabelFmt  = "[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?"
	labelPrefixMaxLen = 253
)

var (
	labelKeyRe   = regexp.MustCompile("^(" + labelDNSLabelFmt + `(?:\.` + labelDNSLabelFmt + ")*/)?(" + labelQualifiedFmt + ")$")
	labelValueRe = regexp.MustCompile("^(" + labelQualifiedFmt + ")?$")
)

// CheckLabels validates label keys and values as Istio does, with its
// messages; the problems are sorted.
func CheckLabels(labels map[string]string) error {
	var msgs []string
	for k, v := range labels {
		switch m := labelKeyRe.FindStringSubmatch(k); {
		case m == nil:
			msgs = append(msgs, fmt.Sprintf("invalid tag key: %q", k))
		case len(m[1]) > 0 && len(m[1])-1 > labelPrefixMaxLen:
			msgs = append(msgs, fmt.Sprintf("invalid tag key: %q (DNS prefix is too long)", k))
		case len(m[2]) > dns1123LabelMaxLength:
			msgs = append(msgs, fmt.Sprintf("invalid tag key: %q (name is too long)", k))
		}
		if !labelValueRe.MatchString(v) {
			msgs = append(msgs, fmt.Sprintf("invalid tag value: %q", v))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	sortStrings(msgs)
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// checkKubeLabels validates label keys and values as Kubernetes does.
func checkKubeLabels(labels map[string]string) error {
	var msgs []string
	for k, v := range labels {
		if k == "" {
			msgs = append(msgs, "empty label key")
			continue
		}
		for _, e := range validation.IsQualifiedName(k) {
			msgs = append(msgs, fmt.Sprintf("invalid label key %q: %s", k, e))
		}
		for _, e := range validation.IsValidLabelValue(v) {
			msgs = append(msgs, fmt.Sprintf("invalid label value %q for key %q: %s", v, k, e))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	sortStrings(msgs)
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// WarnSelectorLabels warns about selector labels that are no valid
// Kubernetes labels. Istio's validation checks the syntax of labels that
// workloads carry (WorkloadEntry, subsets, sourceLabels) but not of the
// labels a selector selects by, so such a selector is accepted: it matches
// no workload, as no workload can carry the label.
func WarnSelectorLabels(r *Report, p Path, labels map[string]string) {
	if err := checkKubeLabels(labels); err != nil {
		r.Warnf(p, "%v; the selector matches no workload", err)
	}
}

// CheckIPOrCIDR accepts an IP address or a CIDR range (Istio's messages).
func CheckIPOrCIDR(s string) error {
	if strings.Count(s, "/") == 1 {
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("%s is not a valid CIDR block", s)
		}
		return nil
	}
	if _, err := netip.ParseAddr(s); err != nil {
		return fmt.Errorf("%s is not a valid IP", s)
	}
	return nil
}

// checkExportTo validates the exportTo list of an object of namespace ns,
// with Istio's messages: ".", "*" or namespace names, no duplicates ("."
// and ns are one), "*" alone; "~" (no one) alone and only for
// ServiceEntries; a DestinationRule with a workload selector (drSelector)
// only to its own namespace.
func checkExportTo(r *Report, p Path, ns string, exportTo []string, serviceEntry, drSelector bool) {
	if len(exportTo) == 0 {
		return
	}
	set := map[string]bool{}
	for i, e := range exportTo {
		key := e
		if e == "." && ns != "" {
			key = ns
		}
		switch {
		case set[key] && key != e:
			r.Errorf(p.Index(i), "duplicate entries in exportTo: . and current namespace %s", ns)
		case set[key]:
			r.Errorf(p.Index(i), "duplicate entries in exportTo for entry %s", e)
		case key == "~" && serviceEntry, key == "." || key == "*":
			set[key] = true
		case key == "~":
			r.Errorf(p.Index(i), "exportTo ~ (none) is not allowed for Istio configuration objects")
		case !netIsLabel(key):
			r.Errorf(p.Index(i), "only .,*, or a valid DNS 1123 label is allowed as exportTo entry")
		default:
			set[key] = true
		}
	}
	if drSelector && len(set) > 0 {
		own := set[ns] || set["."]
		switch {
		case own && len(set) > 1:
			r.Errorf(p, "destination rule with workload selector cannot have multiple entries in exportTo")
		case !own:
			r.Errorf(p, "destination rule with workload selector cannot have exportTo beyond current namespace")
		}
	}
	if set["*"] && len(exportTo) > 1 {
		r.Errorf(p, "cannot have both public (*) and non-public exportTo values for a resource")
	}
	if set["~"] && len(exportTo) > 1 {
		r.Errorf(p, "cannot export service entry to no one (~) and someone")
	}
}

func sortStrings(s []string) { sort.Strings(s) }
