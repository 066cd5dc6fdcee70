package statuswriter_test

import (
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway/statuswriter"
)

// BenchmarkCompare1050Statuses is what deciding that nothing needs writing
// costs for 50 Gateways and 1,000 HTTPRoutes: each desired status compared
// with the object's.
func BenchmarkCompare1050Statuses(b *testing.B) {
	cond := func(t string) metav1.Condition {
		return metav1.Condition{Type: t, Status: "True", Reason: t, Message: "No errors found", ObservedGeneration: 1,
			LastTransitionTime: metav1.Unix(1, 0)}
	}
	var cur, desired []any
	for i := 0; i < 50; i++ {
		g := &gatewayv1.GatewayStatus{Conditions: []metav1.Condition{cond("Accepted"), cond("Programmed"), cond("ResolvedRefs")},
			Listeners: []gatewayv1.ListenerStatus{{Name: "http", AttachedRoutes: 20, Conditions: []metav1.Condition{
				cond("Accepted"), cond("Conflicted"), cond("Programmed"), cond("ResolvedRefs")}}}}
		cur, desired = append(cur, g), append(desired, g.DeepCopy())
	}
	for i := 0; i < 1000; i++ {
		r := &gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{{
			ParentRef: gatewayv1.ParentReference{Name: gatewayv1.ObjectName("gw-" + strconv.Itoa(i%50))}, ControllerName: "istio.io/gateway-controller",
			Conditions: []metav1.Condition{cond("Accepted"), cond("ResolvedRefs")}}}}}
		cur, desired = append(cur, r), append(desired, r.DeepCopy())
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range cur {
			if !statuswriter.Equal(cur[i], desired[i]) {
				b.Fatal("differs")
			}
		}
	}
}
