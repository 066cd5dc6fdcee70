package autoregistration_test

import (
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pkg/config"
)

func autoEntry(ns, name string, ann map[string]string) *clientnetworking.WorkloadEntry {
	a := map[string]string{"istio.io/autoRegistrationGroup": "vms"}
	for k, v := range ann {
		a[k] = v
	}
	return &clientnetworking.WorkloadEntry{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: a},
		Spec: networking.WorkloadEntry{Address: "10.9.0.1"}}
}

func manualEntry(ns, name, sa string) *clientnetworking.WorkloadEntry {
	return &clientnetworking.WorkloadEntry{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Annotations: map[string]string{"proxy.istio.io/health-checks-enabled": "true"}},
		Spec: networking.WorkloadEntry{Address: "10.6.0.1", ServiceAccount: sa}}
}

func ts(t time.Time) string { return t.Format(time.RFC3339Nano) }

// A replica that restarts (same instance ID) marks the entries it left
// connected as disconnected, and deletes them after the grace period;
// the entries of other replicas are theirs.
func TestStartupCleanup(t *testing.T) {
	f := newFixture(t,
		autoEntry("ns", "mine", map[string]string{"istio.io/workloadController": "istiod-a", "istio.io/connectedAt": ts(start.Add(-time.Hour))}),
		autoEntry("ns", "theirs", map[string]string{"istio.io/workloadController": "istiod-b", "istio.io/connectedAt": ts(start.Add(-time.Hour))}))
	f.controller("istiod-a")
	f.waitEntry("ns", "mine", "disconnected", func(e *config.Config) bool {
		return e != nil && e.Annotations["istio.io/disconnectedAt"] == ts(start) && e.Annotations["istio.io/connectedAt"] == ""
	})
	f.waitTimers(f.timers + 1)
	f.clk.Advance(grace)
	f.waitEntry("ns", "mine", "deleted", gone)
	if e := f.entry("ns", "theirs"); e == nil || e.Annotations["istio.io/disconnectedAt"] != "" {
		t.Fatalf("the other replica's entry: %v", e)
	}
}

// A replica that restarts (same instance ID) also takes up the entries it
// had marked disconnected: their grace-period timers died with its
// previous run. Each is deleted once its own grace period has passed
// (from its disconnectedAt), not at the periodic sweep; the other
// replica's stay.
func TestStartupCleanupOfDisconnectedEntries(t *testing.T) {
	f := newFixture(t,
		autoEntry("ns", "recent", map[string]string{"istio.io/workloadController": "istiod-a", "istio.io/disconnectedAt": ts(start.Add(-time.Second))}),
		autoEntry("ns", "long-ago", map[string]string{"istio.io/workloadController": "istiod-a", "istio.io/disconnectedAt": ts(start.Add(-2 * grace))}),
		autoEntry("ns", "theirs", map[string]string{"istio.io/workloadController": "istiod-b", "istio.io/disconnectedAt": ts(start.Add(-time.Second))}))
	f.controller("istiod-a")
	f.waitEntry("ns", "long-ago", "deleted at once", gone)
	f.waitTimers(f.timers + 1) // the recent one's remaining grace period
	if f.entry("ns", "recent") == nil {
		t.Fatal("recent deleted before its grace period passed")
	}
	f.clk.Advance(grace - time.Second)
	f.waitEntry("ns", "recent", "deleted after its grace period", gone)
	if f.entry("ns", "theirs") == nil {
		t.Fatal("the other replica's entry deleted")
	}
}

// The periodic sweep (every ten grace periods) deletes entries
// disconnected for longer than the grace period, and entries still marked
// connected 1.5 × the maximum connection age after their connection (their
// replica went away); not the others.
func TestPeriodicCleanup(t *testing.T) {
	f := newFixture(t,
		autoEntry("ns", "disconnected-long-ago", map[string]string{"istio.io/workloadController": "istiod-b", "istio.io/disconnectedAt": ts(start.Add(-time.Minute))}),
		autoEntry("ns", "stale-connection", map[string]string{"istio.io/workloadController": "istiod-b", "istio.io/connectedAt": ts(start.Add(-44 * time.Minute))}),
		autoEntry("ns", "connected", map[string]string{"istio.io/workloadController": "istiod-b", "istio.io/connectedAt": ts(start)}),
		manualEntry("ns", "manual", ""))
	f.controller("istiod-a")
	f.clk.Advance(10 * grace) // 100s: the stale connection is 45m40s old
	f.waitEntry("ns", "disconnected-long-ago", "deleted", gone)
	f.waitTimers(f.timers + 1) // the limiter's wait
	f.clk.Advance(50 * time.Millisecond)
	f.waitEntry("ns", "stale-connection", "deleted", gone)
	for _, n := range []string{"connected", "manual"} {
		if f.entry("ns", n) == nil {
			t.Errorf("%s deleted", n)
		}
	}
}
