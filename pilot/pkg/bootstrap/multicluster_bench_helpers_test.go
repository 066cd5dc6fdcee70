//go:build linux

package bootstrap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/multicluster"
)

// This file is the harness of multicluster_bench_test.go: synthetic
// remote clusters on fake clients, an in-process istiod on a fake local
// cluster, and a watching sidecar.

// mcSizeEnv shrinks the benchmarks: "clusters x services x endpoints"
// (default 10x300x4000, issue 23's size).
const mcSizeEnv = "MULTICLUSTER_BENCH_SIZE"

type mcSize struct{ clusters, services, endpoints, namespaces int }

func benchSize(tb testing.TB) mcSize {
	sz := mcSize{clusters: 10, services: 300, endpoints: 4000}
	if v := os.Getenv(mcSizeEnv); v != "" {
		parts := strings.Split(v, "x")
		var n [3]int
		ok := len(parts) == 3
		for i := 0; ok && i < 3; i++ {
			var err error
			n[i], err = strconv.Atoi(strings.TrimSpace(parts[i]))
			ok = err == nil && n[i] > 0
		}
		if !ok {
			tb.Fatalf("%s=%q: want clusters x services x endpoints, e.g. 10x300x4000", mcSizeEnv, v)
		}
		sz.clusters, sz.services, sz.endpoints = n[0], n[1], n[2]
	}
	sz.namespaces = min(20, sz.services)
	return sz
}

// Addresses: cluster c's pods are 10.(100+c).x.y (x < 200), the
// endpoints the benchmarks add 10.(100+c).(200+).y; the sidecar is in
// the local cluster.
func podIP(c, n int) string   { return fmt.Sprintf("10.%d.%d.%d", 100+c, n/250, n%250+1) }
func extraIP(c, n int) string { return fmt.Sprintf("10.%d.%d.%d", 100+c, 200+n/250, n%250+1) }

const sidecarIP = "10.0.0.9"

func clusterOfIP(ip string) int {
	rest, ok := strings.CutPrefix(ip, "10.")
	if !ok {
		return -1
	}
	o, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(o)
	if err != nil || n < 100 {
		return -1
	}
	return n - 100
}

func clusterID(c int) string { return fmt.Sprintf("remote-%02d", c) }

// svcRef is a service of the synthetic mesh: the same names in every
// cluster (a service deployed to all of them, joined by istiod).
type svcRef struct{ ns, name string }

func (s svcRef) host() string       { return s.name + "." + s.ns + ".svc.cluster.local" }
func (s svcRef) cla() string        { return "outbound|80||" + s.host() }
func (s svcRef) slice() string      { return s.name + "-x7k2p" }
func (s svcRef) replicaSet() string { return s.name + "-6d8f9c7b5" }

func (sz mcSize) service(s int) svcRef {
	return svcRef{ns: fmt.Sprintf("ns-%02d", s%sz.namespaces), name: fmt.Sprintf("app-%03d", s)}
}

// endpointsOf is how many endpoints service s has in a cluster.
func (sz mcSize) endpointsOf(s int) int {
	n := sz.endpoints / sz.services
	if s < sz.endpoints%sz.services {
		n++
	}
	return n
}

// remoteCluster is one remote cluster's "API server": its objects and
// the clients istiod was handed for it. A write goes to every client
// (they all look at the same cluster), under mu.
type remoteCluster struct {
	idx int
	id  string
	sz  mcSize

	mu sync.Mutex
	rv int
	// objects by "kind/ns/name", the cluster's current state
	objects map[string]k8sruntime.Object
	// live are the clients handed out (current first), next the one the
	// next BuildClient hands out, prebuilt so that the sync and rotation
	// figures are istiod's, not the fake's construction
	live []kube.Client
	next kube.Client
	// baseline are the cluster's endpoint IPs per service before any change
	baseline map[svcRef][]string
}

func newRemoteCluster(sz mcSize, c int) *remoteCluster {
	rc := &remoteCluster{idx: c, id: clusterID(c), sz: sz, objects: map[string]k8sruntime.Object{}, baseline: map[svcRef][]string{}}
	rc.generate()
	return rc
}

