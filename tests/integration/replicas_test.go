package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/golden"
	"github.com/meshplane/istiod/tests/kube"
)

// replicaHosts are the services of the replicas mesh; each has an HTTP
// port 8080 and 9090.
var replicaHosts = []string{"alpha", "bravo", "charlie", "delta"}

// What a proxy receives is a function of the current configuration, not
// of the events that led to it: one replica lives through 200
// VirtualService writes at about 10/s, and ten updates its validation
// rejects, with a sidecar connected throughout; a second replica started
// afterwards, on the same API server, sends that sidecar (and a fresh
// one) the same clusters, listeners and routes, to the field.
func TestReplicasAgreeWhateverTheirHistory(t *testing.T) {
	env := kube.Shared(t)
	sys := env.NewNamespace(t, nil).Name
	ns := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	for _, h := range replicaHosts {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: h, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": h}, Ports: []corev1.ServicePort{
				{Name: "http-a", Port: 8080, TargetPort: intstr.FromInt32(8080)},
				{Name: "http-b", Port: 9090, TargetPort: intstr.FromInt32(9090)},
			}},
		}
		if _, err := env.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// the sidecar sees its namespace only: the services other tests create
	// and delete in the shared API server would push it all along. (They
	// once made this test fail: a fetch that asked each type once returned
	// listeners naming routes a push had added between its requests;
	// adsc.Fetch now asks again until its subscriptions are complete, see
	// TestFetchCompleteDuringPushes.)
	sc := &clientnetworking.Sidecar{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns},
		Spec: networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}}}
	if _, err := env.Istio.NetworkingV1().Sidecars(ns).Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy := adsc.Config{
		NodeID: "sidecar~10.77.0.9~client-1." + ns + "~" + ns + ".svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "1.31.0",
			"LABELS": map[string]any{"app": "client"}},
	}

	first := startIstiod(t, env, sys)
	live := dialADS(t, first, proxy)
	for _, typ := range []string{xds.ClusterType, xds.ListenerType} {
		if err := live.c.Watch(typ); err != nil {
			t.Fatal(err)
		}
	}
	if err := live.c.Watch(xds.RouteType, "8080", "9090"); err != nil {
		t.Fatal(err)
	}

	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("REPLICAS_SEED"), 10, 64); err == nil {
		seed = v // replays a logged history
	}
	t.Logf("history seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	vsc := env.Istio.NetworkingV1().VirtualServices(ns)
	drc := env.Istio.NetworkingV1().DestinationRules(ns)
	sec := env.Istio.NetworkingV1().ServiceEntries(ns)
	for i := range 200 {
		var err error
		switch n := rng.IntN(10); {
		case n < 6:
			err = randomWrite(ctx, rng, vsc, fmt.Sprintf("vs-%d", rng.IntN(6)), func(name string) *clientnetworking.VirtualService { return randomVS(rng, name, ns) },
				func(o, cur *clientnetworking.VirtualService) { o.ResourceVersion = cur.ResourceVersion })
		case n < 8:
			err = randomWrite(ctx, rng, drc, fmt.Sprintf("dr-%d", rng.IntN(3)), func(name string) *clientnetworking.DestinationRule { return randomDR(rng, name, ns) },
				func(o, cur *clientnetworking.DestinationRule) { o.ResourceVersion = cur.ResourceVersion })
		default:
			err = randomWrite(ctx, rng, sec, fmt.Sprintf("se-%d", rng.IntN(3)), func(name string) *clientnetworking.ServiceEntry { return randomSE(rng, name, ns) },
				func(o, cur *clientnetworking.ServiceEntry) { o.ResourceVersion = cur.ResourceVersion })
		}
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		live.drain()
		time.Sleep(100 * time.Millisecond)
	}
	// ten updates that validation rejects: each keeps its object's last
	// good version serving on the replica that saw it
	list, err := vsc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if len(list.Items) == 0 {
			break
		}
		cur, err := vsc.Get(ctx, list.Items[i%len(list.Items)].Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bad := cur.DeepCopy()
		bad.Spec.Http = append(bad.Spec.Http, &networking.HTTPRoute{
			Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: fmt.Sprintf("(unclosed-%d", i)}}}},
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: bad.Spec.Hosts[0]}}},
		})
		if _, err := vsc.Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		live.drain()
		time.Sleep(100 * time.Millisecond)
	}

	// the connected sidecar follows its listeners' route configurations,
	// as Envoy does
	live.drain()
	if err := live.c.Watch(xds.RouteType, live.c.RouteConfigNames()...); err != nil {
		t.Fatal(err)
	}
	live.drain()
	second := startIstiod(t, env, sys)
	// both replicas have read every write
	last, err := vsc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*istiod{first, second} {
		eventually(t, "replica holds the last VirtualServices", func() (bool, string) {
			seen := map[string]bool{}
			for _, o := range d.configz(ns) {
				if o.Kind == "VirtualService" {
					seen[o.Metadata.Name] = true
				}
			}
			for _, p := range d.warnings() {
				if p.Severity == "error" && strings.HasPrefix(p.Object, "VirtualService "+ns+"/") {
					seen[strings.TrimPrefix(p.Object, "VirtualService "+ns+"/")] = true
				}
			}
			missing := []string{}
			for _, vs := range last.Items {
				if !seen[vs.Name] {
					missing = append(missing, vs.Name)
				}
			}
			return len(missing) == 0, fmt.Sprintf("not in configz nor rejected: %v", missing)
		})
	}

	var diffs []string
	eventually(t, "replicas agree", func() (bool, string) {
		live.drain()
		a, err := adsc.Fetch(ctx, first.srv.GRPCAddr(), proxy)
		if err != nil {
			return false, err.Error()
		}
		b, err := adsc.Fetch(ctx, second.srv.GRPCAddr(), proxy)
		if err != nil {
			return false, err.Error()
		}
		held := adsc.Snapshot{"cds": {}, "lds": {}, "rds": {}}
		for short, typ := range map[string]string{"cds": xds.ClusterType, "lds": xds.ListenerType, "rds": xds.RouteType} {
			for _, n := range live.c.State(typ) {
				held[short][n] = live.c.Resource(typ, n)
			}
		}
		diffs = snapshotDifferences(t, "first replica", a, "second replica", b, "eds")
		if len(diffs) > 0 {
			// what each replica says it could not send
			for i, d := range []*istiod{first, second} {
				_, body := d.get("/debug/warningz")
				if s := string(body); strings.Contains(s, "hold ") {
					diffs = append(diffs, fmt.Sprintf("replica %d warningz: %s", i+1, clipText(s)))
				}
			}
		}
		diffs = append(diffs, snapshotDifferences(t, "sidecar connected throughout", held, "second replica", b, "eds")...)
		return len(diffs) == 0, strings.Join(diffs, "\n")
	})
}

