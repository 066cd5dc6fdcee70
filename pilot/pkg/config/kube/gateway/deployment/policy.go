package deployment

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ControllerVersion is the version of Istio's deployment controller logic
// (Istio 1.18 and later): a Gateway annotated with a larger
// gateway.istio.io/controller-version, or one that is not a number, belongs
// to another controller.
const ControllerVersion = 5

// skipReason says why Istio generates nothing for gw ("" when it does).
// manual is ENABLE_GATEWAY_API_MANUAL_DEPLOYMENT; ns is the Gateway's
// namespace (nil when unknown).
func skipReason(gw *gatewayv1.Gateway, ns *corev1.Namespace, revision string, manual bool) string {
	if manual && !managedAddresses(gw.Spec.Addresses) {
		return "spec.addresses names an existing deployment (a hostname, or more than one address)"
	}
	if v, ok := gw.Annotations[annotationControllerVersion]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n > ControllerVersion {
			return fmt.Sprintf("%s %q: managed by another controller version", annotationControllerVersion, v)
		}
	}
	if !isMine(gw, ns, revision) {
		return "for another revision"
	}
	return ""
}

// managedAddresses: no address, or one IP address (which becomes the
// Service's loadBalancerIP), means Istio deploys the Gateway; a hostname or
// several addresses point at an existing deployment.
func managedAddresses(addrs []gatewayv1.GatewaySpecAddress) bool {
	switch len(addrs) {
	case 0:
		return true
	case 1:
		return addrs[0].Type == nil || *addrs[0].Type == gatewayv1.IPAddressType
	}
	return false
}

// isMine: the Gateway's istio.io/rev label, else its namespace's, names
// this revision; without either, the default revision takes it.
func isMine(gw *gatewayv1.Gateway, ns *corev1.Namespace, revision string) bool {
	if revision == "" {
		revision = "default"
	}
	selected, ok := gw.Labels[labelRevision]
	if !ok && ns != nil {
		selected = ns.Labels[labelRevision]
	}
	if selected == "" {
		return revision == "default"
	}
	return selected == revision
}

// listenersAllowed reports whether gw admits the listeners of a ListenerSet
// of namespace lsNamespace (spec.allowedListeners; none by default).
func listenersAllowed(gw *gatewayv1.Gateway, lsNamespace string, lookup func(string) *corev1.Namespace) bool {
	al := gw.Spec.AllowedListeners
	if al == nil || al.Namespaces == nil {
		return false
	}
	if from := al.Namespaces.From; from != nil {
		switch *from {
		case gatewayv1.NamespacesFromAll:
			return true
		case gatewayv1.NamespacesFromSame:
			return lsNamespace == gw.Namespace
		case gatewayv1.NamespacesFromSelector:
		default:
			return false
		}
	}
	if al.Namespaces.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(al.Namespaces.Selector)
	if err != nil {
		return false
	}
	ns := lookup(lsNamespace)
	if ns == nil {
		return false
	}
	set := labels.Set{}
	for k, v := range ns.Labels {
		set[k] = v
	}
	set["kubernetes.io/metadata.name"] = ns.Name
	return sel.Matches(set)
}
