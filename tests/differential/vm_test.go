package differential_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/differential"
	"github.com/meshplane/istiod/tests/golden"
)

// vmEnv is the environment of both control planes in the VM cases.
//
// The VM-like clients connect to the plaintext xDS port, as every client
// of this harness does: no certificate and no token, so neither control
// plane has a verified identity for the stream, and both (Istio as
// pilot/pkg/autoregistration's ensureProxyCanControlEntry checks it)
// would refuse every registration with "registration of WorkloadEntry
// requires a verified identity". ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY
// =false turns that check off in both; the check itself, with a real
// identity (Istio's own pilot-agent, its service-account token, xDS over
// TLS), is exercised against ours in tests/integration
// (TestVMAutoRegistration). The grace period is short
// so that the cleanup is seen within the case, long enough that the
// disconnected state is seen before it.
var vmEnv = []string{
	"ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY=false",
	"PILOT_WORKLOAD_ENTRY_GRACE_PERIOD=4s",
}

const (
	healthInfoType = "type.googleapis.com/istio.v1.HealthInformation"
	cdsType        = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	// vmClusterFormat is the EDS cluster of the ServiceEntry selecting
	// the VMs, of the case's namespace.
	vmClusterFormat = "outbound|8080||vm.%s.test"
	// unhealthyMessage is what pilot-agent reports for a failing probe.
	unhealthyMessage = "HTTP probe failed with statuscode: 503"
)

var workloadEntries = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "workloadentries"}
var workloadGroups = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "workloadgroups"}

// vmObjects: the WorkloadGroup vm (metadata labels and annotations, a
// template with a service account, ports and labels of its own, a
// readiness probe) and a ServiceEntry selecting app=vm, in ns; extra is
// appended.
func vmObjects(ns, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
%[2]s---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: vm, namespace: %[1]s}
spec:
  hosts: [vm.%[1]s.test]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8080, name: http, protocol: HTTP, targetPort: 8080}]
  workloadSelector: {labels: {app: vm}}
`, ns, vmGroup(ns)) + extra
}

// vmGroup is the WorkloadGroup vm of ns.
func vmGroup(ns string) string {
	return fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: vm, namespace: %s}
spec:
  metadata:
    labels: {app: vm, tier: backend}
    annotations: {team: a}
  template:
    serviceAccount: vm-sa
    ports: {http: 8080}
    labels: {version: v0, tier: template}
  probe:
    periodSeconds: 1
    httpGet: {path: /ready, port: 8080}
`, ns)
}

// sidecarIn is the sidecar whose EDS is compared.
func sidecarIn(ns string) differential.Proxy {
	return differential.Proxy{Pod: "client-5d8f7-abcde", Namespace: ns, IP: "10.90.0.2", Labels: map[string]string{"app": "client"}}
}

// vmProxy is a VM as pilot-agent presents it (istioctl x workload entry
// configure's setup): its host name as the pod, its labels, service
// account and IP, and a PROXY_CONFIG with the group's readiness probe;
// md adds AUTO_REGISTER_GROUP or WORKLOAD_ENTRY.
func vmProxy(ns, ip string, md map[string]any) differential.Proxy {
	meta := map[string]any{
		"PROXY_CONFIG": map[string]any{"readinessProbe": map[string]any{
			"httpGet": map[string]any{"path": "/ready", "port": 8080}, "periodSeconds": 1}},
	}
	for k, v := range md {
		meta[k] = v
	}
	return differential.Proxy{Pod: "vm-host", Namespace: ns, IP: ip, ServiceAccount: "vm-sa", Workload: "vm",
		Labels: map[string]string{"app": "vm", "version": "v1"}, Metadata: meta}
}

var flavors = []differential.Flavor{differential.Ours, differential.Istio}

// vmClients are one VM's streams, to each control plane, over
// state-of-the-world (adsc) or delta ADS (deltaStream).
type vmClients struct {
	sotw  map[differential.Flavor]*adsc.Client
	delta map[differential.Flavor]*deltaStream
}

