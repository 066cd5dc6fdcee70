package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// Pod churn (-churn N, Kubernetes mode): N pods behind -churn-services
// Services in namespace ns-0, each Service's endpoints in one EndpointSlice
// written by the tool (no kube-controller-manager or kubelet runs: the
// Services have no selector, as a Service whose slices another controller
// manages). After the change rounds every pod is replaced as a rolling
// restart replaces it: its new address added ready and the old one marked
// terminating (ready false, serving and terminating true) in one update,
// the old one removed in the next; the Services roll in parallel, each one
// pod at a time, -churn-interval between updates. The figures: the time
// from the last update until every sidecar holds every Service's final
// endpoints, the sidecars' non-EDS resources received meanwhile (an
// endpoint-only change should push none), and how many load assignments
// of a churned Service arrived with no endpoint although every one of its
// updates kept ready endpoints (none should).

// ChurnReport is what the churn measured.
type ChurnReport struct {
	Pods, Services, Updates int
	Duration                time.Duration // first update to last
	// Converged sidecars held every Service's final endpoints, AfterEnd
	// after the last update (the last of them)
	Converged   int
	AfterEnd    time.Duration
	ConvergeP50 time.Duration
	// EmptyAssignments counts load assignments of a churned Service sent
	// with no endpoint (all sidecars)
	EmptyAssignments int64
	// NonEDS counts the CDS, LDS and RDS resources the sidecars received
	// from the first update to convergence
	NonEDS    int64
	Responses int64
	IstiodCPU float64
	// PushStages are istiod's push-stage histograms over the churn
	PushStages map[string]histogram
}

// The churned Services' addresses: generation 0 (before the restart) in
// 10.250.<service>.<pod>, generation 1 in 10.251.<service>.<pod>.
func churnAddress(gen, svc, pod int) string { return fmt.Sprintf("10.%d.%d.%d", 250+gen, svc, pod+1) }

func churnServiceName(s int) string { return fmt.Sprintf("churn-%d", s) }

// churnCluster marks the outbound clusters of churned Services.
const churnCluster = "||churn-"

// churnPods spreads the pods over the Services.
func churnPods(o Options, s int) int {
	n := o.ChurnPods / o.ChurnServices
	if s < o.ChurnPods%o.ChurnServices {
		n++
	}
	return n
}

// churnSlice is Service s's EndpointSlice with pods of generation 0 below
// replaced and the one being replaced (replacing >= 0) terminating beside
// its successor.
func churnSlice(s, pods, replaced, replacing int) *discoveryv1.EndpointSlice {
	yes, no := true, false
	port, proto, name := int32(9080), corev1.ProtocolTCP, "http"
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: churnServiceName(s) + "-1", Namespace: "ns-0",
			Labels: map[string]string{discoveryv1.LabelServiceName: churnServiceName(s), discoveryv1.LabelManagedBy: "loadtest"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	add := func(addr string, ready bool) {
		c := discoveryv1.EndpointConditions{Ready: &yes, Serving: &yes, Terminating: &no}
		if !ready {
			c = discoveryv1.EndpointConditions{Ready: &no, Serving: &yes, Terminating: &yes}
		}
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: c})
	}
	for p := 0; p < pods; p++ {
		switch {
		case p < replaced:
			add(churnAddress(1, s, p), true)
		case p == replacing:
			add(churnAddress(0, s, p), false)
			add(churnAddress(1, s, p), true)
		default:
			add(churnAddress(0, s, p), true)
		}
	}
	return es
}

// createChurn makes the churned Services and their slices (generation 0).
func (k *kubeMesh) createChurn(ctx context.Context, o Options) error {
	for s := 0; s < o.ChurnServices; s++ {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: churnServiceName(s), Namespace: "ns-0"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 9080, TargetPort: intstr.FromInt32(9080)}}}}
		if _, err := k.kube.CoreV1().Services("ns-0").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Service ns-0/%s: %v", svc.Name, err)
		}
		es := churnSlice(s, churnPods(o, s), 0, -1)
		if _, err := k.kube.DiscoveryV1().EndpointSlices("ns-0").Create(ctx, es, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating EndpointSlice ns-0/%s: %v", es.Name, err)
		}
	}
	return nil
}

