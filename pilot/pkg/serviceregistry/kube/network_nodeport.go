package kube

import (
	"encoding/json"
	"slices"

	"istio.io/api/annotation"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

// This file is the NodePort network gateway, as Istio's kube registry has
// it: a gateway Service of type NodePort annotated
// traffic.istio.io/nodeSelector is reached at its externalIPs when it has
// some, else at the ExternalIP address of every node the annotation's
// selector selects (nodes without one are left out). Either way its
// gateway port is replaced by the node port of that service port (the
// HBONE port is not). A node added, removed or relabelled, or an address
// change, derives the gateway again (the transform fetched the nodes).

// isNodePortGateway reports whether a Service is reached through node
// ports of selected nodes.
func isNodePortGateway(svc *corev1.Service) bool {
	_, ok := svc.Annotations[annotation.TrafficNodeSelector.Name]
	return ok && svc.Spec.Type == corev1.ServiceTypeNodePort
}

// nodePortMap maps the service ports of a NodePort gateway to their node
// ports.
func nodePortMap(svc *corev1.Service) map[uint32]uint32 {
	out := make(map[uint32]uint32, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		out[uint32(p.Port)] = uint32(p.NodePort)
	}
	return out
}

// nodeSelector is the selector of a NodePort gateway: nil (every node)
// when the annotation is empty or is not a JSON map of strings.
func nodeSelector(svc *corev1.Service) map[string]string {
	v := svc.Annotations[annotation.TrafficNodeSelector.Name]
	if v == "" {
		return nil
	}
	var sel map[string]string
	if err := json.Unmarshal([]byte(v), &sel); err != nil {
		scope.Debugf("Service %s/%s: annotation %s=%q is not a JSON map of labels; every node is selected",
			svc.Namespace, svc.Name, annotation.TrafficNodeSelector.Name, v)
		return nil
	}
	return sel
}

// selectedNodeAddresses are the ExternalIP addresses (the first of each
// node) of the nodes a NodePort gateway selects, sorted, without
// duplicates.
func (c *Controller) selectedNodeAddresses(ctx krt.HandlerContext, svc *corev1.Service) []string {
	if c.nodes == nil {
		return nil
	}
	var opts []krt.FetchOption
	if sel := nodeSelector(svc); len(sel) > 0 {
		opts = append(opts, krt.FilterLabel(sel))
	}
	var out []string
	for _, n := range krt.Fetch(ctx, c.nodes, opts...) {
		if a := nodeExternalIP(n); a != "" {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// nodeExternalIP is a node's first ExternalIP address ("" without one).
func nodeExternalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeExternalIP && a.Address != "" {
			return a.Address
		}
	}
	return ""
}
