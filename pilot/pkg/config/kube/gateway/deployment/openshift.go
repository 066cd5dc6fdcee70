package deployment

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// OpenShift's namespace annotations of the user and group ids a pod may run
// as; Istio runs a gateway as the last id of the first range.
const (
	annotationUIDRange          = "openshift.io/sa.scc.uid-range"
	annotationSupplementalGroup = "openshift.io/sa.scc.supplemental-groups"
)

// proxyIDs are the user and group the proxy runs as: 1337 and 1337, unless
// the namespace carries OpenShift's ranges.
func proxyIDs(ns *corev1.Namespace) (uid, gid int64) {
	uid, gid = defaultProxyID, defaultProxyID
	if ns == nil {
		return uid, gid
	}
	if v := ns.Annotations[annotationUIDRange]; v != "" {
		if _, end, err := parseIDBlock(v); err == nil {
			uid = end
		}
	}
	groups, ok := ns.Annotations[annotationSupplementalGroup]
	if !ok {
		groups = ns.Annotations[annotationUIDRange]
	}
	if groups != "" {
		if _, end, err := parseIDBlock(strings.Split(groups, ",")[0]); err == nil {
			gid = end
		}
	}
	return uid, gid
}

// parseIDBlock reads "<start>/<size>" or "<start>-<end>".
func parseIDBlock(s string) (start, end int64, err error) {
	var a, b uint32
	if strings.Contains(s, "/") {
		if _, err := fmt.Sscanf(s, "%d/%d", &a, &b); err != nil {
			return 0, 0, err
		}
		return int64(a), int64(a) + int64(b) - 1, nil
	}
	if _, err := fmt.Sscanf(s, "%d-%d", &a, &b); err != nil {
		return 0, 0, err
	}
	return int64(a), int64(b), nil
}