// writeChurn replaces Service s's slice.
func (k *kubeMesh) writeChurn(ctx context.Context, es *discoveryv1.EndpointSlice) error {
	cur, err := k.kube.DiscoveryV1().EndpointSlices(es.Namespace).Get(ctx, es.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	es.ResourceVersion = cur.ResourceVersion
	_, err = k.kube.DiscoveryV1().EndpointSlices(es.Namespace).Update(ctx, es, metav1.UpdateOptions{})
	return err
}

// resetChurn puts every slice back to generation 0 (the previous control
// plane's run left them replaced).
func (k *kubeMesh) resetChurn(ctx context.Context, o Options) error {
	for s := 0; s < o.ChurnServices; s++ {
		if err := k.writeChurn(ctx, churnSlice(s, churnPods(o, s), 0, -1)); err != nil {
			return err
		}
	}
	return nil
}

// churn rolls every churned Service (in parallel, one pod at a time) and
// waits until every sidecar holds the final endpoints.
func (f *fleet) churn(ctx context.Context, w *world, cpu *cpuMeter) (*ChurnReport, error) {
	o := f.o
	live, failedBefore := f.liveSidecars()
	cr := &ChurnReport{Pods: o.ChurnPods, Services: o.ChurnServices}
	cpu.lap()
	responses := f.count.responses.Load()
	nonEDS := func() int64 {
		return f.count.resources[0].Load() + f.count.resources[2].Load() + f.count.resources[3].Load()
	}
	nonEDSBefore := nonEDS()
	stages, _ := f.d.histograms(pushStageMetrics)
	f.churning.Store(true)
	start := time.Now()
	var mu sync.Mutex
	var last time.Time
	var firstErr error
	var wg sync.WaitGroup
	for s := 0; s < o.ChurnServices; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pods := churnPods(o, s)
			for p := 0; p < pods; p++ {
				for _, es := range []*discoveryv1.EndpointSlice{churnSlice(s, pods, p, p), churnSlice(s, pods, p+1, -1)} {
					err := w.km.writeChurn(ctx, es)
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = fmt.Errorf("updating EndpointSlice ns-0/%s: %v", es.Name, err)
					}
					cr.Updates++
					last = time.Now()
					mu.Unlock()
					if err != nil {
						return
					}
					select {
					case <-time.After(o.ChurnInterval):
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	cr.Duration = last.Sub(start)
	var each []time.Duration
	f.wait(ctx, evChurned, live, func(id int) bool { return f.full[id] && !failedBefore[id] }, func(e proxyEvent) bool {
		cr.Converged++
		d := max(e.at.Sub(last), 0)
		each = append(each, d)
		cr.AfterEnd = max(cr.AfterEnd, d)
		return true
	})
	cr.ConvergeP50 = percentile(sortedCopy(each), 0.5)
	cr.IstiodCPU, _ = cpu.lap()
	cr.Responses = f.count.responses.Load() - responses
	cr.NonEDS = nonEDS() - nonEDSBefore
	cr.EmptyAssignments = f.count.churnEmpty.Load()
	cr.PushStages = f.d.stagesSince(stages)
	return cr, nil
}

// churnState is what a sidecar knows of the churned Services: per
// cluster, whether it holds the final endpoints.
type churnState struct {
	final    map[string]bool
	reported bool
}

// observeChurn decodes a churned Service's load assignment (a few
// endpoints): an empty one is counted, and once every churned cluster the
// sidecar holds has the final endpoints (generation 1, all of them) while
// the churn runs, it reports.
func (p *proxy) observeChurn(name string, res *discovery.Resource) error {
	cla := &endpointv3.ClusterLoadAssignment{}
	if err := decode(res, cla, cla.GetClusterName); err != nil {
		return err
	}
	n, final := 0, true
	for _, l := range cla.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			n++
			addr := e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress()
			if ip := net.ParseIP(addr).To4(); ip == nil || ip[1] != 251 {
				final = false
			}
		}
	}
	if n == 0 {
		p.count.churnEmpty.Add(1)
	}
	_, host, _ := strings.Cut(name, churnCluster)
	var s int
	if _, err := fmt.Sscanf(host, "%d.", &s); err != nil {
		return wireErrorf("churned cluster %q: no service number", name)
	}
	if p.churn.final == nil {
		p.churn.final = map[string]bool{}
	}
	p.churn.final[name] = final && n == churnPods(*p.opts, s)
	if p.churn.reported || !p.churning.Load() {
		return nil
	}
	held := 0
	for c, fin := range p.churn.final {
		if _, ok := p.clusters[c]; !ok {
			continue
		}
		if !fin {
			return nil
		}
		held++
	}
	if held == p.opts.ChurnServices {
		p.churn.reported = true
		p.events <- proxyEvent{id: p.id, kind: evChurned, at: time.Now()}
	}
	return nil
}
