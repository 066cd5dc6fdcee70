package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
)

// Kubernetes Services that select WorkloadEntries, as Istio's VM guide
// sets them up: a hand-made entry's address joins the EDS of the Service
// its labels match (the service port mapped through the entry's port of
// the same name), leaves it when its labels stop matching and when it is
// deleted; an auto-registered VM (Istio's pilot-agent with a
// WorkloadGroup) joins the Service selecting the group's labels; a remote
// cluster's WorkloadEntry joins that cluster's Service of the same name
// and a local ServiceEntry that selects it.
func TestServiceSelectsWorkloadEntries(t *testing.T) {
	local := kube.Shared(t)
	istiodNS := local.NewNamespace(t, nil).Name
	d := startIstiod(t, local, istiodNS)
	vm := newVMSetup(t, local, istiodNS)
	ns := vm.ns
	ctx := context.Background()

	createService := func(env *kube.Env, name string, selector map[string]string) {
		t.Helper()
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: selector,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if _, err := env.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createEntry := func(env *kube.Env, name, addr string, labels map[string]string, ports map[string]uint32) *clientnetworking.WorkloadEntry {
		t.Helper()
		we := &clientnetworking.WorkloadEntry{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		we.Spec = networking.WorkloadEntry{Address: addr, Labels: labels, Ports: ports, ServiceAccount: "web-sa"}
		out, err := env.Istio.NetworkingV1().WorkloadEntries(ns).Create(ctx, we, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	createService(local, "web", map[string]string{"app": "web"})
	createService(local, "vm", map[string]string{"app": "vm"})
	entry := createEntry(local, "web-vm", "10.209.0.1", map[string]string{"app": "web"}, map[string]uint32{"http": 9090})

	proxy := adsc.Config{NodeID: "sidecar~10.209.9.9~client." + ns + "~" + ns + ".svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "1.31.0"}}
	web := "outbound|80||web." + ns + ".svc.cluster.local"
	vmCluster := "outbound|80||vm." + ns + ".svc.cluster.local"
	se := "outbound|80||web-se.example.com"
	endpointsAre := func(what string, want map[string][]string) {
		t.Helper()
		eventually(t, what, func() (bool, string) {
			snap, err := adsc.Fetch(ctx, d.srv.GRPCAddr(), proxy)
			if err != nil {
				return false, err.Error()
			}
			got := map[string][]string{}
			for name := range want {
				got[name] = []string{}
				if cla, ok := snap["eds"][name].(*endpointv3.ClusterLoadAssignment); ok {
					for _, l := range cla.Endpoints {
						for _, e := range l.LbEndpoints {
							a := e.GetEndpoint().GetAddress().GetSocketAddress()
							got[name] = append(got[name], fmt.Sprintf("%s:%d", a.GetAddress(), a.GetPortValue()))
						}
					}
				}
				slices.Sort(got[name])
			}
			return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("got %v, want %v", got, want)
		})
	}
	endpointsAre("the entry in the Service", map[string][]string{web: {"10.209.0.1:9090"}, vmCluster: {}})

	// labels that no longer match take it out; matching again brings it back
	entry.Spec.Labels = map[string]string{"app": "other"}
	entry, err := local.Istio.NetworkingV1().WorkloadEntries(ns).Update(ctx, entry, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	endpointsAre("the entry relabelled away", map[string][]string{web: {}})
	entry.Labels = map[string]string{"app": "web"} // metadata labels count too
	if _, err := local.Istio.NetworkingV1().WorkloadEntries(ns).Update(ctx, entry, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointsAre("the entry relabelled back", map[string][]string{web: {"10.209.0.1:9090"}})
	if err := local.Istio.NetworkingV1().WorkloadEntries(ns).Delete(ctx, "web-vm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointsAre("the entry deleted", map[string][]string{web: {}})

	// an auto-registered VM: the WorkloadGroup's labels (app: vm) and
	// port (http: 8080)
	agent := vm.runAgent(t, d)
	vm.awaitEntry(t, "created", func(we *clientnetworking.WorkloadEntry) bool { return we != nil })
	endpointsAre("the auto-registered VM in the Service", map[string][]string{vmCluster: {vm.ip + ":8080"}})
	agent.stop()

	// a remote cluster's entries: its Service of the same name selects
	// them, and so does a local ServiceEntry
	remote := kube.Start(t)
	remote.CreateNamespace(t, ns, nil)
	createService(remote, "web", map[string]string{"app": "web"})
	createEntry(remote, "remote-vm", "10.210.0.1", map[string]string{"app": "web"}, map[string]uint32{"http": 9191})
	createEntry(remote, "remote-se-vm", "10.210.0.2", map[string]string{"app": "web-se"}, nil)
	seObj := &clientnetworking.ServiceEntry{ObjectMeta: metav1.ObjectMeta{Name: "web-se", Namespace: ns}}
	seObj.Spec = networking.ServiceEntry{Hosts: []string{"web-se.example.com"}, Resolution: networking.ServiceEntry_STATIC,
		Location:         networking.ServiceEntry_MESH_INTERNAL,
		Ports:            []*networking.ServicePort{{Number: 80, Name: "http", Protocol: "HTTP", TargetPort: 7070}},
		WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "web-se"}}}
	if _, err := local.Istio.NetworkingV1().ServiceEntries(ns).Create(ctx, seObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "istio-remote-secret-cluster2", Namespace: istiodNS,
		Labels:      map[string]string{"istio/multiCluster": "true"},
		Annotations: map[string]string{"networking.istio.io/cluster": "cluster2"}},
		Data: map[string][]byte{"cluster2": embeddedKubeconfig(t, remote.RESTConfig, "cluster2")}}
	if _, err := local.Kube.CoreV1().Secrets(istiodNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointsAre("the remote cluster's entries", map[string][]string{web: {"10.210.0.1:9191"}, se: {"10.210.0.2:7070"}})

	// the remote entry's label change and the cluster's removal are followed
	if err := remote.Istio.NetworkingV1().WorkloadEntries(ns).Delete(ctx, "remote-vm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointsAre("the remote entry deleted", map[string][]string{web: {}, se: {"10.210.0.2:7070"}})
	if err := local.Kube.CoreV1().Secrets(istiodNS).Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointsAre("the remote cluster gone", map[string][]string{web: {}, se: {}})
}
