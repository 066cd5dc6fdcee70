package validation

import (
	"fmt"
	"net/netip"
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
func CheckFQDN(host string) error {
	h := strings.TrimSuffix(host, ".")
	if h == "" {
		return fmt.Errorf("domain name %q is empty", host)
	}
	if len(h) > dnsNameMaxLength {
		return fmt.Errorf("domain name %q too long (max %d)", host, dnsNameMaxLength)
	}
	for _, label := range strings.Split(h, ".") {
		if err := checkDNSLabel(label); err != nil {
			return fmt.Errorf("domain name %q invalid (label %q: %v)", host, label, err)
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

// CheckWildcardDNSName validates a host that may start with "*" or "*." (the
// wildcard must be the whole first label), or be "*" alone.
func CheckWildcardDNSName(host string) error {
	if host == "*" {
		return nil
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return CheckFQDN(rest)
	}
	if rest, ok := strings.CutPrefix(host, "*"); ok {
		// "*foo.com" is accepted by Istio: the wildcard prefix matches any characters
		if rest == "" {
			return nil
		}
		return CheckFQDN(rest)
	}
	if strings.Contains(host, "*") {
		return fmt.Errorf("wildcard is only allowed as the first character of host %q", host)
	}
	return CheckFQDN(host)
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

// CheckLabels validates label keys and values as Kubernetes does.
func CheckLabels(labels map[string]string) error {
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
	if err := CheckLabels(labels); err != nil {
		r.Warnf(p, "%v; the selector matches no workload", err)
	}
}

// CheckIPOrCIDR accepts an IP address or a CIDR range.
func CheckIPOrCIDR(s string) error {
	if strings.Contains(s, "/") {
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("invalid CIDR %q", s)
		}
		return nil
	}
	if _, err := netip.ParseAddr(s); err != nil {
		return fmt.Errorf("invalid IP address %q", s)
	}
	return nil
}

// CheckExportTo validates an exportTo list: ".", "~", "*" or namespace names;
// "*" and "~" cannot be combined with other entries.
func CheckExportTo(exportTo []string) error {
	seen := map[string]bool{}
	for _, e := range exportTo {
		if seen[e] {
			return fmt.Errorf("duplicate entry %q in exportTo", e)
		}
		seen[e] = true
		switch e {
		case ".", "*", "~":
		default:
			if err := CheckDNS1123Label(e); err != nil {
				return fmt.Errorf("invalid exportTo entry: %v", err)
			}
		}
	}
	if (seen["*"] || seen["~"]) && len(exportTo) > 1 {
		return fmt.Errorf("exportTo with '*' or '~' cannot hold other entries")
	}
	return nil
}

func sortStrings(s []string) { sort.Strings(s) }
