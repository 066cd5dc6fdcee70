package autoregistration_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1alpha1 "istio.io/api/meta/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/autoregistration"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
)

func TestEntryName(t *testing.T) {
	long := strings.Repeat("g", 250)
	for _, tc := range []struct {
		name, group, ns, network string
		ips                      []string
		want                     string
	}{
		{"group and IP", "vm", "ns", "", []string{"10.0.0.1", "10.0.0.2"}, "vm-10.0.0.1"},
		{"network", "vm", "ns", "vpc1", []string{"10.0.0.1"}, "vm-10.0.0.1-vpc1"},
		{"IPv6", "vm", "ns", "", []string{"fd00::1"}, "vm-fd00--1"},
		{"too long: the last 253 characters", long, "ns", "net", []string{"10.0.0.1"}, (long + "-10.0.0.1-net")[len(long)+13-253:]},
		{"no group", "", "ns", "", []string{"10.0.0.1"}, ""},
		{"no IP", "vm", "ns", "", nil, ""},
		{"no namespace", "vm", "", "", []string{"10.0.0.1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &model.Proxy{IPAddresses: tc.ips, ID: "x.ns", Metadata: &model.NodeMetadata{Namespace: tc.ns, AutoRegisterGroup: tc.group, Network: tc.network}}
			got := autoregistration.EntryName(p)
			if got != tc.want {
				t.Fatalf("EntryName = %q, want %q", got, tc.want)
			}
			if len(got) > 253 {
				t.Fatalf("%d characters", len(got))
			}
		})
	}
}

// The entry made from the group: Istio's name, labels, annotations, owner
// and spec.
func TestRegisterCreatesEntryFromGroup(t *testing.T) {
	f := newFixture(t, group("ns", "vms", &networking.WorkloadGroup{
		Metadata: &networking.WorkloadGroup_ObjectMeta{Labels: map[string]string{"app": "vm", "tier": "group"},
			Annotations: map[string]string{"team": "a"}},
		Template: &networking.WorkloadEntry{Ports: map[string]uint32{"http": 8080}, ServiceAccount: "vm-sa",
			Network: "template-net", Locality: "template/zone", Weight: 3},
	}))
	c := f.controller("istiod-a")
	p := withProbe(vm("ns", "vms", "10.1.0.1", "vm-sa"))
	p.Metadata.Labels = map[string]string{"tier": "agent", "version": "v1", "istio-locality": "r/z"}
	p.Metadata.Network = "vpc1"
	s := f.stream(p)
	s.NodeLocality = "us-east/zone-1"
	if err := c.OnConnect(s); err != nil {
		t.Fatal(err)
	}
	e := f.waitEntry("ns", "vms-10.1.0.1-vpc1", "created", exists)
	wantLabels := map[string]string{"app": "vm", "tier": "agent", "version": "v1"}
	if !equalMaps(e.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", e.Labels, wantLabels)
	}
	wantAnn := map[string]string{
		"istio.io/autoRegistrationGroup":       "vms",
		"istio.io/workloadController":          "istiod-a",
		"istio.io/connectedAt":                 start.Format(time.RFC3339Nano),
		"team":                                 "a",
		"proxy.istio.io/health-checks-enabled": "true",
	}
	if !equalMaps(e.Annotations, wantAnn) {
		t.Errorf("annotations %v, want %v", e.Annotations, wantAnn)
	}
	if len(e.OwnerReferences) != 1 {
		t.Fatalf("owner references %v", e.OwnerReferences)
	}
	o := e.OwnerReferences[0]
	if o.APIVersion != "networking.istio.io/v1" || o.Kind != "WorkloadGroup" || o.Name != "vms" || o.UID != "uid-vms" || o.Controller == nil || !*o.Controller {
		t.Errorf("owner %+v", o)
	}
	spec := e.Spec.(*networking.WorkloadEntry)
	if spec.Address != "10.1.0.1" || spec.Network != "vpc1" || spec.Locality != "us-east/zone-1" || spec.ServiceAccount != "vm-sa" ||
		spec.Ports["http"] != 8080 || spec.Weight != 3 || !equalMaps(spec.Labels, wantLabels) {
		t.Errorf("spec %v", spec)
	}
}

// Without a network, node locality or probe, the template's network and
// locality stay and there is no health-check annotation.
func TestRegisterKeepsTemplateFields(t *testing.T) {
	f := newFixture(t, group("ns", "vms", &networking.WorkloadGroup{
		Template: &networking.WorkloadEntry{ServiceAccount: "vm-sa", Network: "template-net", Locality: "r/z"},
	}))
	c := f.controller("istiod-a")
	if err := c.OnConnect(f.stream(vm("ns", "vms", "10.1.0.2", "vm-sa"))); err != nil {
		t.Fatal(err)
	}
	e := f.waitEntry("ns", "vms-10.1.0.2", "created", exists)
	spec := e.Spec.(*networking.WorkloadEntry)
	if spec.Network != "template-net" || spec.Locality != "r/z" {
		t.Errorf("spec %v", spec)
	}
	if _, ok := e.Annotations["proxy.istio.io/health-checks-enabled"]; ok {
		t.Errorf("health checks without a probe: %v", e.Annotations)
	}
}

