package integration

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/testproc"
)

// outageDuration is how long the API server stays down: long enough for
// client-go's reflectors to fail several reconnects and back off, as in a
// real control-plane upgrade.
const outageDuration = 10 * time.Second

// An API-server outage does not disturb a serving replica, and after the
// restart its informers catch up without a relist storm:
//   - during the outage /ready stays 200 and the sidecar keeps its stream
//     and every cluster (nothing is removed or pushed empty);
//   - changes made right before the stop and after the restart reach the
//     sidecar (a Service and a DestinationRule each: core and Istio
//     informers);
//   - the restarted API server sees each informer of istiod read its
//     resource in full (LIST, or a watch-list) at most once. Informers
//     resume their watches from the last resourceVersion; a restarted
//     server's watch cache starts at etcd's current revision and ends a
//     watch from an older one with 410 Expired, and client-go then relists
//     once from that resourceVersion (served from the watch cache, not
//     etcd). Leader-only controllers, which lose their lease during the
//     outage, start their informers again when they win it back.
func TestAPIServerOutage(t *testing.T) {
	env := kube.Start(t, kube.WithAuditLog())
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	host := func(svc string) string { return "outbound|9080||" + svc + "." + ns + ".svc.cluster.local" }

	createService(t, env, ns, "early")
	a := dialADS(t, d, adsc.Config{Delta: true,
		NodeID:   "sidecar~10.204.0.100~sleep-1." + ns + "~" + ns + ".svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "1.31.0"}})
	if err := a.c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	a.await("cluster of a Service", func() (bool, string) {
		return a.cluster(host("early")) != nil, host("early") + ": " + describe(a.cluster(host("early")))
	})
	held := len(a.c.State(xds.ClusterType))

	// changes right before the stop: whether istiod sees them before the
	// server goes or only after it comes back, none may be lost
	createService(t, env, ns, "before-stop")
	createDestinationRule(t, env, ns, "early", networking.LoadBalancerSettings_RANDOM)
	env.StopAPIServer(t)
	before := len(env.AuditLog(t))
	t.Logf("API server stopped; %d requests so far", before)

	deadline := time.Now().Add(outageDuration)
	polls := 0
	for time.Now().Before(deadline) {
		if code, body := d.get("/ready"); code != 200 {
			t.Fatalf("/ready during the outage: %d %s", code, body)
		}
		noRemovals(t, a, 200*time.Millisecond)
		if n := len(a.c.State(xds.ClusterType)); n < held {
			t.Fatalf("the sidecar holds %d clusters during the outage, had %d: %v", n, held, a.c.State(xds.ClusterType))
		}
		polls++
	}
	t.Logf("outage: /ready answered 200 %d times; the stream stayed up", polls)

	env.StartAPIServer(t)
	restarted := time.Now()
	if code, body := d.get("/ready"); code != 200 {
		t.Fatalf("/ready after the restart: %d %s", code, body)
	}
	createService(t, env, ns, "after-restart")
	createDestinationRule(t, env, ns, "before-stop", networking.LoadBalancerSettings_LEAST_REQUEST)
	awaitNoRemovals(t, a, "changes from before the stop and after the restart", func() (bool, string) {
		if code, body := d.get("/ready"); code != 200 {
			t.Fatalf("/ready while catching up: %d %s", code, body)
		}
		early, stopped, after := a.cluster(host("early")), a.cluster(host("before-stop")), a.cluster(host("after-restart"))
		return early.GetLbPolicy() == clusterv3.Cluster_RANDOM && stopped.GetLbPolicy() == clusterv3.Cluster_LEAST_REQUEST && after != nil,
			fmt.Sprintf("early: %s; before-stop: %s; after-restart: %s", describe(early), describe(stopped), describe(after))
	})
	t.Logf("converged %v after the restart", time.Since(restarted).Round(time.Millisecond))
	if code, body := d.get("/ready"); code != 200 {
		t.Fatalf("/ready after recovery: %d %s", code, body)
	}

	checkNoRelistStorm(t, env.AuditLog(t)[before:])
}

// checkNoRelistStorm fails when one of istiod's informers read its
// resource in full more than once from the restarted API server (a relist
// loop), and logs every full read with the requests of that informer
// before it, which say why it relisted.
func checkNoRelistStorm(t *testing.T, after []kube.Request) {
	t.Helper()
	type informer struct {
		full    []string // distinct URIs of full reads
		history []string
	}
	informers := map[string]*informer{}
	resumed := 0
	for _, r := range after {
		if !strings.HasPrefix(r.UserAgent, "istiod") || (r.Verb != "watch" && r.Verb != "list") {
			continue
		}
		// a read from no resourceVersion starts an informer (leader-only
		// controllers start theirs again when they win the lease back
		// after the outage); one from a resourceVersion is a relist
		key := informerKey(r)
		if r.ReadsAll() && r.Query.Get("resourceVersion") == "" {
			key += " (new informer)"
		}
		inf := informers[key]
		if inf == nil {
			inf = &informer{}
			informers[key] = inf
		}
		// the same URI twice is the REST client retrying one call (after
		// a 429 with Retry-After), not a second relist: a relist draws a
		// new random timeout
		if r.ReadsAll() && !slices.Contains(inf.full, r.URI) {
			inf.full = append(inf.full, r.URI)
		} else if !r.ReadsAll() {
			resumed++
		}
		inf.history = append(inf.history, fmt.Sprintf("%s rv=%q initial=%q: %d", r.Verb, r.Query.Get("resourceVersion"),
			r.Query.Get("sendInitialEvents"), r.Code))
	}
	var lines []string
	relisted := 0
	for key, inf := range informers {
		if len(inf.full) == 0 {
			continue
		}
		relisted++
		lines = append(lines, fmt.Sprintf("%s: %d full reads; requests: %s", key, len(inf.full), strings.Join(inf.history, ", ")))
		// a leader-only controller's informers are new each time it wins
		// the lease back, and with the tests' one-second renew deadline a
		// renewal the restarted server answers 429 (a second's Retry-After)
		// can end a term: each new informer reads once, which is no relist
		if len(inf.full) > 1 && !strings.HasSuffix(key, " (new informer)") {
			t.Errorf("relist storm: istiod read %s in full %d times after the restart", key, len(inf.full))
		}
	}
	sort.Strings(lines)
	t.Logf("after the restart istiod's %d informers made %d resuming watches; %d read their resource in full:\n  %s",
		len(informers), resumed, relisted, strings.Join(lines, "\n  "))
	if resumed == 0 {
		t.Errorf("no watch reached the restarted API server from istiod")
	}
}

// informerKey names the informer a request comes from: its path and
// selectors, without what changes from one call to the next.
func informerKey(r kube.Request) string {
	q := url.Values{}
	for _, k := range []string{"labelSelector", "fieldSelector"} {
		if v := r.Query.Get(k); v != "" {
			q.Set(k, v)
		}
	}
	path, _, _ := strings.Cut(r.URI, "?")
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// noRemovals applies and ACKs what the sidecar receives for a while; a
// removal, a break of the wire rules or a broken stream fails the test.
func noRemovals(t *testing.T, a *adsClient, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		r, err := a.c.Next(time.Until(end) + time.Millisecond)
		if err != nil {
			if strings.HasPrefix(err.Error(), "no response within") {
				return
			}
			t.Fatalf("ADS stream: %v", err)
		}
		if len(r.Removed) > 0 {
			t.Fatalf("istiod removed %s %v", xds.ShortType(r.TypeURL), r.Removed)
		}
	}
}

// awaitNoRemovals is adsClient.await with noRemovals instead of drain.
// Its bound is long: after failing to connect for the whole outage,
// client-go's reflectors wait up to half a minute (their backoff) before
// they watch again.
func awaitNoRemovals(t *testing.T, a *adsClient, what string, cond func() (bool, string)) {
	t.Helper()
	testproc.Eventually(t, 2*time.Minute, what, func() (bool, string) {
		noRemovals(t, a, 20*time.Millisecond)
		ok, detail := cond()
		return ok, detail + "\n  client holds clusters " + strings.Join(a.c.State(xds.ClusterType), " ")
	})
}

func createService(t testing.TB, env *kube.Env, ns, name string) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 9080, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := env.Kube.CoreV1().Services(ns).Create(registryCtx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createDestinationRule(t testing.TB, env *kube.Env, ns, host string, lb networking.LoadBalancerSettings_SimpleLB) {
	t.Helper()
	dr := &clientnetworking.DestinationRule{ObjectMeta: metav1.ObjectMeta{Name: host, Namespace: ns},
		Spec: networking.DestinationRule{Host: host, TrafficPolicy: &networking.TrafficPolicy{
			LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: lb}}}}}
	if _, err := env.Istio.NetworkingV1().DestinationRules(ns).Create(registryCtx, dr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