func objKey(o k8sruntime.Object) string {
	m, _ := o.(metav1.Object)
	return fmt.Sprintf("%T/%s/%s", o, m.GetNamespace(), m.GetName())
}

func (rc *remoteCluster) put(o k8sruntime.Object) { rc.objects[objKey(o)] = o }

func (rc *remoteCluster) nextRV() string {
	rc.rv++
	return strconv.Itoa(rc.rv)
}

// generate builds the cluster: namespaces, nodes over three zones,
// services (two ports), one EndpointSlice per service, and a ready pod
// per endpoint, with the labels, owners, service accounts and
// annotations of injected Deployments.
func (rc *remoteCluster) generate() {
	c, sz := rc.idx, rc.sz
	region := fmt.Sprintf("region-%d", c%3)
	rc.put(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system", ResourceVersion: rc.nextRV()}})
	for n := 0; n < sz.namespaces; n++ {
		rc.put(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%02d", n), ResourceVersion: rc.nextRV(),
			Labels: map[string]string{"istio-injection": "enabled", "kubernetes.io/metadata.name": fmt.Sprintf("ns-%02d", n)}}})
	}
	const nodes = 9
	for n := 0; n < nodes; n++ {
		rc.put(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", n), ResourceVersion: rc.nextRV(),
			Labels: map[string]string{model.RegionLabel: region, model.ZoneLabel: fmt.Sprintf("%s-%c", region, 'a'+n%3),
				"kubernetes.io/hostname": fmt.Sprintf("node-%d", n), "node.kubernetes.io/instance-type": "m5.xlarge"}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("192.168.%d.%d", c, n+1)}}}})
	}
	ep := 0
	for s := 0; s < sz.services; s++ {
		ref := sz.service(s)
		rc.put(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: ref.name, Namespace: ref.ns, ResourceVersion: rc.nextRV(),
			UID: types.UID(fmt.Sprintf("svc-%d-%d", c, s)), Labels: map[string]string{"app": ref.name}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": ref.name},
				ClusterIP: fmt.Sprintf("172.%d.%d.%d", 16+c, s/250, s%250+1), ClusterIPs: []string{fmt.Sprintf("172.%d.%d.%d", 16+c, s/250, s%250+1)},
				Ports: []corev1.ServicePort{
					{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
					{Name: "grpc", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
				}}})
		es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: ref.slice(), Namespace: ref.ns, ResourceVersion: rc.nextRV(),
			Labels: map[string]string{discoveryv1.LabelServiceName: ref.name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: ref.name,
				UID: types.UID(fmt.Sprintf("svc-%d-%d", c, s)), Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Name: ptrTo("http"), Port: ptrTo(int32(8080)), Protocol: ptrTo(corev1.ProtocolTCP)},
				{Name: ptrTo("grpc"), Port: ptrTo(int32(9090)), Protocol: ptrTo(corev1.ProtocolTCP)}}}
		for e := 0; e < sz.endpointsOf(s); e++ {
			ip := podIP(c, ep)
			node := ep % nodes
			pod := rc.pod(ref, fmt.Sprintf("%05x", ep), ip, fmt.Sprintf("node-%d", node))
			rc.put(pod)
			es.Endpoints = append(es.Endpoints, sliceEndpoint(pod, fmt.Sprintf("%s-%c", region, 'a'+node%3)))
			rc.baseline[ref] = append(rc.baseline[ref], ip)
			ep++
		}
		rc.put(es)
	}
}

func (rc *remoteCluster) pod(ref svcRef, suffix, ip, node string) *corev1.Pod {
	hash := "6d8f9c7b5"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: ref.replicaSet() + "-" + suffix, Namespace: ref.ns, ResourceVersion: rc.nextRV(),
			UID: types.UID(fmt.Sprintf("pod-%d-%s-%s", rc.idx, ref.name, suffix)),
			Labels: map[string]string{"app": ref.name, "version": "v1", "pod-template-hash": hash,
				model.TLSModeLabel: "istio", "service.istio.io/canonical-name": ref.name, "service.istio.io/canonical-revision": "v1"},
			Annotations: map[string]string{
				"sidecar.istio.io/status": `{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["workload-socket","credential-socket",` +
					`"workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert"],"imagePullSecrets":null,"revision":"default"}`,
				"prometheus.io/path": "/stats/prometheus", "prometheus.io/port": "15020", "prometheus.io/scrape": "true",
				"kubectl.kubernetes.io/default-container": "app"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: ref.replicaSet(),
				UID: types.UID("rs-" + ref.name), Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}}},
		Spec: corev1.PodSpec{ServiceAccountName: ref.name, NodeName: node,
			Containers: []corev1.Container{
				{Name: "app", Image: "registry.example.com/" + ref.name + ":1.4.2",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
						{Name: "grpc", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}},
				{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.31.0", Args: []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local"},
					Ports: []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090, Protocol: corev1.ProtocolTCP}}},
			}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: "192.168.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
}