// Refusals: Istio's codes and messages, a line on the board until the
// proxy connects successfully.
func TestRefusals(t *testing.T) {
	f := newFixture(t, group("ns", "vms", &networking.WorkloadGroup{Template: &networking.WorkloadEntry{ServiceAccount: "vm-sa"}}))
	c := f.controller("istiod-a")
	for _, tc := range []struct {
		name   string
		proxy  func() *model.Proxy
		code   codes.Code
		msg    string
		object string
	}{
		{"no such group", func() *model.Proxy { return vm("ns", "nope", "10.2.0.1", "vm-sa") }, codes.FailedPrecondition,
			"auto-registration WorkloadEntry of vm-10.2.0.1.ns failed: cannot find WorkloadGroup ns/nope", "WorkloadGroup ns/nope"},
		{"unverified", func() *model.Proxy {
			p := vm("ns", "vms", "10.2.0.2", "vm-sa")
			p.VerifiedIdentity = nil
			return p
		}, codes.Unknown, "registration of WorkloadEntry requires a verified identity", "WorkloadGroup ns/vms"},
		{"other namespace", func() *model.Proxy {
			p := vm("ns", "vms", "10.2.0.3", "vm-sa")
			p.VerifiedIdentity.Namespace = "other"
			return p
		}, codes.Unknown, `registration of WorkloadEntry namespace mismatch: "other" vs "ns"`, "WorkloadGroup ns/vms"},
		{"other service account", func() *model.Proxy { return vm("ns", "vms", "10.2.0.4", "default") }, codes.Unknown,
			`registration of WorkloadEntry service account mismatch: "default" vs "vm-sa"`, "WorkloadGroup ns/vms"},
		{"entry does not validate", func() *model.Proxy {
			p := vm("ns", "vms", "10.2.0.5", "vm-sa")
			p.Metadata.Labels = map[string]string{"bad key!": "x"}
			return p
		}, codes.Unknown, "auto-registration WorkloadEntry of vm-10.2.0.5.ns failed: error creating WorkloadEntry: " +
			"WorkloadEntry ns/vms-10.2.0.5 made of WorkloadGroup ns/vms and the proxy's metadata is invalid:", "WorkloadGroup ns/vms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.proxy()
			err := c.OnConnect(f.stream(p))
			if err == nil {
				t.Fatal("accepted")
			}
			if got := status.Code(err); got != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("refusal %v (%v), want %v containing %q", err, got, tc.code, tc.msg)
			}
			if !onBoard(f, tc.object, tc.msg) {
				t.Fatalf("not on the board: %+v", f.board.List())
			}
			if e := f.entry("ns", autoregistration.EntryName(p)); e != nil {
				t.Fatalf("entry created: %v", e)
			}
		})
	}
	// the fix (a proxy with the right identity) clears the line
	p := vm("ns", "vms", "10.2.0.4", "vm-sa")
	if err := c.OnConnect(f.stream(p)); err != nil {
		t.Fatal(err)
	}
	if onBoard(f, "WorkloadGroup ns/vms", "service account mismatch") {
		t.Fatalf("still on the board: %+v", f.board.List())
	}
}

func onBoard(f *fixture, object, msg string) bool {
	for _, pr := range f.board.List() {
		if pr.Source == "autoregistration" && pr.Object == object && strings.Contains(pr.Message, msg) {
			return true
		}
	}
	return false
}

// Disconnected: marked at once, deleted after the grace period.
func TestGracePeriodCleanup(t *testing.T) {
	f := newFixture(t, group("ns", "vms", &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}}))
	c := f.controller("istiod-a")
	s := f.stream(vm("ns", "vms", "10.3.0.1", ""))
	if err := c.OnConnect(s); err != nil {
		t.Fatal(err)
	}
	f.waitEntry("ns", "vms-10.3.0.1", "created", exists)
	f.clk.Advance(time.Second)
	c.OnDisconnect(s)
	e := f.waitEntry("ns", "vms-10.3.0.1", "disconnected", func(e *config.Config) bool {
		return e != nil && e.Annotations["istio.io/disconnectedAt"] != ""
	})
	if got, want := e.Annotations["istio.io/disconnectedAt"], start.Add(time.Second).Format(time.RFC3339Nano); got != want {
		t.Errorf("disconnectedAt %s, want %s", got, want)
	}
	if _, ok := e.Annotations["istio.io/connectedAt"]; ok || e.Annotations["istio.io/workloadController"] != "istiod-a" {
		t.Errorf("annotations %v", e.Annotations)
	}
	f.waitTimers(f.timers + 1) // the grace period's
	f.clk.Advance(grace - time.Millisecond)
	if f.entry("ns", "vms-10.3.0.1") == nil {
		t.Fatal("deleted before the grace period")
	}
	f.clk.Advance(time.Millisecond)
	f.waitEntry("ns", "vms-10.3.0.1", "deleted", gone)
}