// typedClient is what randomWrite uses of a typed Istio client.
type typedClient[T any] interface {
	Get(ctx context.Context, name string, o metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, o metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, o metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, o metav1.DeleteOptions) error
}

// randomWrite creates the named object when absent, else deletes it (one
// time in eight) or replaces it with a new random one.
func randomWrite[T any](ctx context.Context, rng *rand.Rand, c typedClient[T], name string, newObj func(string) T, keepVersion func(o, cur T)) error {
	cur, err := c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.Create(ctx, newObj(name), metav1.CreateOptions{})
	case err != nil:
	case rng.IntN(8) == 0:
		err = c.Delete(ctx, name, metav1.DeleteOptions{})
	default:
		next := newObj(name)
		keepVersion(next, cur)
		_, err = c.Update(ctx, next, metav1.UpdateOptions{})
	}
	return err
}

// randomDR is a DestinationRule for one of the hosts: subsets, a load
// balancer, a connection pool or TLS settings, at random.
func randomDR(rng *rand.Rand, name, ns string) *clientnetworking.DestinationRule {
	dr := &clientnetworking.DestinationRule{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	dr.Spec.Host = replicaHosts[rng.IntN(len(replicaHosts))]
	tp := &networking.TrafficPolicy{}
	if rng.IntN(2) == 0 {
		tp.LoadBalancer = &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{
			Simple: []networking.LoadBalancerSettings_SimpleLB{networking.LoadBalancerSettings_ROUND_ROBIN, networking.LoadBalancerSettings_LEAST_REQUEST}[rng.IntN(2)]}}
	}
	if rng.IntN(2) == 0 {
		tp.ConnectionPool = &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxRetries: int32(1 + rng.IntN(5))}}
	}
	if rng.IntN(3) == 0 {
		tp.Tls = &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE}
	}
	dr.Spec.TrafficPolicy = tp
	for i := range rng.IntN(3) {
		dr.Spec.Subsets = append(dr.Spec.Subsets, &networking.Subset{Name: fmt.Sprintf("v%d", i+1), Labels: map[string]string{"version": fmt.Sprintf("v%d", i+1)}})
	}
	return dr
}

