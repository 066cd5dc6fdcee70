package inject

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NativeSidecarMode is ENABLE_NATIVE_SIDECARS: "true", "false" or "auto"
// (the default: decided by the nodes' kubelet versions).
type NativeSidecarMode string

// The modes.
const (
	NativeSidecarsAuto     NativeSidecarMode = "auto"
	NativeSidecarsEnabled  NativeSidecarMode = "true"
	NativeSidecarsDisabled NativeSidecarMode = "false"
)

// ParseNativeSidecarMode reads ENABLE_NATIVE_SIDECARS as Istio does: a
// boolean enables or disables, anything else is auto.
func ParseNativeSidecarMode(s string) NativeSidecarMode {
	if b, err := strconv.ParseBool(s); err == nil {
		if b {
			return NativeSidecarsEnabled
		}
		return NativeSidecarsDisabled
	}
	return NativeSidecarsAuto
}

// NodeLister is what native sidecar detection reads of the cluster's nodes.
type NodeLister interface {
	// Node returns the node of that name (nil when unknown).
	Node(name string) *corev1.Node
	// Nodes returns every node.
	Nodes() []*corev1.Node
}

// nativeSidecarMinor is the Kubernetes minor version from which native
// sidecars are stable (1.33).
const nativeSidecarMinor = 33

// DetectNativeSidecar decides native sidecars for a pod: the mode when it is
// true or false; in auto mode, the kubelet version of the pod's node when
// the pod names a known one, else every node must be at least 1.33 (so no
// node at all means yes, as in Istio). Without a lister auto is no.
func DetectNativeSidecar(mode NativeSidecarMode, nodes NodeLister, nodeName string) bool {
	switch mode {
	case NativeSidecarsEnabled:
		return true
	case NativeSidecarsDisabled:
		return false
	}
	if nodes == nil {
		scope.Warnf("native sidecar auto detection has no node client: native sidecars disabled")
		return false
	}
	if nodeName != "" {
		if n := nodes.Node(nodeName); n != nil {
			return nodeSupportsNative(n)
		}
		scope.Warnf("pod assigned to node %q but node not found in cluster", nodeName)
	}
	for _, n := range nodes.Nodes() {
		if !nodeSupportsNative(n) {
			return false
		}
	}
	return true
}

func nodeSupportsNative(n *corev1.Node) bool {
	minor, err := kubeletMinor(n.Status.NodeInfo.KubeletVersion)
	if err != nil {
		scope.Warnf("could not read node version for %s %q: %v", n.Name, n.Status.NodeInfo.KubeletVersion, err)
		return false
	}
	return minor >= nativeSidecarMinor
}

// kubeletMinor reads the minor version of "v1.31.6", "1.33.0-gke.1" and
// the like.
func kubeletMinor(v string) (int, error) {
	s := strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return 0, fmt.Errorf("malformed version %q", v)
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return 0, fmt.Errorf("malformed version %q", v)
		}
	}
	return strconv.Atoi(parts[1])
}