func sliceEndpoint(pod *corev1.Pod, zone string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{pod.Status.PodIP},
		Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true), Serving: ptrTo(true), Terminating: ptrTo(false)},
		NodeName:   ptrTo(pod.Spec.NodeName), Zone: ptrTo(zone),
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
}

func ptrTo[T any](v T) *T { return &v }

// newClientLocked builds a fake client holding the cluster's current
// objects.
func (rc *remoteCluster) newClientLocked() kube.Client {
	k := kubefake.NewSimpleClientset()
	for _, o := range rc.objects {
		var res schema.GroupVersionResource
		switch o.(type) {
		case *corev1.Namespace:
			res = corev1.SchemeGroupVersion.WithResource("namespaces")
		case *corev1.Node:
			res = corev1.SchemeGroupVersion.WithResource("nodes")
		case *corev1.Service:
			res = corev1.SchemeGroupVersion.WithResource("services")
		case *corev1.Pod:
			res = corev1.SchemeGroupVersion.WithResource("pods")
		case *discoveryv1.EndpointSlice:
			res = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
		default:
			panic(fmt.Sprintf("no resource for %T", o))
		}
		if err := k.Tracker().Create(res, o.DeepCopyObject(), o.(metav1.Object).GetNamespace()); err != nil {
			panic(err)
		}
	}
	return newBenchClient(k)
}

// benchClient is kube.NewFakeClient with its Kubernetes clientset on
// client-go's plain object tracker: NewFakeClient's clientset tracks
// managed fields, and builds a REST mapper for every object created (2ms
// each: one and a half minutes for the 46,000 objects of ten clusters).
// The Kubernetes informers are made as NewFakeClient makes them (shared
// factory, StripUnusedFields); the other API groups are NewFakeClient's.
type benchClient struct {
	kube.Client
	k   *kubefake.Clientset
	inf informers.SharedInformerFactory
}

func newBenchClient(k *kubefake.Clientset) *benchClient {
	return &benchClient{Client: kube.NewFakeClient(), k: k,
		inf: informers.NewSharedInformerFactoryWithOptions(k, 0, informers.WithTransform(kube.StripUnusedFields))}
}

func (c *benchClient) Kube() kubernetes.Interface { return c.k }

func (c *benchClient) Informer(res schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	switch {
	case strings.HasSuffix(res.Group, ".istio.io"), strings.HasSuffix(res.Group, ".k8s.io") && strings.HasPrefix(res.Group, "gateway."),
		res.Group == "apiextensions.k8s.io":
		return c.Client.Informer(res)
	}
	gi, err := c.inf.ForResource(res)
	if err != nil {
		return nil, err
	}
	return gi.Informer(), nil
}

func (c *benchClient) Start(stop <-chan struct{}) {
	c.inf.Start(stop)
	c.Client.Start(stop)
}

// prepare builds the client the next BuildClient hands out.
func (rc *remoteCluster) prepare() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.next == nil {
		rc.next = rc.newClientLocked()
	}
}

// build is BuildClient for this cluster: the prepared client (or a new
// one), from now on written to.
func (rc *remoteCluster) build() kube.Client {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	c := rc.next
	rc.next = nil
	if c == nil {
		c = rc.newClientLocked()
	}
	rc.live = append([]kube.Client{c}, rc.live...)
	return c
}

