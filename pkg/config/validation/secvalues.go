package validation

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Checks of the string lists of security policies (AuthorizationPolicy
// sources, operations and conditions), in Istio's words. key names the
// list in the message as Istio does ("Principals", "source.ip", ...); each
// problem is reported at the offending value.

// secCheckEmpty reports the first empty value; it returns false when it
// reported one.
func secCheckEmpty(r *Report, p Path, key string, values []string) bool {
	for i, v := range values {
		if v == "" {
			r.Errorf(p.Index(i), "empty value not allowed, found in %s", key)
			return false
		}
	}
	return true
}

// secWildcardValueErr checks values whose wildcard may only lead or trail.
func secWildcardValueErr(key string, values []string) (int, error) {
	for i, v := range values {
		if v == "" {
			return i, fmt.Errorf("empty value not allowed, found in %s", key)
		}
	}
	for i, v := range values {
		n := strings.Count(v, "*")
		if n > 1 {
			return i, fmt.Errorf("at most one wildcard is allowed, found in %s: %q", key, v)
		}
		if n == 1 && v != "*" && !strings.HasPrefix(v, "*") && !strings.HasSuffix(v, "*") {
			return i, fmt.Errorf("wildcard is only allowed at the start or end, found in %s: %q", key, v)
		}
	}
	return -1, nil
}

// secTrustDomainValueErr checks trust domain values: wildcard values
// without '/'.
func secTrustDomainValueErr(key string, values []string) (int, error) {
	if i, err := secWildcardValueErr(key, values); err != nil {
		return i, err
	}
	for i, v := range values {
		if strings.Contains(v, "/") {
			return i, fmt.Errorf("trust domain must not contain '/', found in %s: %q", key, v)
		}
	}
	return -1, nil
}

// secServiceAccountValueErr checks "serviceAccount" or
// "namespace/serviceAccount" values; i is -1 for a problem of the list.
func secServiceAccountValueErr(key string, values []string) (int, error) {
	if len(values) > 16 {
		return -1, fmt.Errorf("may not have more than 16 values")
	}
	const format = "expected format 'serviceAccount' or 'namespace/serviceAccount'"
	for i, v := range values {
		switch {
		case v == "":
			return i, fmt.Errorf("empty value not allowed, found in %s", key)
		case strings.Contains(v, "*"):
			return i, fmt.Errorf("wildcard not allowed, found in %s", key)
		case strings.Count(v, "/") > 1:
			return i, fmt.Errorf("%s, found %q in %s", format, v, key)
		case len(v) > 320:
			return i, fmt.Errorf("value cannot exceed 320 characters, found %q in %s", v, key)
		}
		if ns, sa, ok := strings.Cut(v, "/"); ok {
			if ns == "" {
				return i, fmt.Errorf("%s, found empty namespace %q in %s", format, v, key)
			}
			if sa == "" {
				return i, fmt.Errorf("%s, found empty serviceAccount %q in %s", format, v, key)
			}
		}
	}
	return -1, nil
}

// secIPErrs checks IP addresses and CIDR ranges, one problem per value.
func secIPErrs(values []string) map[int]error {
	errs := map[int]error{}
	for i, v := range values {
		if strings.Contains(v, "/") {
			if _, err := netip.ParsePrefix(v); err != nil {
				errs[i] = fmt.Errorf("bad CIDR range (%s): %v", v, err)
			}
		} else if _, err := netip.ParseAddr(v); err != nil {
			errs[i] = fmt.Errorf("bad IP address (%s)", v)
		}
	}
	return errs
}

// secPortErrs checks port numbers 0..65535, one problem per value; Istio
// prints the parse error, <nil> for a number out of range.
func secPortErrs(values []string) map[int]error {
	errs := map[int]error{}
	for i, v := range values {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n > 65535 {
			errs[i] = fmt.Errorf("bad port (%s): %v", v, err)
		}
	}
	return errs
}

// secPathTemplateValueErr checks the {*} / {**} templates of paths; a
// plain path is accepted as it is.
func secPathTemplateValueErr(key string, paths []string) (int, error) {
	for i, path := range paths {
		isTemplate := strings.Contains(path, "{*}") || strings.Contains(path, "{**}")
		trimmed := strings.Trim(path, "/")
		seenAny := false
		for _, seg := range strings.Split(trimmed, "/") {
			switch {
			case (seg == "{*}" || seg == "{**}") && seenAny:
				return i, fmt.Errorf("invalid or unsupported path %s, found in %s. {**} is not the last operator", trimmed, key)
			case seg == "{*}":
				continue
			case seg == "{**}":
				seenAny = true
				continue
			}
			if strings.ContainsAny(seg, "{}") {
				return i, fmt.Errorf("invalid or unsupported path %s, found in %s. "+
					"Contains '{' or '}' beyond a supported path template", trimmed, key)
			}
			if isTemplate && !secPathLiteralRe.MatchString(seg) {
				return i, fmt.Errorf("invalid or unsupported path %s, found in %s. "+
					"Contains segment %s with invalid string literal", trimmed, key, seg)
			}
		}
	}
	return -1, nil
}

// secReportAt records err at the value it names (i >= 0) or at the list.
func secReportAt(r *Report, p Path, i int, err error) {
	if err == nil {
		return
	}
	if i >= 0 {
		p = p.Index(i)
	}
	r.Add(p, err)
}

// secReportAll records one problem per value, in value order.
func secReportAll(r *Report, p Path, values []string, errs map[int]error) {
	for i := range values {
		if err := errs[i]; err != nil {
			r.Add(p.Index(i), err)
		}
	}
}

// secAttributeErrs checks a condition's values for attribute key as Istio
// does; each problem is returned with the index of its value (-1: the key).
func secAttributeErrs(key string, values []string) (idx []int, errs []error) {
	one := func(i int, err error) ([]int, []error) {
		if err == nil {
			return nil, nil
		}
		return []int{i}, []error{err}
	}
	many := func(m map[int]error) ([]int, []error) {
		for i := range values {
			if m[i] != nil {
				idx, errs = append(idx, i), append(errs, m[i])
			}
		}
		return idx, errs
	}
	for i, v := range values {
		if v == "" {
			return one(i, fmt.Errorf("empty value not allowed, found in %s", key))
		}
	}
	switch {
	case strings.HasPrefix(key, "request.headers"), strings.HasPrefix(key, "request.auth.claims"),
		strings.HasPrefix(key, "experimental.envoy.filters."):
		return one(-1, secMapKey(key))
	case key == "source.ip", key == "remote.ip", key == "destination.ip":
		return many(secIPErrs(values))
	case key == "source.serviceAccount":
		return one(secServiceAccountValueErr(key, values))
	case key == "source.trustDomain":
		return one(secWildcardValueErr(key, values))
	case key == "destination.port":
		return many(secPortErrs(values))
	case key == "source.namespace", key == "source.principal", key == "request.auth.principal",
		key == "request.auth.audiences", key == "request.auth.presenter", key == "connection.sni":
		return nil, nil
	case key == "destination.namespace":
		return one(-1, fmt.Errorf("attribute %s is replaced by the metadata.namespace", key))
	case strings.HasPrefix(key, "destination.labels"):
		return one(-1, fmt.Errorf("attribute %s is replaced by the workload selector", key))
	case key == "destination.name", key == "destination.user":
		return one(-1, fmt.Errorf("deprecated attribute %s: only supported in v1alpha1", key))
	}
	return one(-1, fmt.Errorf("unknown attribute: %s", key))
}

func secMapKey(key string) error {
	open := strings.Index(key, "[")
	if strings.HasSuffix(key, "]") && open > 0 && open < len(key)-2 {
		return nil
	}
	return fmt.Errorf("bad key (%s): should have format a[b]", key)
}