// randomSE is a ServiceEntry of an external host with an HTTP or TCP port.
func randomSE(rng *rand.Rand, name, ns string) *clientnetworking.ServiceEntry {
	se := &clientnetworking.ServiceEntry{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	se.Spec.Hosts = []string{fmt.Sprintf("ext-%d.example.com", rng.IntN(4))}
	proto := []string{"HTTP", "TCP", "HTTPS"}[rng.IntN(3)]
	port := []uint32{80, 8080, 443}[rng.IntN(3)]
	se.Spec.Ports = []*networking.ServicePort{{Number: port, Name: strings.ToLower(proto) + "-ext", Protocol: proto}}
	se.Spec.Resolution = networking.ServiceEntry_DNS
	se.Spec.Location = networking.ServiceEntry_MESH_EXTERNAL
	return se
}

// randomVS is a VirtualService for one of the replicas' hosts, its HTTP
// routes on one or both ports, with random matches.
func randomVS(rng *rand.Rand, name, ns string) *clientnetworking.VirtualService {
	host := replicaHosts[rng.IntN(len(replicaHosts))]
	vs := &clientnetworking.VirtualService{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	vs.Spec.Hosts = []string{host}
	for range 1 + rng.IntN(3) {
		r := &networking.HTTPRoute{}
		if rng.IntN(3) > 0 {
			m := &networking.HTTPMatchRequest{IgnoreUriCase: rng.IntN(2) == 0}
			switch rng.IntN(3) {
			case 0:
				m.Uri = &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: fmt.Sprintf("/p%d", rng.IntN(4))}}
			case 1:
				m.Uri = &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: fmt.Sprintf("/e%d", rng.IntN(4))}}
			}
			if rng.IntN(2) == 0 {
				m.Port = uint32([]int{8080, 9090}[rng.IntN(2)])
			}
			if rng.IntN(3) == 0 {
				m.Headers = map[string]*networking.StringMatch{"x-v": {MatchType: &networking.StringMatch_Exact{Exact: fmt.Sprint(rng.IntN(3))}}}
			}
			r.Match = []*networking.HTTPMatchRequest{m}
		}
		dst := replicaHosts[rng.IntN(len(replicaHosts))]
		r.Route = []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: dst, Port: &networking.PortSelector{Number: uint32([]int{8080, 9090}[rng.IntN(2)])}}}}
		if rng.IntN(3) == 0 {
			r.Retries = &networking.HTTPRetry{Attempts: int32(rng.IntN(4))}
		}
		vs.Spec.Http = append(vs.Spec.Http, r)
	}
	return vs
}

// snapshotDifferences lists, per resource, the fields where two snapshots
// differ, with both values; types in skip are not compared.
func snapshotDifferences(t *testing.T, aName string, a adsc.Snapshot, bName string, b adsc.Snapshot, skip ...string) []string {
	t.Helper()
	var out []string
	for _, typ := range adsc.ShortTypes {
		if contains(strings.Join(skip, ","), typ) {
			continue
		}
		names := map[string]bool{}
		for n := range a[typ] {
			names[n] = true
		}
		for n := range b[typ] {
			names[n] = true
		}
		sorted := make([]string, 0, len(names))
		for n := range names {
			sorted = append(sorted, n)
		}
		sort.Strings(sorted)
		for _, n := range sorted {
			ma, mb := a[typ][n], b[typ][n]
			switch {
			case ma == nil:
				out = append(out, fmt.Sprintf("%s %s: only the %s has it", typ, n, bName))
			case mb == nil:
				out = append(out, fmt.Sprintf("%s %s: only the %s has it", typ, n, aName))
			case !proto.Equal(ma, mb):
				for _, d := range golden.Differences("", asJSON(t, ma), asJSON(t, mb), true) {
					out = append(out, fmt.Sprintf("%s %s: %s\n    %s: %s\n    %s: %s", typ, n, d.Path, aName, clipJSON(d.Got), bName, clipJSON(d.Want)))
				}
			}
		}
	}
	return out
}

func asJSON(t *testing.T, m proto.Message) any {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func clipText(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

func clipJSON(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, _ := json.Marshal(v)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