// keepOnly drops the clients other than c (nil: all) from the writes:
// istiod stopped them.
func (rc *remoteCluster) keepOnly(c kube.Client) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.live = slices.DeleteFunc(rc.live, func(x kube.Client) bool { return x != c })
}

// write applies a change to the cluster's state and to every client of
// it: upsert the objects given, delete those of del.
func (rc *remoteCluster) write(upsert []k8sruntime.Object, del []k8sruntime.Object) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ctx := context.Background()
	for _, o := range upsert {
		o.(metav1.Object).SetResourceVersion(rc.nextRV())
		_, existed := rc.objects[objKey(o)]
		rc.put(o)
		for _, cl := range rc.targetsLocked() {
			var err error
			switch x := o.(type) {
			case *corev1.Pod:
				p := x.DeepCopy()
				if existed {
					_, err = cl.Kube().CoreV1().Pods(x.Namespace).Update(ctx, p, metav1.UpdateOptions{})
				} else {
					_, err = cl.Kube().CoreV1().Pods(x.Namespace).Create(ctx, p, metav1.CreateOptions{})
				}
			case *discoveryv1.EndpointSlice:
				es := x.DeepCopy()
				if existed {
					_, err = cl.Kube().DiscoveryV1().EndpointSlices(x.Namespace).Update(ctx, es, metav1.UpdateOptions{})
				} else {
					_, err = cl.Kube().DiscoveryV1().EndpointSlices(x.Namespace).Create(ctx, es, metav1.CreateOptions{})
				}
			default:
				err = fmt.Errorf("cannot write %T", o)
			}
			if err != nil {
				return err
			}
		}
	}
	for _, o := range del {
		delete(rc.objects, objKey(o))
		m := o.(metav1.Object)
		for _, cl := range rc.targetsLocked() {
			var err error
			switch o.(type) {
			case *corev1.Pod:
				err = cl.Kube().CoreV1().Pods(m.GetNamespace()).Delete(ctx, m.GetName(), metav1.DeleteOptions{})
			default:
				err = fmt.Errorf("cannot delete %T", o)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (rc *remoteCluster) targetsLocked() []kube.Client {
	if rc.next == nil {
		return rc.live
	}
	return append(slices.Clip(rc.live), rc.next)
}

func (rc *remoteCluster) sliceOf(ref svcRef) *discoveryv1.EndpointSlice {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.objects[fmt.Sprintf("%T/%s/%s", &discoveryv1.EndpointSlice{}, ref.ns, ref.slice())].(*discoveryv1.EndpointSlice).DeepCopy()
}

// addEndpoint starts a pod of ref at ip and then lists it in the
// service's slice, as the kubelet and the EndpointSlice controller do;
// it returns when the slice was written.
func (rc *remoteCluster) addEndpoint(ref svcRef, ip string) error {
	pod := rc.pod(ref, "x"+strings.ReplaceAll(ip, ".", ""), ip, "node-0")
	if err := rc.write([]k8sruntime.Object{pod}, nil); err != nil {
		return err
	}
	es := rc.sliceOf(ref)
	es.Endpoints = append(es.Endpoints, sliceEndpoint(pod, "zone"))
	return rc.write([]k8sruntime.Object{es}, nil)
}

// removeEndpoint takes ip out of the slice, then deletes its pod.
func (rc *remoteCluster) removeEndpoint(ref svcRef, ip string) error {
	es := rc.sliceOf(ref)
	var pod *corev1.Pod
	es.Endpoints = slices.DeleteFunc(es.Endpoints, func(e discoveryv1.Endpoint) bool {
		if slices.Contains(e.Addresses, ip) {
			pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.TargetRef.Namespace, Name: e.TargetRef.Name}}
			return true
		}
		return false
	})
	if err := rc.write([]k8sruntime.Object{es}, nil); err != nil {
		return err
	}
	if pod == nil {
		return nil
	}
	return rc.write(nil, []k8sruntime.Object{pod})
}

// remoteSecret is the secret `istioctl create-remote-secret` writes for
// a cluster; gen changes the credentials (a rotation).
func remoteSecret(id, ns string, gen int) *corev1.Secret {
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJkekNDQVIyZ0F3SUJBZ0lCQURBS0JnZ3Foa2pPUFFRREFqQWpNU0V3SHdZRFZRUUREQmhyTTNNdGMyVnkKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
    server: https://%[1]s.k8s.example.invalid:6443
  name: %[1]s
contexts:
- context:
    cluster: %[1]s
    user: %[1]s
  name: %[1]s
current-context: %[1]s
preferences: {}
users:
- name: %[1]s
  user:
    token: eyJhbGciOiJSUzI1NiIsImtpZCI6Imdlbi0lZCJ9.%[1]s-istio-reader-service-account-%[2]d
`, id, gen)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "istio-remote-secret-" + id, Namespace: ns,
		Labels:      map[string]string{multicluster.SecretLabel: "true"},
		Annotations: map[string]string{"networking.istio.io/cluster": id}},
		Data: map[string][]byte{id: []byte(kubeconfig)}}
}

// newServerWithClient is NewServer with the cluster istiod runs in given
// as a client (initKubeClient only builds real ones).
func newServerWithClient(args PilotArgs, client kube.Client) (*Server, error) {
	s := newServer(args)
	s.kubeClient = client
	if err := s.wire(); err != nil {
		return nil, err
	}
	return s, nil
}

// liveHeap is the heap in use after full collections.
func liveHeap() uint64 {
	var ms runtime.MemStats
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// rusageThread is Linux's RUSAGE_THREAD.
const rusageThread = 1

// cpuTime is the user+system CPU time of the process (who
// syscall.RUSAGE_SELF) or of the calling thread (rusageThread).
func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sidecar is a proxy of the local cluster on the plaintext xDS port: it
// asks over state-of-the-world ADS, as Envoy does, for every cluster and
// the endpoints of every EDS cluster, and keeps the addresses it holds.
// Its receive loop (gRPC's decode of the messages and the resources'
// unmarshalling) runs on a thread of its own, whose CPU time the
// benchmarks take out of the process's: what remains is istiod's.
type sidecar struct {
	conn   *grpc.ClientConn
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient

	mu sync.Mutex
	// ips of the load assignments held, by name
	ips map[string]map[string]bool
	// waiters are woken when a load assignment arrives
	waiters []*claWaiter
	// check is called with each load assignment received (nil: none)
	check func(name string, ips map[string]bool, at time.Time)

	remote  atomic.Int64 // remote endpoint IPs held in the port-80 assignments
	cpu     atomic.Int64 // the receive thread's CPU time, ns
	eds     atomic.Int64 // load assignments received
	cds     atomic.Int64 // cluster responses received
	edsResp atomic.Int64 // endpoint responses received
	err     atomic.Value // error
	closing chan struct{}
	done    chan struct{}

	// of the receive loop
	watching []string
}

type claWaiter struct {
	name, ip string
	present  bool
	ch       chan time.Time
}

const (
	clusterTypeURL  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	endpointTypeURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

func startSidecar(addr string) (*sidecar, error) {
	md, err := structpb.NewStruct(map[string]any{"NAMESPACE": "ns-00", "CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "1.31.0",
		"LABELS": map[string]any{"app": "client"}, "SERVICE_ACCOUNT": "client"})
	if err != nil {
		return nil, err
	}
	node := &corev3.Node{Id: "sidecar~" + sidecarIP + "~client-5f4b9d-x2x9z.ns-00~ns-00.svc.cluster.local", Metadata: md}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		return nil, err
	}
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(context.Background())
	if err == nil {
		err = stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: clusterTypeURL})
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	sc := &sidecar{conn: conn, stream: stream, ips: map[string]map[string]bool{}, closing: make(chan struct{}), done: make(chan struct{})}
	go sc.loop()
	return sc, nil
}

func (sc *sidecar) loop() {
	runtime.LockOSThread()
	defer close(sc.done)
	for {
		sc.cpu.Store(int64(cpuTime(rusageThread)))
		r, err := sc.stream.Recv()
		if err == nil {
			err = sc.handle(r)
		}
		if err != nil {
			select {
			case <-sc.closing:
			default:
				sc.err.Store(err)
			}
			return
		}
	}
}

func (sc *sidecar) close() {
	close(sc.closing)
	_ = sc.conn.Close()
	<-sc.done
}

// handle reads a response, ACKs it and, when the EDS clusters changed,
// asks for their endpoints.
func (sc *sidecar) handle(r *discoveryv3.DiscoveryResponse) error {
	ack := func(names []string) error {
		return sc.stream.Send(&discoveryv3.DiscoveryRequest{TypeUrl: r.TypeUrl, VersionInfo: r.VersionInfo, ResponseNonce: r.Nonce, ResourceNames: names})
	}
	switch r.TypeUrl {
	case clusterTypeURL:
		var names []string
		for _, a := range r.Resources {
			cl := &clusterv3.Cluster{}
			if err := a.UnmarshalTo(cl); err != nil {
				return err
			}
			if cl.GetType() != clusterv3.Cluster_EDS {
				continue
			}
			n := cl.GetEdsClusterConfig().GetServiceName()
			if n == "" {
				n = cl.GetName()
			}
			names = append(names, n)
		}
		slices.Sort(names)
		sc.cds.Add(1)
		if err := ack(nil); err != nil {
			return err
		}
		if !slices.Equal(names, sc.watching) {
			sc.watching = names
			return sc.stream.Send(&discoveryv3.DiscoveryRequest{TypeUrl: endpointTypeURL, ResourceNames: names})
		}
	case endpointTypeURL:
		got := make(map[string]map[string]bool, len(r.Resources))
		for _, a := range r.Resources {
			cla := &endpointv3.ClusterLoadAssignment{}
			if err := a.UnmarshalTo(cla); err != nil {
				return err
			}
			ips := map[string]bool{}
			for _, l := range cla.Endpoints {
				for _, e := range l.LbEndpoints {
					ips[e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress()] = true
				}
			}
			got[cla.ClusterName] = ips
		}
		now := time.Now()
		sc.edsResp.Add(1)
		sc.mu.Lock()
		for name, ips := range got {
			if strings.HasPrefix(name, "outbound|80||") {
				sc.remote.Add(int64(countRemote(ips) - countRemote(sc.ips[name])))
			}
			sc.ips[name] = ips
			sc.eds.Add(1)
			if sc.check != nil {
				sc.check(name, ips, now)
			}
			sc.waiters = slices.DeleteFunc(sc.waiters, func(w *claWaiter) bool {
				if w.name != name || ips[w.ip] != w.present {
					return false
				}
				w.ch <- now
				return true
			})
		}
		sc.mu.Unlock()
		return ack(sc.watching)
	default:
		return ack(nil)
	}
	return nil
}

func countRemote(ips map[string]bool) int {
	n := 0
	for ip := range ips {
		if clusterOfIP(ip) >= 0 {
			n++
		}
	}
	return n
}

// await returns a channel that receives the time the load assignment
// name arrives with ip present (or absent); now, when it already is so.
func (sc *sidecar) await(name, ip string, present bool) <-chan time.Time {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	w := &claWaiter{name: name, ip: ip, present: present, ch: make(chan time.Time, 1)}
	if sc.ips[name][ip] == present {
		w.ch <- time.Now()
		return w.ch
	}
	sc.waiters = append(sc.waiters, w)
	return w.ch
}

func (sc *sidecar) setCheck(f func(name string, ips map[string]bool, at time.Time)) {
	sc.mu.Lock()
	sc.check = f
	sc.mu.Unlock()
}

func (sc *sidecar) failed() error {
	if err, ok := sc.err.Load().(error); ok {
		return err
	}
	return nil
}

// poll waits for cond, checking every few milliseconds, or fails tb
// after timeout.
func poll(tb testing.TB, what string, timeout time.Duration, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v: %s", what, timeout, detail)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func tempArgs(tb testing.TB) PilotArgs {
	dir := tb.TempDir()
	args := DefaultArgs()
	args.MeshConfigFile = filepath.Join(dir, "no-mesh-file")
	args.NetworksConfigFile = filepath.Join(dir, "no-networks-file")
	args.HTTPAddr, args.MonitoringAddr, args.GRPCAddr, args.SecureGRPCAddr, args.HTTPSAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	args.ShutdownDuration = time.Second
	args.Security.CADir = filepath.Join(dir, "ca")
	args.Injection.Disabled = true
	return args
}
