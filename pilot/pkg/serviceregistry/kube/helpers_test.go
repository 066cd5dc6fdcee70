package kube_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshplane/istiod/pilot/pkg/model"
	registry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
)

// fixture is a registry on a fake client, its XDSUpdater calls recorded
// directly (rec) and through an endpoint index (pushes).
type fixture struct {
	t      *testing.T
	client kube.Client
	reg    *registry.Controller
	rec    *model.RecordingXDSUpdater
	pushes *model.RecordingXDSUpdater
	index  *model.EndpointIndex
	board  *diag.Board
	stop   chan struct{}
}

func newFixture(t *testing.T, opts registry.Options, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, client: kube.NewFakeClient(objs...), rec: model.NewRecordingXDSUpdater(0),
		pushes: model.NewRecordingXDSUpdater(0), index: model.NewEndpointIndex(), board: diag.New(nil),
		stop: make(chan struct{})}
	t.Cleanup(func() { close(f.stop) })
	opts.XDSUpdater = model.FanOut{f.rec, model.NewEndpointIndexUpdater(f.index, f.pushes)}
	opts.Problems = f.board
	opts.Stop = f.stop
	reg, err := registry.NewController(f.client, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	f.client.Start(f.stop)
	f.eventually("synced", reg.HasSynced)
	return f
}

// eventually polls cond; the deadline only guards against a hang.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: not reached", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wait returns the first event after seq that matches, failing on timeout.
func (f *fixture) wait(rec *model.RecordingXDSUpdater, seq uint64, what string, match func(model.XDSEvent) bool) model.XDSEvent {
	f.t.Helper()
	stop := make(chan struct{})
	t := time.AfterFunc(30*time.Second, func() { close(stop) })
	defer t.Stop()
	e, ok := rec.WaitFor(stop, seq, match)
	if !ok {
		f.t.Fatalf("%s: no matching event; got %+v", what, rec.Since(seq))
	}
	return e
}

func (f *fixture) endpoints(hostname, ns string) []*model.IstioEndpoint {
	s, ok := f.index.ShardsFor(hostname, ns)
	if !ok {
		return nil
	}
	return s.Endpoints(model.NewShardKey(model.Kubernetes, "Kubernetes"))
}

var ctx = context.Background()

func (f *fixture) create(o runtime.Object) {
	f.t.Helper()
	var err error
	k := f.client.Kube()
	switch v := o.(type) {
	case *corev1.Service:
		_, err = k.CoreV1().Services(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
	case *corev1.Pod:
		_, err = k.CoreV1().Pods(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
	case *corev1.Node:
		_, err = k.CoreV1().Nodes().Create(ctx, v, metav1.CreateOptions{})
	case *corev1.Namespace:
		_, err = k.CoreV1().Namespaces().Create(ctx, v, metav1.CreateOptions{})
	case *discoveryv1.EndpointSlice:
		_, err = k.DiscoveryV1().EndpointSlices(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
	default:
		f.t.Fatalf("create %T", o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) update(o runtime.Object) {
	f.t.Helper()
	var err error
	k := f.client.Kube()
	switch v := o.(type) {
	case *corev1.Service:
		_, err = k.CoreV1().Services(v.Namespace).Update(ctx, v, metav1.UpdateOptions{})
	case *corev1.Pod:
		_, err = k.CoreV1().Pods(v.Namespace).Update(ctx, v, metav1.UpdateOptions{})
	case *discoveryv1.EndpointSlice:
		_, err = k.DiscoveryV1().EndpointSlices(v.Namespace).Update(ctx, v, metav1.UpdateOptions{})
	default:
		f.t.Fatalf("update %T", o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) deleteService(ns, name string) {
	f.t.Helper()
	if err := f.client.Kube().CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) deleteSlice(ns, name string) {
	f.t.Helper()
	if err := f.client.Kube().DiscoveryV1().EndpointSlices(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// Builders.

func service(ns, name, clusterIP string, selector map[string]string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{ClusterIP: clusterIP, Selector: selector, Ports: ports},
	}
}

func port(name string, num int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: num, Protocol: corev1.ProtocolTCP}
}

func ptr[T any](v T) *T { return &v }

type ep struct {
	addr        string
	ready       *bool
	terminating *bool
	pod         string
}

func slice(ns, name, svc string, ports []discoveryv1.EndpointPort, eps ...ep) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
	}
	for _, e := range eps {
		out := discoveryv1.Endpoint{Addresses: []string{e.addr},
			Conditions: discoveryv1.EndpointConditions{Ready: e.ready, Terminating: e.terminating}}
		if e.pod != "" {
			out.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: e.pod, Namespace: ns}
		}
		es.Endpoints = append(es.Endpoints, out)
	}
	return es
}

func slicePort(name string, num int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr(name), Port: ptr(num), Protocol: ptr(corev1.ProtocolTCP)}
}

func pod(ns, name, ip string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{ServiceAccountName: "sa-" + name},
		Status: corev1.PodStatus{PodIP: ip, Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}
