package generators_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/aggregate"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	kuberegistry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/tests/refdata"
	"github.com/meshplane/istiod/tests/refmesh"
)

// waypointProxy is the waypoint whose configuration Istio's answer in
// ../shared/reference/ambient/real/waypoint holds: the pod of the service
// waypoint travel/booking-waypoint.
var waypointProxy = adsc.Config{
	Delta:  true,
	NodeID: "waypoint~10.244.5.9~booking-waypoint-8f9a0-u5i6o.travel~travel.svc.cluster.local",
	Metadata: map[string]any{
		"NAMESPACE": "travel", "CLUSTER_ID": "Kubernetes", "MESH_ID": "cluster.local",
		"LABELS":          map[string]any{"gateway.networking.k8s.io/gateway-name": "booking-waypoint"},
		"SERVICE_ACCOUNT": "booking-waypoint", "WORKLOAD_NAME": "booking-waypoint-8f9a0-u5i6o",
		"INSTANCE_IPS": "10.244.5.9",
	},
}

// waypointAllowed lists the fields where our answer may differ from
// Istio's, by xDS type. There are none besides the peer tracing tags
// (see withoutPeerTraceTags).
var waypointAllowed = map[string]map[string]string{}

// peerTraceTags is the one named difference: Istio's waypoint spans carry
// 18 more tags (istio.source_* and istio.destination_*: app, app_version,
// canonical_revision, canonical_service, cluster_id, instance_name,
// namespace, workload, workload_type) whose values are substitution
// formats (%FILTER_STATE(downstream_peer_obj:FIELD:app)%...) set through
// CustomTag.value, field 6, which go-control-plane envoy v1.36 (this
// module's) does not have: envoy v1.37 does. They are taken out of Istio's
// answer, every HTTP connection manager of main_internal losing exactly
// these 18, and nothing else is.
const peerTraceTags = 18

// withoutPeerTraceTags removes the peer tracing tags from every
// customTags list in v, checking each list lost exactly peerTraceTags.
func withoutPeerTraceTags(t *testing.T, where string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		if tags, ok := x["customTags"].([]any); ok {
			var kept []any
			for _, tag := range tags {
				m := tag.(map[string]any)
				name, _ := m["tag"].(string)
				val, _ := m["value"].(string)
				peer := strings.HasPrefix(name, "istio.source_") || strings.HasPrefix(name, "istio.destination_")
				if peer && strings.Contains(val, "_peer_obj:FIELD:") {
					continue
				}
				kept = append(kept, tag)
			}
			if n := len(tags) - len(kept); n != peerTraceTags {
				t.Errorf("%s: %d peer tracing tags in Istio's answer, the allowance is for %d", where, n, peerTraceTags)
			}
			x["customTags"] = kept
		}
		for k, e := range x {
			if k != "customTags" {
				withoutPeerTraceTags(t, where, e)
			}
		}
	case []any:
		for _, e := range x {
			withoutPeerTraceTags(t, where, e)
		}
	}
}

// ambientMesh is the ambient reference (refmesh names its directory).
var ambientMesh = refmesh.Mesh{Dir: "ambient"}

// TestWaypointConfigMatchesIstio runs the ambient reference mesh through
// the registries, the ambient index and the generators, connects the
// reference waypoint over delta ADS and compares every resource of every
// type with what Istio's istiod sent it.
func TestWaypointConfigMatchesIstio(t *testing.T) {
	ref := loadAmbientReference(t)
	c := ref.dial(t, waypointProxy)
	for _, typ := range []string{xds.ClusterType, xds.EndpointType, xds.ListenerType, xds.RouteType} {
		short := xds.ShortType(typ)
		want := referenceResources(t, ambientMesh, "real/waypoint/"+refFile[short])
		if typ == xds.ListenerType {
			for n, l := range want {
				withoutPeerTraceTags(t, n, l)
			}
		}
		var names []string
		if typ == xds.EndpointType || typ == xds.RouteType {
			for n := range want {
				names = append(names, n)
			}
			sort.Strings(names)
		}
		if typ == xds.RouteType && len(names) == 0 {
			// Istio sends the waypoint no route configuration: nothing to
			// subscribe to, and nothing of ours may name one
			continue
		}
		if err := c.Watch(typ, names...); err != nil {
			t.Fatal(err)
		}
		xdstest.Next(t, c)
		got := map[string]map[string]any{}
		for _, n := range c.State(typ) {
			got[n] = refmesh.Decode(t, render1(t, c, typ, n)).(map[string]any)
		}
		diffResources(t, short, got, want, waypointAllowed[short])
	}
}

