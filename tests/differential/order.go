package differential

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// inTieOrder reorders the objects of each kind, keeping the positions
// each kind holds in objs, so that they are created in the order both
// control planes break creation-time ties: services by hostname, other
// configuration by name, then namespace.
//
// Both control planes order services and configuration by creation time
// first, and the API server stamps creation times to the second. A case
// applied in file order could therefore cross a second boundary between
// two objects in one world and not in the other, and the worlds would
// then order them differently (the intermittent port 3306 difference of
// sidecar-sniffing: nets.example.com was declared before mysql.example.com
// and, when a second passed between them, came first in one world only).
// Created in tie order, the order is the same whatever the clock does.
func inTieOrder(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := slices.Clone(objs)
	byKind := map[string][]int{}
	for i, u := range out {
		byKind[u.GroupVersionKind().GroupKind().String()] = append(byKind[u.GroupVersionKind().GroupKind().String()], i)
	}
	for _, idx := range byKind {
		items := make([]*unstructured.Unstructured, len(idx))
		for j, i := range idx {
			items[j] = out[i]
		}
		slices.SortStableFunc(items, func(a, b *unstructured.Unstructured) int {
			return cmp.Or(cmp.Compare(tieKey(a), tieKey(b)), cmp.Compare(a.GetNamespace(), b.GetNamespace()))
		})
		for j, i := range idx {
			out[i] = items[j]
		}
	}
	return out
}

// tieKey is what breaks a creation-time tie of u: the hostname of a
// Service (<name>.<namespace>, its domain suffix being common to all) or
// the first host of a ServiceEntry, else the name.
func tieKey(u *unstructured.Unstructured) string {
	switch u.GroupVersionKind().GroupKind().String() {
	case "Service":
		return u.GetName() + "." + u.GetNamespace()
	case "ServiceEntry.networking.istio.io":
		if hosts, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "hosts"); len(hosts) > 0 {
			return hosts[0]
		}
	}
	return u.GetName()
}

// startOfSecond waits, when most of the current second has passed, for
// the next one to begin, so that a case's objects (created in well under
// half a second) get one creation second in each world. Tie order cannot
// settle everything: a ServiceEntry's hosts sort one by one (cred and
// other.example.com of sidecar-upstream-tls fall on either side of
// grpc.example.com), so two worlds whose seconds ticked at different
// points of the case would order its services apart.
func startOfSecond() {
	now := time.Now()
	if frac := time.Duration(now.Nanosecond()); frac > 400*time.Millisecond {
		time.Sleep(time.Second - frac)
	}
}
