package integration

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	securityapi "istio.io/api/security/v1beta1"
	typeapi "istio.io/api/type/v1beta1"
	clientsecurity "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pkg/workloadapi"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
	"github.com/meshplane/istiod/tests/kube"
)

// With PILOT_ENABLE_AMBIENT istiod serves a ztunnel, over delta ADS, the
// workload API of what the API server holds: a redirected pod as an HBONE
// workload of its service, the service by namespace/hostname, an L4
// AuthorizationPolicy; a pod deleted is removed from the ztunnel, a policy
// edited is resent.
func TestAmbientWorkloadAPIThroughTheAPIServer(t *testing.T) {
	env := kube.Shared(t)
	sys := env.NewNamespace(t, nil).Name
	ns := env.NewNamespace(t, map[string]string{"istio.io/dataplane-mode": "ambient"}).Name
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "flights-1", Namespace: ns, Labels: map[string]string{"app": "flights"},
		Annotations: map[string]string{"ambient.istio.io/redirection": "enabled"}},
		Spec: corev1.PodSpec{ServiceAccountName: "flights", Containers: []corev1.Container{{Name: "app", Image: "flights"}}}}
	created, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	must(t, err)
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.248.1.7", PodIPs: []corev1.PodIP{{IP: "10.248.1.7"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	_, err = env.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	must(t, err)
	svc, err := env.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "flights", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "flights"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
	must(t, err)
	ready := true
	_, err = env.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "flights-abc", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "flights"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.248.1.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "flights-1", Namespace: ns}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptrTo("http"), Port: ptrTo(int32(8080))}},
	}, metav1.CreateOptions{})
	must(t, err)
	policy := &clientsecurity.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "flights-l4", Namespace: ns},
		Spec: securityapi.AuthorizationPolicy{Selector: &typeapi.WorkloadSelector{MatchLabels: map[string]string{"app": "flights"}},
			Rules: []*securityapi.Rule{{From: []*securityapi.Rule_From{{Source: &securityapi.Source{Principals: []string{"cluster.local/ns/" + ns + "/sa/booking"}}}}}}}}
	_, err = env.Istio.SecurityV1().AuthorizationPolicies(ns).Create(ctx, policy, metav1.CreateOptions{})
	must(t, err)

	d := startIstiod(t, env, sys, func(a *bootstrap.PilotArgs) { a.EnableAmbient = true })
	z := dialADS(t, d, adsc.Config{Delta: true, NodeID: "ztunnel~10.248.0.3~ztunnel-1." + sys + "~" + sys + ".svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": sys, "CLUSTER_ID": "Kubernetes", "NODE_NAME": "worker-1"}})
	must(t, z.c.Watch(xds.AddressType))
	must(t, z.c.Watch(xds.AuthorizationType))

	uid := "Kubernetes//Pod/" + ns + "/flights-1"
	host := ns + "/flights." + ns + ".svc.cluster.local"
	policyName := ns + "/flights-l4"
	z.await("the pod, its service and its policy", func() (bool, string) {
		w, _ := z.c.Resource(xds.AddressType, uid).(*workloadapi.Address)
		s, _ := z.c.Resource(xds.AddressType, host).(*workloadapi.Address)
		p, _ := z.c.Resource(xds.AuthorizationType, policyName).(*security.Authorization)
		if w == nil || s == nil || p == nil {
			return false, fmt.Sprintf("workload %v service %v policy %v; addresses %v", w != nil, s != nil, p != nil, z.c.State(xds.AddressType))
		}
		wl := w.GetWorkload()
		ip, _ := netip.AddrFromSlice(firstOf(wl.GetAddresses()))
		ports := wl.GetServices()[host].GetPorts()
		if wl.GetTunnelProtocol() != workloadapi.TunnelProtocol_HBONE || ip.String() != "10.248.1.7" || wl.GetServiceAccount() != "flights" ||
			len(ports) != 1 || ports[0].GetServicePort() != 80 || ports[0].GetTargetPort() != 8080 ||
			!contains(strings.Join(wl.GetAuthorizationPolicies(), ","), policyName) {
			return false, fmt.Sprintf("workload %v", wl)
		}
		vip := ""
		if a := s.GetService().GetAddresses(); len(a) > 0 {
			addr, _ := netip.AddrFromSlice(a[0].GetAddress())
			vip = addr.String()
		}
		if vip != svc.Spec.ClusterIP || p.GetScope() != security.Scope_WORKLOAD_SELECTOR || p.GetAction() != security.Action_ALLOW {
			return false, fmt.Sprintf("service %v (cluster IP %s), policy %v", s.GetService(), svc.Spec.ClusterIP, p)
		}
		return true, ""
	})

	// a policy edit is resent, a pod deletion removes the workload
	cur, err := env.Istio.SecurityV1().AuthorizationPolicies(ns).Get(ctx, "flights-l4", metav1.GetOptions{})
	must(t, err)
	cur.Spec.Action = securityapi.AuthorizationPolicy_DENY
	_, err = env.Istio.SecurityV1().AuthorizationPolicies(ns).Update(ctx, cur, metav1.UpdateOptions{})
	must(t, err)
	must(t, env.Kube.CoreV1().Pods(ns).Delete(ctx, "flights-1", metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}))
	z.await("the edit and the deletion", func() (bool, string) {
		p, _ := z.c.Resource(xds.AuthorizationType, policyName).(*security.Authorization)
		gone := z.c.Resource(xds.AddressType, uid) == nil
		return p.GetAction() == security.Action_DENY && gone, fmt.Sprintf("policy %v, workload gone %v", p, gone)
	})
}

func firstOf(bs [][]byte) []byte {
	if len(bs) == 0 {
		return nil
	}
	return bs[0]
}
