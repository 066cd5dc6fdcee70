package leaderelection_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/kube/leaderelection"
)

func TestPrioritizedSteals(t *testing.T) {
	for _, tc := range []struct {
		name, rev, def, holder string
		remote, want           bool
	}{
		{name: "local steals from a remote of its revision", rev: "", holder: "^default", want: true},
		{name: "remote does not steal from a local", rev: "", remote: true, holder: "default", want: false},
		{name: "remote does not steal from a remote", rev: "", remote: true, holder: "^default", want: false},
		{name: "local does not steal from a local", rev: "", holder: "default", want: false},
		{name: "local does not steal from a remote of another revision", rev: "canary", holder: "^default", want: false},
		{name: "the default revision steals from another", rev: "canary", def: "canary", holder: "default", want: true},
		{name: "the default revision steals, even when remote", rev: "canary", def: "canary", remote: true, holder: "stable", want: true},
		{name: "another revision than the default does not", rev: "stable", def: "canary", holder: "canary", want: false},
		{name: "an empty key is not stolen", rev: "", holder: "", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := leaderelection.NewPrioritized(fake.NewClientset(), leaderelection.PrioritizedOptions{Revision: tc.rev, Remote: tc.remote,
				DefaultRevision: func() string { return tc.def }})
			if got := p.Steals(tc.holder); got != tc.want {
				t.Errorf("Steals(%q) = %v, want %v", tc.holder, got, tc.want)
			}
		})
	}
}

// The ConfigMap record's times have a resolution of a second (as
// client-go's and Istio's): renewals within a second leave it unchanged,
// so a lease must last a few seconds for another candidate to see it live.
var prioritizedTiming = leaderelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}

type candidate struct {
	p       *leaderelection.Prioritized
	stop    chan struct{}
	done    chan struct{}
	leading chan bool // true when a term starts, false when it ends
}

func runCandidate(t *testing.T, client kubernetes.Interface, id string, remote bool) *candidate {
	t.Helper()
	c := &candidate{stop: make(chan struct{}), done: make(chan struct{}), leading: make(chan bool, 16)}
	c.p = leaderelection.NewPrioritized(client, leaderelection.PrioritizedOptions{Namespace: "istio-system",
		Name: leaderelection.NamespaceController, Identity: id, Remote: remote, Timing: prioritizedTiming})
	c.p.AddRunFunction(func(stop <-chan struct{}) {
		c.leading <- true
		<-stop
		c.leading <- false
	})
	go func() {
		c.p.Run(c.stop)
		close(c.done)
	}()
	t.Cleanup(c.close)
	return c
}

func (c *candidate) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

func (c *candidate) expect(t *testing.T, what string, leading bool) {
	t.Helper()
	select {
	case got := <-c.leading:
		if got != leading {
			t.Fatalf("%s: leading=%v, want %v", what, got, leading)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: nothing happened", what)
	}
}

func record(t *testing.T, client kubernetes.Interface) leaderelection.Record {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps("istio-system").Get(context.Background(), leaderelection.NamespaceController, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var r leaderelection.Record
	if err := json.Unmarshal([]byte(cm.Annotations[leaderelection.RecordAnnotation]), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// A remote istiod leads a free lock (a ConfigMap whose record carries its
// "^"-prefixed key); a local istiod of the same revision takes the lock
// from it at once, the remote stops leading and does not take it back;
// the local one releases the lock on stop and the remote leads again.
func TestPrioritizedLocalTakesOverFromRemote(t *testing.T) {
	client := fake.NewClientset()
	remote := runCandidate(t, client, "external-istiod", true)
	remote.expect(t, "remote on a free lock", true)
	if r := record(t, client); r.HolderIdentity != "external-istiod" || r.HolderKey != "^default" {
		t.Fatalf("record %+v", r)
	}
	if !remote.p.IsLeader() {
		t.Fatal("IsLeader false while leading")
	}
	local := runCandidate(t, client, "local-istiod", false)
	local.expect(t, "local takes the lock", true)
	remote.expect(t, "remote loses it", false)
	if r := record(t, client); r.HolderIdentity != "local-istiod" || r.HolderKey != "default" || r.LeaderTransitions != 1 {
		t.Fatalf("record %+v", r)
	}
	select {
	case v := <-remote.leading:
		t.Fatalf("the remote leads again (%v) while the local one holds the lock", v)
	case <-time.After(2 * prioritizedTiming.LeaseDuration):
	}
	local.close()
	local.expect(t, "local stopped", false)
	// released on stop: the record is empty, or the remote, retrying, has
	// taken it already
	if r := record(t, client); r.HolderIdentity == "local-istiod" {
		t.Fatalf("not released: %+v", r)
	}
	remote.expect(t, "remote leads once the local one is gone", true)
}

// A remote istiod never takes a lock a local one holds.
func TestPrioritizedRemoteWaitsForLocal(t *testing.T) {
	client := fake.NewClientset()
	local := runCandidate(t, client, "local-istiod", false)
	local.expect(t, "local on a free lock", true)
	remote := runCandidate(t, client, "external-istiod", true)
	select {
	case <-remote.leading:
		t.Fatal("the remote took the lock from a live local holder")
	case <-time.After(2 * prioritizedTiming.LeaseDuration):
	}
	if r := record(t, client); r.HolderIdentity != "local-istiod" {
		t.Fatalf("record %+v", r)
	}
}