// A reconnection within the grace period keeps the entry; so does a
// second stream of the same proxy ending.
func TestReconnectWithinGracePeriod(t *testing.T) {
	f := newFixture(t, group("ns", "vms", &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}}))
	c := f.controller("istiod-a")
	p := vm("ns", "vms", "10.3.0.2", "")
	s1, s2 := f.stream(p), f.stream(p)
	for _, s := range []model.ProxyStream{s1, s2} {
		if err := c.OnConnect(s); err != nil {
			t.Fatal(err)
		}
		f.waitEntry("ns", "vms-10.3.0.2", "created", exists)
	}
	c.OnDisconnect(s1) // s2 still open: nothing to do
	f.clk.Advance(time.Second)
	c.OnDisconnect(s2)
	f.waitEntry("ns", "vms-10.3.0.2", "disconnected", func(e *config.Config) bool {
		return e != nil && e.Annotations["istio.io/disconnectedAt"] == start.Add(time.Second).Format(time.RFC3339Nano)
	})
	f.waitTimers(f.timers + 1)
	f.clk.Advance(grace / 2)
	s3 := f.stream(p)
	if err := c.OnConnect(s3); err != nil {
		t.Fatal(err)
	}
	f.waitEntry("ns", "vms-10.3.0.2", "connected again", func(e *config.Config) bool {
		return e != nil && e.Annotations["istio.io/connectedAt"] == s3.ConnectedAt.Format(time.RFC3339Nano) && e.Annotations["istio.io/disconnectedAt"] == ""
	})
	f.clk.Advance(grace)
	f.waitTimers(f.timers) // the grace period's check ran
	time.Sleep(50 * time.Millisecond)
	if f.entry("ns", "vms-10.3.0.2") == nil {
		t.Fatal("deleted although reconnected")
	}
}

// The proxy moves to another replica: the controller annotation names the
// new one, and the old one's disconnect changes nothing.
func TestOtherReplicaTakesOver(t *testing.T) {
	f := newFixture(t, group("ns", "vms", &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}}))
	a, b := f.controller("istiod-a"), f.controller("istiod-b")
	p := vm("ns", "vms", "10.3.0.3", "")
	sa := f.stream(p)
	if err := a.OnConnect(sa); err != nil {
		t.Fatal(err)
	}
	f.waitEntry("ns", "vms-10.3.0.3", "created", exists)
	f.clk.Advance(time.Second)
	sb := f.stream(p)
	if err := b.OnConnect(sb); err != nil {
		t.Fatal(err)
	}
	f.waitEntry("ns", "vms-10.3.0.3", "taken over", func(e *config.Config) bool {
		return e != nil && e.Annotations["istio.io/workloadController"] == "istiod-b" &&
			e.Annotations["istio.io/connectedAt"] == sb.ConnectedAt.Format(time.RFC3339Nano)
	})
	a.OnDisconnect(sa)
	f.clk.Advance(2 * grace)
	time.Sleep(50 * time.Millisecond)
	e := f.entry("ns", "vms-10.3.0.3")
	if e == nil || e.Annotations["istio.io/disconnectedAt"] != "" || e.Annotations["istio.io/workloadController"] != "istiod-b" {
		t.Fatalf("after the old replica's disconnect: %v", e)
	}
	// health reports of the old replica's stream are not written either
	a.OnHealth(sa, false, "old")
	b.OnHealth(sb, true, "")
	f.waitEntry("ns", "vms-10.3.0.3", "healthy from b", func(e *config.Config) bool { return condition(e) == "True/" })
}