// ambientReference is the ambient reference mesh as the API server held
// it when Istio answered: the inputs, plus what kubelet, the API server
// and Istio's gateway controller wrote (pod IPs, Service defaults, the
// waypoint Gateway's status addresses, the istio-waypoint class).
type ambientReference struct {
	objs []kruntime.Object
	// istio are the Istio configs (the config store's), gateways the
	// Gateway API objects (the ambient index's)
	istio, gateways []config.Config
}

// ambientPodIPs are the pod IPs of the reference README.
var ambientPodIPs = map[string]string{
	"flights-7b9c4-q1w2e":          "10.244.5.1",
	"booking-5d6e7-r3t4y":          "10.244.6.2",
	"booking-waypoint-8f9a0-u5i6o": "10.244.5.9",
	"rooms-1a2b3-p7a8s":            "10.244.6.7",
	"legacy-4c5d6-d9f0g":           "10.244.5.20",
}

var gatewayAPIVersion = regexp.MustCompile(`(?m)^apiVersion:\s*gateway\.networking\.k8s\.io/`)

func loadAmbientReference(t *testing.T) *ambientReference {
	t.Helper()
	r := &ambientReference{}
	for _, f := range []string{"input/base.yaml", "input/slices.yaml", "input/istio.yaml"} {
		for _, doc := range strings.Split(string(ambientMesh.ReadFile(t, f)), "\n---") {
			if gatewayAPIVersion.MatchString(doc) {
				for _, d := range crd.Parse([]byte(doc), crd.Options{Domain: "cluster.local"}) {
					if d.Err != nil || d.Config == nil {
						t.Fatalf("%s: %v", d.Where(), d.Err)
					}
					r.gateways = append(r.gateways, *d.Config)
				}
				continue
			}
			objs, cfgs := refmesh.SplitInput(t, []byte(doc))
			r.objs = append(r.objs, objs...)
			r.istio = append(r.istio, cfgs...)
		}
	}
	status := referenceGatewayStatus(t)
	for i := range r.gateways {
		if g := &r.gateways[i]; g.GroupVersionKind == gvk.KubernetesGateway {
			g.Status = status[g.Namespace+"/"+g.Name]
		}
	}
	r.gateways = append(r.gateways, config.Config{Meta: config.Meta{GroupVersionKind: gvk.GatewayClass, Name: "istio-waypoint"},
		Spec: &gatewayv1.GatewayClassSpec{ControllerName: "istio.io/mesh-controller"}})
	for _, o := range r.objs {
		switch v := o.(type) {
		case *corev1.Pod:
			ip := ambientPodIPs[v.Name]
			v.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		case *corev1.Service:
			if len(v.Spec.ClusterIPs) == 0 && v.Spec.ClusterIP != "" {
				v.Spec.ClusterIPs = []string{v.Spec.ClusterIP}
			}
			if len(v.Spec.IPFamilies) == 0 {
				v.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
			}
			for i := range v.Spec.Ports {
				if v.Spec.Ports[i].Protocol == "" {
					v.Spec.Ports[i].Protocol = corev1.ProtocolTCP
				}
			}
		}
	}
	return r
}