// connectVMs opens the VM's stream to both control planes (CDS, as
// Envoy's first request) and waits for the first response; it returns
// the refusal of each, if any.
func connectVMs(t *testing.T, w *differential.Worlds, p differential.Proxy, delta bool) (*vmClients, map[differential.Flavor]error) {
	t.Helper()
	return connectVMsAt(t, w, p, delta, nil)
}

// connectVMsAt is connectVMs for a node of a locality (delta only: adsc
// sends none).
func connectVMsAt(t *testing.T, w *differential.Worlds, p differential.Proxy, delta bool, locality *core.Locality) (*vmClients, map[differential.Flavor]error) {
	t.Helper()
	cfg, err := p.ADSConfig()
	if err != nil {
		t.Fatal(err)
	}
	// the streams live until the test ends (or close ends them)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clients := &vmClients{sotw: map[differential.Flavor]*adsc.Client{}, delta: map[differential.Flavor]*deltaStream{}}
	errs := map[differential.Flavor]error{}
	t.Cleanup(clients.close)
	for _, fl := range flavors {
		if delta {
			d, err := dialDelta(ctx, w.GRPC(fl), cfg, locality)
			if err != nil {
				errs[fl] = err
				continue
			}
			clients.delta[fl] = d
			continue
		}
		att, err := adsc.DialUntilAccepted(ctx, w.GRPC(fl), cfg, adsc.Backoff{Initial: 50 * time.Millisecond, Max: time.Second},
			15*time.Second, func(c *adsc.Client) error { return c.Watch(cdsType) })
		if err != nil {
			errs[fl] = err
			continue
		}
		clients.sotw[fl] = att.Client
	}
	return clients, errs
}

func (v *vmClients) close() {
	for _, c := range v.sotw {
		_ = c.Close()
	}
	for _, d := range v.delta {
		_ = d.conn.Close()
	}
}

// reportHealth sends pilot-agent's health report on both streams:
// healthy, or not with message (an ErrorDetail, as the agent sends it).
// A health report is not answered; the SotW streams' responses stay in
// the receive loop of adsc, the delta streams' are drained.
func (v *vmClients) reportHealth(t *testing.T, healthy bool) {
	t.Helper()
	var detail *statuspb.Status
	if !healthy {
		detail = &statuspb.Status{Code: 500, Message: unhealthyMessage}
	}
	for fl, c := range v.sotw {
		if err := c.SendSotW(&discovery.DiscoveryRequest{TypeUrl: healthInfoType, ErrorDetail: detail}); err != nil {
			t.Fatalf("%s: health report: %v", fl, err)
		}
	}
	for fl, d := range v.delta {
		if err := d.stream.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: healthInfoType, ErrorDetail: detail}); err != nil {
			t.Fatalf("%s: health report: %v", fl, err)
		}
	}
}

// deltaStream is a bare delta ADS stream. Not adsc's: its wire check
// wants a version on every delta resource, and Istio's delta CDS sends
// its clusters without one; only the stream, not its resources, matters
// here.
type deltaStream struct {
	conn   *grpc.ClientConn
	stream discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
}

// dialDelta opens a delta stream as cfg's node, subscribes to every
// cluster and waits for the first response (or the stream's end: a
// refusal); the later responses are read and dropped until the stream
// ends.
func dialDelta(ctx context.Context, addr string, cfg adsc.Config, locality *core.Locality) (*deltaStream, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	md, err := structpb.NewStruct(cfg.Metadata)
	if err != nil {
		conn.Close()
		return nil, err
	}
	s, err := discovery.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err == nil {
		err = s.Send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: cfg.NodeID, Metadata: md, Locality: locality}, TypeUrl: cdsType})
	}
	if err == nil {
		_, err = s.Recv()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	go func() {
		for {
			if _, err := s.Recv(); err != nil {
				return
			}
		}
	}()
	return &deltaStream{conn: conn, stream: s}, nil
}

