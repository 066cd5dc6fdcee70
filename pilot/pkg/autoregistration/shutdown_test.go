package autoregistration_test

import (
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/autoregistration"
	"github.com/meshplane/istiod/pkg/config"
)

// runController starts a controller of instance id like the fixture's
// controller, and returns what stops it (and waits for Run to return).
func runController(f *fixture, id string) (*autoregistration.Controller, func()) {
	f.t.Helper()
	c := autoregistration.New(f.store, autoregistration.Options{InstanceID: id, AutoRegistration: true, HealthChecks: true,
		ValidateIdentity: true, GracePeriod: grace, MaxConnectionAge: 30 * time.Minute, Clock: f.clk, Problems: f.board})
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		c.Run(stop)
	}()
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			close(stop)
			<-done
		}
	}
	f.t.Cleanup(halt)
	return c, halt
}

// A replica that stops while it holds streams (its server stopped them,
// and their disconnections are not yet written, or never reached the
// controller) marks their entries disconnected before Run returns, so
// that whoever comes next cleans them up after the grace period; an
// entry another replica has taken over meanwhile is left alone.
func TestStopMarksEntriesDisconnected(t *testing.T) {
	f := newFixture(t, group("ns", "vms", &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}}))
	a, stopA := runController(f, "istiod-a")
	b := f.controller("istiod-b")
	kept, moved := f.stream(vm("ns", "vms", "10.3.1.1", "")), f.stream(vm("ns", "vms", "10.3.1.2", ""))
	if err := a.OnConnect(kept); err != nil {
		t.Fatal(err)
	}
	if err := a.OnConnect(moved); err != nil {
		t.Fatal(err)
	}
	f.waitEntry("ns", "vms-10.3.1.1", "created", exists)
	f.waitEntry("ns", "vms-10.3.1.2", "created", exists)
	f.clk.Advance(time.Second)
	if err := b.OnConnect(f.stream(moved.Proxy)); err != nil {
		t.Fatal(err)
	}
	f.waitEntry("ns", "vms-10.3.1.2", "taken over by b", func(e *config.Config) bool {
		return e != nil && e.Annotations["istio.io/workloadController"] == "istiod-b"
	})
	f.clk.Advance(time.Second)
	stopA()
	e := f.waitEntry("ns", "vms-10.3.1.1", "marked disconnected", func(e *config.Config) bool {
		return e != nil && e.Annotations["istio.io/disconnectedAt"] != ""
	})
	if got, want := e.Annotations["istio.io/disconnectedAt"], start.Add(2*time.Second).Format(time.RFC3339Nano); got != want {
		t.Errorf("disconnectedAt %s, want %s (the stop)", got, want)
	}
	if _, ok := e.Annotations["istio.io/connectedAt"]; ok || e.Annotations["istio.io/workloadController"] != "istiod-a" {
		t.Errorf("annotations %v", e.Annotations)
	}
	if e := f.entry("ns", "vms-10.3.1.2"); e == nil || e.Annotations["istio.io/workloadController"] != "istiod-b" ||
		e.Annotations["istio.io/disconnectedAt"] != "" || e.Annotations["istio.io/connectedAt"] == "" {
		t.Errorf("the entry b took over: %v", e)
	}
}