func referenceGatewayStatus(t *testing.T) map[string]*gatewayv1.GatewayStatus {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(refdata.Dir(t, ambientMesh.Dir), "real", "gateways.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []gatewayv1.Gateway `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]*gatewayv1.GatewayStatus{}
	for i := range list.Items {
		g := &list.Items[i]
		out[g.Namespace+"/"+g.Name] = &gatewayv1.GatewayStatus{Addresses: g.Status.Addresses}
	}
	return out
}

// ambientServer is the reference mesh served: registries, config store,
// ambient index, sidecar and waypoint generators.
type ambientServer struct {
	s         *xdstest.Server
	env       *model.Environment
	store     *memory.Store
	index     *ambient.Index
	endpoints *model.EndpointIndex
}

// serve builds the registries (client-go's fake clientset), the config
// store and the ambient index over the same objects, and an ADS server
// with the sidecar generators as defaults and the waypoint generators for
// waypoints; it waits until the index gives travel/booking-waypoint
// wantServices services.
func (r *ambientReference) serve(t *testing.T, wantServices int) *ambientServer {
	t.Helper()
	store := memory.New(collections.Pilot)
	for _, c := range r.istio {
		if _, err := store.Create(c); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	index := model.NewEndpointIndex()
	upd := model.NewEndpointIndexUpdater(index, model.NewRecordingXDSUpdater(100))
	client := kube.NewFakeClient(r.objs...)
	kr, err := kuberegistry.NewController(client, kuberegistry.Options{XDSUpdater: upd, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	se := serviceentry.NewController(store, serviceentry.Options{XDSUpdater: upd, Workloads: kr.Workloads(), Stop: stop})
	agg := aggregate.New(kr, se)
	client.Start(stop)
	waitFor(t, "registries synced", agg.HasSynced)
	mc := mesh.DefaultMeshConfig()
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: agg, EndpointIndex: index,
		Mesh: func() *meshconfig.MeshConfig { return mc }})
	idx := r.ambientIndex(t, stop, wantServices)
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Endpoints: index, Discovery: agg}).Register(s.DS)
	(&generators.WaypointGenerators{Source: idx, Endpoints: index}).Register(s.DS)
	s.DS.InitPushContext(env)
	return &ambientServer{s: s, env: env, store: store, index: idx, endpoints: index}
}

func (r *ambientReference) dial(t *testing.T, proxy adsc.Config) *adsc.Client {
	t.Helper()
	return xdstest.Dial(t, r.serve(t, 1).s, proxy)
}

// ambientIndex is the index over static collections of the objects.
func (r *ambientReference) ambientIndex(t *testing.T, stop chan struct{}, wantServices int) *ambient.Index {
	t.Helper()
	pods := krt.NewStaticCollection[*corev1.Pod](nil)
	services := krt.NewStaticCollection[*corev1.Service](nil)
	namespaces := krt.NewStaticCollection[*corev1.Namespace](nil)
	nodes := krt.NewStaticCollection[*corev1.Node](nil)
	slices := krt.NewStaticCollection[*discoveryv1.EndpointSlice](nil)
	for _, o := range r.objs {
		switch v := o.(type) {
		case *corev1.Pod:
			pods.Set(v)
		case *corev1.Service:
			services.Set(v)
		case *corev1.Namespace:
			namespaces.Set(v)
		case *corev1.Node:
			nodes.Set(v)
		case *discoveryv1.EndpointSlice:
			slices.Set(v)
		}
	}
	byKind := func(k config.GroupVersionKind, cfgs ...[]config.Config) krt.Collection[config.Config] {
		c := krt.NewStaticCollection[config.Config](nil)
		for _, list := range cfgs {
			for _, cfg := range list {
				if cfg.GroupVersionKind == k {
					c.Set(cfg)
				}
			}
		}
		return c
	}
	x := ambient.New(ambient.Inputs{
		Pods: pods, Services: services, Namespaces: namespaces, Nodes: nodes, EndpointSlices: slices,
		ServiceEntries:        byKind(gvk.ServiceEntry, r.istio),
		WorkloadEntries:       byKind(gvk.WorkloadEntry, r.istio),
		AuthorizationPolicies: byKind(gvk.AuthorizationPolicy, r.istio),
		PeerAuthentications:   byKind(gvk.PeerAuthentication, r.istio),
		KubernetesGateways:    byKind(gvk.KubernetesGateway, r.gateways),
		GatewayClasses:        byKind(gvk.GatewayClass, r.gateways),
	}, ambient.Options{ClusterID: "Kubernetes", SystemNamespace: "istio-system", Stop: stop})
	waitFor(t, "ambient index synced", x.HasSynced)
	waitFor(t, "waypoint services", func() bool { return len(x.ServicesForWaypoint("travel", "booking-waypoint")) == wantServices })
	return x
}

// waitFor polls cond (registries and krt collections are eventually
// consistent), failing after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