// Deletions are rate-limited: 20 a second, burst 1, on the clock.
func TestCleanupRateLimited(t *testing.T) {
	f := newFixture(t, group("ns", "vms", &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}}))
	c := f.controller("istiod-a")
	var ss []model.ProxyStream
	names := []string{"vms-10.4.0.1", "vms-10.4.0.2", "vms-10.4.0.3"}
	for i, n := range names {
		s := f.stream(vm("ns", "vms", strings.TrimPrefix(n, "vms-"), ""))
		if err := c.OnConnect(s); err != nil {
			t.Fatal(err)
		}
		f.waitEntry("ns", n, "created", exists)
		ss = append(ss, s)
		_ = i
	}
	for i, s := range ss {
		c.OnDisconnect(s)
		f.waitEntry("ns", names[i], "disconnected", func(e *config.Config) bool { return e != nil && e.Annotations["istio.io/disconnectedAt"] != "" })
	}
	f.waitTimers(f.timers + 3)
	f.clk.Advance(grace)
	count := func() int {
		n := 0
		for _, name := range names {
			if f.entry("ns", name) != nil {
				n++
			}
		}
		return n
	}
	f.eventually("one deleted, one waiting for the limiter", func() (bool, string) {
		return count() == 2 && len(f.clk.Waiters()) == f.timers+1, ""
	})
	f.clk.Advance(50 * time.Millisecond)
	f.eventually("two deleted", func() (bool, string) { return count() == 1 && len(f.clk.Waiters()) == f.timers+1, "" })
	f.clk.Advance(50 * time.Millisecond)
	f.eventually("three deleted", func() (bool, string) { return count() == 0, "" })
}

func condition(e *config.Config) string {
	if e == nil {
		return "no entry"
	}
	st, _ := e.Status.(*metav1alpha1.IstioStatus)
	for _, c := range st.GetConditions() {
		if c.GetType() == "Healthy" {
			return c.GetStatus() + "/" + c.GetMessage()
		}
	}
	return "none"
}

// Health reports become the Healthy condition.
func TestHealthCondition(t *testing.T) {
	f := newFixture(t, group("ns", "vms", &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}}))
	c := f.controller("istiod-a")
	s := f.stream(withProbe(vm("ns", "vms", "10.5.0.1", "")))
	if err := c.OnConnect(s); err != nil {
		t.Fatal(err)
	}
	f.waitEntry("ns", "vms-10.5.0.1", "created", exists)
	f.clk.Advance(time.Second)
	c.OnHealth(s, false, "connection refused")
	e := f.waitEntry("ns", "vms-10.5.0.1", "unhealthy", func(e *config.Config) bool { return condition(e) == "False/connection refused" })
	cond := e.Status.(*metav1alpha1.IstioStatus).Conditions[0]
	if !cond.LastProbeTime.AsTime().Equal(start.Add(time.Second)) || !cond.LastTransitionTime.AsTime().Equal(start.Add(time.Second)) {
		t.Errorf("times %v %v", cond.LastProbeTime.AsTime(), cond.LastTransitionTime.AsTime())
	}
	f.clk.Advance(time.Second)
	c.OnHealth(s, true, "")
	f.waitEntry("ns", "vms-10.5.0.1", "healthy", func(e *config.Config) bool { return condition(e) == "True/" })
	// health checks off: reports are ignored
	off := f.controller("istiod-b", func(o *autoregistration.Options) { o.HealthChecks = false })
	off.OnHealth(s, false, "ignored")
	time.Sleep(50 * time.Millisecond)
	if got := condition(f.entry("ns", "vms-10.5.0.1")); got != "True/" {
		t.Fatalf("condition %s", got)
	}
}

// A WorkloadEntry made by hand joins through WORKLOAD_ENTRY: controlled and
// health-checked, its condition removed (not the entry) after the grace
// period.
func TestManualEntryHealth(t *testing.T) {
	f := newFixture(t, manualEntry("ns", "db", "db-sa"))
	c := f.controller("istiod-a")
	p := vm("ns", "", "10.6.0.1", "db-sa")
	p.Metadata.WorkloadEntry = "db"
	s := f.stream(p)
	if err := c.OnConnect(s); err != nil {
		t.Fatal(err)
	}
	f.waitEntry("ns", "db", "controlled", func(e *config.Config) bool {
		return e != nil && e.Annotations["istio.io/workloadController"] == "istiod-a"
	})
	c.OnHealth(s, true, "")
	f.waitEntry("ns", "db", "healthy", func(e *config.Config) bool { return condition(e) == "True/" })
	c.OnDisconnect(s)
	f.waitEntry("ns", "db", "disconnected", func(e *config.Config) bool { return e != nil && e.Annotations["istio.io/disconnectedAt"] != "" })
	f.waitTimers(f.timers + 1)
	f.clk.Advance(grace)
	f.waitEntry("ns", "db", "condition removed", func(e *config.Config) bool { return condition(e) == "none" })

	// another identity, and an entry that does not exist: refused
	bad := vm("ns", "", "10.6.0.2", "other")
	bad.Metadata.WorkloadEntry = "db"
	if err := c.OnConnect(f.stream(bad)); err == nil || !strings.Contains(err.Error(), "service account mismatch") {
		t.Fatalf("other identity: %v", err)
	}
	missing := vm("ns", "", "10.6.0.3", "db-sa")
	missing.Metadata.WorkloadEntry = "nope"
	if err := c.OnConnect(f.stream(missing)); err == nil || !strings.Contains(err.Error(), "WorkloadEntry ns/nope is not found") {
		t.Fatalf("missing entry: %v", err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
