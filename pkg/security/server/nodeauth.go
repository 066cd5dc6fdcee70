package server

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pkg/security"
)

// NodeAuthorizer decides whether a caller may have a certificate issued
// for another identity (ztunnel asking for the workloads of its node).
type NodeAuthorizer interface {
	// Authorize returns nil when caller may impersonate identity (a
	// SPIFFE URI), else why not (logged, never sent).
	Authorize(caller security.KubernetesInfo, identity string) error
}

// ParseTrustedNodeAccounts reads CA_TRUSTED_NODE_ACCOUNTS: comma-separated
// <namespace>/<service account> entries. Malformed entries are returned
// apart, for a warning, as Istio ignores them.
func ParseTrustedNodeAccounts(v string) (accounts []types.NamespacedName, ignored []string) {
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		ns, sa, ok := strings.Cut(e, "/")
		if !ok || ns == "" || sa == "" {
			ignored = append(ignored, e)
			continue
		}
		accounts = append(accounts, types.NamespacedName{Namespace: ns, Name: sa})
	}
	return accounts, ignored
}

// PodNodeAuthorizer is Istio's node authorization over a cluster's pods:
// the caller must be one of the trusted node accounts, its token must be
// bound to a pod that exists with that UID and service account, and a pod
// of the requested identity's service account must run on the caller's
// node.
type PodNodeAuthorizer struct {
	trusted map[types.NamespacedName]bool
	pods    cache.Indexer
}

var _ NodeAuthorizer = (*PodNodeAuthorizer)(nil)

// saNodeIndex indexes pods by "<namespace>/<service account>@<node>".
const saNodeIndex = "saNode"

func saNodeKey(ns, sa, node string) string { return ns + "/" + sa + "@" + node }

// PodIndexers are the indexers NewPodNodeAuthorizer needs on the pod
// informer: add them before the informer starts.
func PodIndexers() cache.Indexers {
	return cache.Indexers{saNodeIndex: func(obj any) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" || p.Spec.ServiceAccountName == "" || p.Status.Phase == corev1.PodFailed {
			return nil, nil
		}
		return []string{saNodeKey(p.Namespace, p.Spec.ServiceAccountName, p.Spec.NodeName)}, nil
	}}
}

// NewPodNodeAuthorizer authorizes against pods, an indexer with
// PodIndexers (a pod informer's).
func NewPodNodeAuthorizer(trusted []types.NamespacedName, pods cache.Indexer) *PodNodeAuthorizer {
	a := &PodNodeAuthorizer{trusted: map[types.NamespacedName]bool{}, pods: pods}
	for _, t := range trusted {
		a.trusted[t] = true
	}
	return a
}

// Authorize implements NodeAuthorizer, with Istio's reasons.
func (a *PodNodeAuthorizer) Authorize(caller security.KubernetesInfo, identity string) error {
	if !a.trusted[types.NamespacedName{Namespace: caller.PodNamespace, Name: caller.PodServiceAccount}] {
		return fmt.Errorf("caller (%v) is not allowed to impersonate", caller)
	}
	_, ns, sa, err := security.ParseSpiffeID(identity)
	if err != nil {
		return fmt.Errorf("failed to validate impersonated identity %v", identity)
	}
	obj, exists, err := a.pods.GetByKey(caller.PodNamespace + "/" + caller.PodName)
	if err != nil || !exists {
		return fmt.Errorf("pod %v/%v not found", caller.PodNamespace, caller.PodName)
	}
	pod := obj.(*corev1.Pod)
	if string(pod.UID) != caller.PodUID {
		return fmt.Errorf("pod found, but UID does not match: %v vs %v", pod.UID, caller.PodUID)
	}
	if pod.Spec.ServiceAccountName != caller.PodServiceAccount {
		return fmt.Errorf("pod found, but ServiceAccount does not match: %v vs %v", pod.Spec.ServiceAccountName, caller.PodServiceAccount)
	}
	on, err := a.pods.ByIndex(saNodeIndex, saNodeKey(ns, sa, pod.Spec.NodeName))
	if err != nil || len(on) == 0 {
		return fmt.Errorf("no instances of %q found on node %q", ns+"/"+sa, pod.Spec.NodeName)
	}
	return nil
}

var errNoNodeAuthorizer = errors.New("impersonation not allowed, as node authorizer (CA_TRUSTED_NODE_ACCOUNTS) is not configured")