// entryOf reads a WorkloadEntry of fl's world, normalised (normalEntry);
// nil when there is none.
func entryOf(ctx context.Context, w *differential.Worlds, fl differential.Flavor, ns, name string) (map[string]any, error) {
	dyn := w.Kube(fl).Dynamic
	u, err := dyn.Resource(workloadEntries).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	uids := map[string]string{}
	if groups, err := dyn.Resource(workloadGroups).Namespace(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, g := range groups.Items {
			uids[string(g.GetUID())] = "<uid of WorkloadGroup " + g.GetName() + ">"
		}
	}
	return normalEntry(u.Object, uids), nil
}

// normalEntry keeps of an entry what both control planes decide (name,
// labels, annotations, owner references, spec, status) and rewrites only
// what must differ between the worlds: times (connectedAt, disconnectedAt,
// the conditions' probe and transition times) become "<time>" when they
// parse, the UID of an owner "<uid of WorkloadGroup name>" when it is the
// group's. Server-set metadata (uid, resourceVersion, generation,
// creationTimestamp, managedFields) is dropped.
func normalEntry(obj map[string]any, groupUIDs map[string]string) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	out := map[string]any{"spec": obj["spec"]}
	if st, ok := obj["status"]; ok {
		out["status"] = st
	}
	keep := map[string]any{}
	for _, k := range []string{"name", "namespace", "labels", "annotations", "ownerReferences", "finalizers"} {
		if v, ok := md[k]; ok {
			keep[k] = v
		}
	}
	out["metadata"] = keep
	if ann, ok := keep["annotations"].(map[string]any); ok {
		for _, k := range []string{"istio.io/connectedAt", "istio.io/disconnectedAt"} {
			if s, ok := ann[k].(string); ok && parses(s) {
				ann[k] = "<time>"
			}
		}
	}
	if refs, ok := keep["ownerReferences"].([]any); ok {
		for _, r := range refs {
			if m, ok := r.(map[string]any); ok {
				if n, ok := groupUIDs[fmt.Sprint(m["uid"])]; ok {
					m["uid"] = n
				}
			}
		}
	}
	if st, ok := out["status"].(map[string]any); ok {
		conds, _ := st["conditions"].([]any)
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				for _, k := range []string{"lastProbeTime", "lastTransitionTime"} {
					if s, ok := m[k].(string); ok && parses(s) {
						m[k] = "<time>"
					}
				}
			}
		}
	}
	return out
}

func parses(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// healthyCondition is the entry's Healthy condition (nil: none).
func healthyCondition(e map[string]any) map[string]any {
	st, _ := e["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Healthy" {
			return m
		}
	}
	return nil
}

func annotation(e map[string]any, k string) (string, bool) {
	md, _ := e["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	v, ok := ann[k].(string)
	return v, ok
}

// agreement is one comparison of a state of both worlds, polled until
// both are in it and agree.
type agreement struct {
	what string
	// get reads the state of a world (as JSON values).
	get func(ctx context.Context, fl differential.Flavor) (any, error)
	// ready tells whether a world's state is the one compared (Istio's
	// answer, as its source gives it; ours must reach it too).
	ready func(v any) bool
	// allowed are the differences accepted, by name (Type is the
	// agreement's what).
	allowed []differential.Allowed
}

// agreeWithin bounds an agreement's polls: the control planes write
// within the debounce and their queues' retries, the cleanup within the
// grace period.
const agreeWithin = 45 * time.Second

// agree polls both worlds until both states are ready and agree outside
// the allowed differences, and fails the test with every difference
// otherwise. It returns the allowed differences that occurred, by name.
func agree(t *testing.T, w *differential.Worlds, a agreement) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agreeWithin+15*time.Second)
	defer cancel()
	deadline := time.Now().Add(agreeWithin)
	var last string
	for {
		vals, readiness, err := map[differential.Flavor]any{}, map[differential.Flavor]bool{}, error(nil)
		for _, fl := range flavors {
			if e := w.Alive(fl); e != nil {
				t.Fatal(e)
			}
			var v any
			if v, err = a.get(ctx, fl); err != nil {
				err = fmt.Errorf("%s: %v", fl, err)
				break
			}
			vals[fl], readiness[fl] = v, a.ready(v)
		}
		used := map[string]bool{}
		if err == nil && readiness[differential.Ours] && readiness[differential.Istio] {
			var diffs []string
			for _, d := range golden.Differences("", vals[differential.Ours], vals[differential.Istio], true) {
				dd := differential.Difference{Type: a.what, Path: d.Path, Ours: d.Got, Istio: d.Want}
				if i := slices.IndexFunc(a.allowed, func(al differential.Allowed) bool { return al.Covers(dd) }); i >= 0 {
					used[a.allowed[i].Name] = true
					t.Logf("%s: allowed difference %q (%s): %s", a.what, a.allowed[i].Name, a.allowed[i].Why, dd)
					continue
				}
				diffs = append(diffs, dd.String())
			}
			if len(diffs) == 0 {
				t.Logf("%s: both agree: %s", a.what, clipped(js(vals[differential.Istio])))
				return used
			}
			last = fmt.Sprintf("%d differences from Istio:\n  %s", len(diffs), strings.Join(diffs, "\n  "))
		} else if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("not in the state compared (ours: %v, Istio: %v)\n  ours:  %s\n  Istio: %s",
				readiness[differential.Ours], readiness[differential.Istio], js(vals[differential.Ours]), js(vals[differential.Istio]))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s\nours' log:\n%s", a.what, last, w.LogTail(differential.Ours, 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func clipped(s string) string {
	if len(s) > 1500 {
		return s[:1500] + "…"
	}
	return s
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// entryAgreement compares the entry ns/name in both worlds once ready
// holds (nil: the entry is gone).
func entryAgreement(w *differential.Worlds, what, ns, name string, ready func(e map[string]any) bool) agreement {
	return agreement{
		what: what,
		get: func(ctx context.Context, fl differential.Flavor) (any, error) {
			e, err := entryOf(ctx, w, fl, ns, name)
			if e == nil || err != nil {
				return nil, err
			}
			return e, nil
		},
		ready: func(v any) bool {
			e, _ := v.(map[string]any)
			return ready(e)
		},
	}
}

// edsAgreement compares the endpoints the sidecar of ns is sent for the
// ServiceEntry's cluster, once the VM at ip is in them or not (Istio
// sends no unhealthy endpoint: PILOT_SEND_UNHEALTHY_ENDPOINTS is off, and
// an entry with health checks and no Healthy=True condition is unhealthy).
// An absence agrees also before a control plane has read the entry: the
// stages that follow a healthy one (the VM in the endpoints) are the ones
// that prove the unhealthy endpoint is left out.
func edsAgreement(w *differential.Worlds, what, ns, ip string, present bool) agreement {
	cluster := fmt.Sprintf(vmClusterFormat, ns)
	return agreement{
		what: what,
		get: func(ctx context.Context, fl differential.Flavor) (any, error) {
			s, err := w.Snapshot(ctx, fl, sidecarIn(ns))
			if err != nil {
				return nil, err
			}
			return s["eds"][cluster], nil
		},
		ready: func(v any) bool { return v != nil && strings.Contains(js(v), `"`+ip+`"`) == present },
	}
}

func connected(e map[string]any) bool {
	_, ok := annotation(e, "istio.io/connectedAt")
	return e != nil && ok
}

func disconnected(e map[string]any) bool {
	_, ok := annotation(e, "istio.io/disconnectedAt")
	return e != nil && ok
}

func conditionIs(want string) func(e map[string]any) bool {
	return func(e map[string]any) bool { c := healthyCondition(e); return c != nil && c["status"] == want }
}

// A VM that names its WorkloadGroup (AUTO_REGISTER_GROUP) connects to
// each control plane: the WorkloadEntry each creates (name, labels,
// annotations, owner, spec), its Healthy condition as the agent reports
// the probe passing and failing, the endpoints a sidecar of the namespace
// is sent for the ServiceEntry selecting the VM in each state, the entry
// marked disconnected when the stream ends and deleted after the grace
// period: each compared with Istio's.
func TestVMAutoRegistrationMatchesIstio(t *testing.T) {
	const ns, ip = "vm-auto", "10.90.0.5"
	c := differential.Case{Name: "vm auto-registration", Objects: vmObjects(ns, ""), Proxy: sidecarIn(ns), Env: vmEnv}
	differential.Shared(t).With(t, c, func(w *differential.Worlds) {
		before := registrationCounters(t, w)
		vms, errs := connectVMs(t, w, vmProxy(ns, ip, map[string]any{"AUTO_REGISTER_GROUP": "vm"}), false)
		for fl, err := range errs {
			t.Fatalf("%s refused the VM: %v", fl, err)
		}
		name := "vm-" + ip
		agree(t, w, entryAgreement(w, "registered entry", ns, name, connected))
		agree(t, w, edsAgreement(w, "eds before any health report", ns, ip, false))

		vms.reportHealth(t, true)
		agree(t, w, entryAgreement(w, "entry reported healthy", ns, name, conditionIs("True")))
		agree(t, w, edsAgreement(w, "eds of the healthy VM", ns, ip, true))

		vms.reportHealth(t, false)
		agree(t, w, entryAgreement(w, "entry reported unhealthy", ns, name, conditionIs("False")))
		agree(t, w, edsAgreement(w, "eds of the unhealthy VM", ns, ip, false))

		vms.reportHealth(t, true)
		agree(t, w, entryAgreement(w, "entry healthy again", ns, name, conditionIs("True")))
		agree(t, w, edsAgreement(w, "eds of the VM healthy again", ns, ip, true))

		// the group deleted, its entry with it (as Kubernetes' garbage
		// collector would delete what the group owns: the test API
		// servers run none), and the group created again while the VM
		// stays connected: both create the entry again
		recreateGroup(t, w, ns, name)
		agree(t, w, entryAgreement(w, "entry created again with its group", ns, name, connected))

		vms.close()
		agree(t, w, entryAgreement(w, "entry of the disconnected VM", ns, name, disconnected))
		agree(t, w, entryAgreement(w, "entry after the grace period", ns, name, func(e map[string]any) bool { return e == nil }))
		agree(t, w, edsAgreement(w, "eds without the VM", ns, ip, false))

		// a VM of a network, with a locality on its node (region and
		// zone, no subzone), over delta ADS: the entry's name has the
		// network, its spec the network and the locality
		const ip2 = "10.90.0.9"
		p := vmProxy(ns, ip2, map[string]any{"AUTO_REGISTER_GROUP": "vm", "NETWORK": "net-1"})
		vms2, errs := connectVMsAt(t, w, p, true, &core.Locality{Region: "r1", Zone: "z1"})
		for fl, err := range errs {
			t.Fatalf("%s refused the VM: %v", fl, err)
		}
		name2 := "vm-" + ip2 + "-net-1"
		agree(t, w, entryAgreement(w, "registered entry of a network and locality", ns, name2, connected))
		vms2.close()
		agree(t, w, entryAgreement(w, "entry of a network after the grace period", ns, name2, func(e map[string]any) bool { return e == nil }))

		compareCounters(t, w, before)
	})
}

// compareCounters compares what was added to each control plane's
// auto-registration counters (Istio's names) since before: the processes
// may have served earlier cases.
func compareCounters(t *testing.T, w *differential.Worlds, before map[differential.Flavor]map[string]float64) {
	t.Helper()
	compareCountersAllowing(t, w, before, nil)
}

// compareCountersAllowing is compareCounters with the counters allowed to
// differ, each with the reason; one that does not differ fails.
func compareCountersAllowing(t *testing.T, w *differential.Worlds, before map[differential.Flavor]map[string]float64, allowed map[string]string) {
	t.Helper()
	after := registrationCounters(t, w)
	added := map[differential.Flavor]map[string]float64{}
	for _, fl := range flavors {
		added[fl] = map[string]float64{}
		for k, v := range after[fl] {
			if d := v - before[fl][k]; d != 0 {
				added[fl][k] = d
			}
		}
	}
	for name, why := range allowed {
		o, i := added[differential.Ours][name], added[differential.Istio][name]
		if o == i {
			t.Errorf("allowed difference of %s covers nothing (%v in both): remove it (%s)", name, o, why)
			continue
		}
		t.Logf("allowed difference of %s: ours %v, Istio %v: %s", name, o, i, why)
		delete(added[differential.Ours], name)
		delete(added[differential.Istio], name)
	}
	if !reflect.DeepEqual(added[differential.Ours], added[differential.Istio]) {
		t.Errorf("auto-registration counters added by the case differ\n  ours:  %v\n  Istio: %v\n  (ours in all: %v, Istio's: %v)",
			added[differential.Ours], added[differential.Istio], after[differential.Ours], after[differential.Istio])
	} else {
		t.Logf("auto-registration counters added by the case, in both: %v", added[differential.Istio])
	}
}

// registrationCounters reads the auto_registration_* series of both
// control planes' /metrics, summed by name.
func registrationCounters(t *testing.T, w *differential.Worlds) map[differential.Flavor]map[string]float64 {
	t.Helper()
	out := map[differential.Flavor]map[string]float64{}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, fl := range flavors {
		resp, err := client.Get("http://" + w.Monitoring(fl) + "/metrics")
		if err != nil {
			t.Fatalf("%s: %v", fl, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: %v", fl, err)
		}
		out[fl] = map[string]float64{}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "auto_registration_") {
				continue
			}
			f := strings.Fields(line)
			name := strings.SplitN(f[0], "{", 2)[0]
			var v float64
			if _, err := fmt.Sscan(f[len(f)-1], &v); err == nil {
				out[fl][name] += v
			}
		}
	}
	return out
}

// A WorkloadEntry made by hand, with health checks, joined by a proxy
// that names it (WORKLOAD_ENTRY), over delta ADS: the connection annotations each
// control plane writes on it, the Healthy condition and the endpoints as
// the probe passes and fails, and, when the proxy goes, the entry kept
// and only its condition removed after the grace period.
func TestVMHealthOfManualEntryMatchesIstio(t *testing.T) {
	const ns, ip = "vm-manual", "10.90.0.6"
	entry := fmt.Sprintf(`---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: vm-manual
  namespace: %s
  labels: {app: vm}
  annotations: {proxy.istio.io/health-checks-enabled: "true"}
spec:
  address: %s
  labels: {app: vm}
  serviceAccount: vm-sa
`, ns, ip)
	c := differential.Case{Name: "vm manual entry", Objects: vmObjects(ns, entry), Proxy: sidecarIn(ns), Env: vmEnv}
	differential.Shared(t).With(t, c, func(w *differential.Worlds) {
		before := registrationCounters(t, w)
		defer compareCounters(t, w, before)
		vms, errs := connectVMs(t, w, vmProxy(ns, ip, map[string]any{"WORKLOAD_ENTRY": "vm-manual"}), true)
		for fl, err := range errs {
			t.Fatalf("%s refused the VM: %v", fl, err)
		}
		agree(t, w, entryAgreement(w, "joined entry", ns, "vm-manual", connected))
		agree(t, w, edsAgreement(w, "eds before any health report", ns, ip, false))

		vms.reportHealth(t, false)
		agree(t, w, entryAgreement(w, "entry reported unhealthy", ns, "vm-manual", conditionIs("False")))
		vms.reportHealth(t, true)
		agree(t, w, entryAgreement(w, "entry reported healthy", ns, "vm-manual", conditionIs("True")))
		agree(t, w, edsAgreement(w, "eds of the healthy VM", ns, ip, true))

		vms.close()
		agree(t, w, entryAgreement(w, "entry of the disconnected VM", ns, "vm-manual", disconnected))
		agree(t, w, entryAgreement(w, "entry after the grace period", ns, "vm-manual", func(e map[string]any) bool {
			return disconnected(e) && healthyCondition(e) == nil
		}))
		agree(t, w, edsAgreement(w, "eds without health", ns, ip, false))
	})
}

// Bad input on the stream: a VM naming a WorkloadGroup that does not
// exist, and one naming a WorkloadEntry that does not exist. Both control
// planes end the stream: the gRPC code and message are compared, and no
// entry is created. Ours also lists the refusal on /debug/warningz
// (Istio has no such endpoint).
func TestVMRefusalsMatchIstio(t *testing.T) {
	const ns = "vm-refused"
	// a group that does not validate (a label value Kubernetes refuses, in
	// its metadata for the entries)
	bad := fmt.Sprintf(`---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: bad, namespace: %s}
spec:
  metadata:
    labels: {tier: "not a label value!"}
  template:
    serviceAccount: vm-sa
`, ns)
	badLabels := map[string]any{"app": "vm", "version": "not a label value!"}
	c := differential.Case{Name: "vm refusals", Objects: vmObjects(ns, bad), Proxy: sidecarIn(ns), Env: vmEnv}
	differential.Shared(t).With(t, c, func(w *differential.Worlds) {
		before := registrationCounters(t, w)
		defer compareCountersAllowing(t, w, before, map[string]string{"auto_registration_errors_total": "istio-counts-refused-streams-again: " +
			"Istio also disconnects a stream it refused: its queue then tries to mark the entry that was never created " +
			"disconnected, and counts an error on each of its attempts; ours counts the refusal once (one per refused stream)"})
		for _, tc := range []struct {
			name, ip string
			md       map[string]any
			entry    string
			// allowed explains a refusal that differs from Istio's,
			// allowedMessage one whose message only differs
			allowed, allowedMessage string
		}{
			{name: "a WorkloadGroup that does not exist", ip: "10.90.0.7", md: map[string]any{"AUTO_REGISTER_GROUP": "missing"}, entry: "missing-10.90.0.7"},
			{name: "a WorkloadEntry that does not exist", ip: "10.90.0.8", md: map[string]any{"WORKLOAD_ENTRY": "missing"}, entry: "missing"},
			{name: "agent labels that are no label values", ip: "10.90.0.10", md: map[string]any{"AUTO_REGISTER_GROUP": "vm", "LABELS": badLabels}, entry: "vm-10.90.0.10",
				allowedMessage: "invalid-entry-refused-before-the-api-server: Istio creates the entry and relays the API server's " +
					"refusal (metadata.labels); ours validates it first, as an entry the API server would accept and our store " +
					"would not read back would never be cleaned up: the same code, no entry, our message names the spec field"},
			{name: "a WorkloadGroup that does not validate", ip: "10.90.0.11", md: map[string]any{"AUTO_REGISTER_GROUP": "bad"}, entry: "bad-10.90.0.11",
				allowed: "invalid-group-is-missing: our config store rejects a WorkloadGroup that does not validate at the edge " +
					"(it is listed on /debug/warningz), so the group is missing to auto-registration; Istio reads it (its " +
					"validating webhook, absent from the test API servers, keeps such a group out of a cluster)"},
		} {
			_, errs := connectVMs(t, w, vmProxy(ns, tc.ip, tc.md), false)
			refusal := map[differential.Flavor]any{}
			for _, fl := range flavors {
				if errs[fl] != nil {
					st := status.Convert(errs[fl])
					refusal[fl] = map[string]any{"code": st.Code().String(), "message": st.Message()}
				}
			}
			same := reflect.DeepEqual(refusal[differential.Ours], refusal[differential.Istio])
			if tc.allowedMessage != "" {
				o, _ := refusal[differential.Ours].(map[string]any)
				i, _ := refusal[differential.Istio].(map[string]any)
				switch {
				case o == nil || i == nil || o["code"] != i["code"]:
					t.Errorf("%s: the refusal differs\n  ours:  %v\n  Istio: %v", tc.name, o, i)
				case same:
					t.Errorf("%s: allowed difference %s covers nothing: remove it", tc.name, tc.allowedMessage)
				default:
					t.Logf("%s: both refused with %s; allowed difference %s\n  ours:  %v\n  Istio: %v", tc.name, o["code"],
						tc.allowedMessage, o["message"], i["message"])
				}
			}
			switch {
			case tc.allowedMessage != "":
			case tc.allowed != "" && same:
				t.Errorf("%s: allowed difference %s covers nothing: remove it", tc.name, tc.allowed)
			case tc.allowed != "":
				t.Logf("%s: allowed difference %s\n  ours:  %v\n  Istio: %v", tc.name, tc.allowed, refusal[differential.Ours], refusal[differential.Istio])
				continue
			case !same:
				t.Errorf("%s: the refusal differs\n  ours:  %v\n  Istio: %v", tc.name, refusal[differential.Ours], refusal[differential.Istio])
			case refusal[differential.Istio] == nil:
				t.Errorf("%s: neither refused the stream", tc.name)
			default:
				t.Logf("%s: both refused with %v", tc.name, refusal[differential.Istio])
			}
			ctx := context.Background()
			for _, fl := range flavors {
				if e, err := entryOf(ctx, w, fl, ns, tc.entry); err != nil || e != nil {
					t.Errorf("%s: %s: entry %s: %v %v", tc.name, fl, tc.entry, js(e), err)
				}
			}
			warnings := ourWarnings(t, w)
			if !strings.Contains(warnings, "vm-host."+ns) || !strings.Contains(warnings, tc.ip) {
				t.Errorf("%s: /debug/warningz does not list the refusal: %s", tc.name, warnings)
			}
		}
	})
}

// recreateGroup deletes the WorkloadGroup vm and the VM's entry in both
// worlds, waits until both control planes have read the deletion (the
// sidecar's endpoints lose the VM, healthy until then), and creates the
// group again.
func recreateGroup(t *testing.T, w *differential.Worlds, ns, entry string) {
	t.Helper()
	ctx := context.Background()
	for _, fl := range flavors {
		dyn := w.Kube(fl).Dynamic
		if err := dyn.Resource(workloadGroups).Namespace(ns).Delete(ctx, "vm", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("%s: %v", fl, err)
		}
		if err := dyn.Resource(workloadEntries).Namespace(ns).Delete(ctx, entry, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("%s: %v", fl, err)
		}
	}
	agree(t, w, entryAgreement(w, "entry deleted with its group", ns, entry, func(e map[string]any) bool { return e == nil }))
	agree(t, w, edsAgreement(w, "eds without the deleted entry", ns, strings.TrimPrefix(entry, "vm-"), false))
	for _, fl := range flavors {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(vmGroup(ns)), &u.Object); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Kube(fl).Dynamic.Resource(workloadGroups).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", fl, err)
		}
	}
}

// ourWarnings is our /debug/warningz.
func ourWarnings(t *testing.T, w *differential.Worlds) string {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + w.HTTP(differential.Ours) + "/debug/warningz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
