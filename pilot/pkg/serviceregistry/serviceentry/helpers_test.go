package serviceentry_test

import (
	"fmt"
	"testing"
	"time"

	metav1alpha1 "istio.io/api/meta/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

type fixture struct {
	t      *testing.T
	store  *memory.Store
	reg    *serviceentry.Controller
	rec    *model.RecordingXDSUpdater
	index  *model.EndpointIndex
	board  *diag.Board
	pods   krt.StaticCollection[model.WorkloadInstance]
	stop   chan struct{}
	shard  model.ShardKey
	pushes *model.RecordingXDSUpdater
}

func newFixture(t *testing.T, cfgs ...config.Config) *fixture {
	t.Helper()
	return newFixtureWith(t, serviceentry.Options{}, cfgs...)
}

// newFixtureWith is newFixture with options (those the fixture sets are
// overwritten).
func newFixtureWith(t *testing.T, opts serviceentry.Options, cfgs ...config.Config) *fixture {
	t.Helper()
	f := &fixture{t: t, store: memory.New(collections.Pilot), pushes: model.NewRecordingXDSUpdater(0),
		index: model.NewEndpointIndex(), board: diag.New(nil), stop: make(chan struct{}),
		shard: model.NewShardKey(model.External, "Kubernetes")}
	t.Cleanup(func() { close(f.stop) })
	f.rec = model.NewRecordingXDSUpdater(0)
	f.pods = krt.NewStaticCollection[model.WorkloadInstance](nil)
	for _, c := range cfgs {
		f.create(c)
	}
	opts.XDSUpdater = model.FanOut{f.rec, model.NewEndpointIndexUpdater(f.index, f.pushes)}
	opts.Workloads, opts.Problems, opts.Stop, opts.TrustDomain = f.pods, f.board, f.stop, "td.example"
	f.reg = serviceentry.NewController(f.store, opts)
	f.eventually("synced", f.reg.HasSynced)
	return f
}

func (f *fixture) create(c config.Config) {
	f.t.Helper()
	if _, err := f.store.Create(c); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) update(c config.Config) {
	f.t.Helper()
	if _, err := f.store.Update(c); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) remove(g config.GroupVersionKind, ns, name string) {
	f.t.Helper()
	if err := f.store.Delete(g, name, ns, nil); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var calls []string
			if f.rec != nil {
				for _, e := range f.rec.Events() {
					calls = append(calls, fmt.Sprintf("%s %s/%s eps=%d", e.Type, e.Namespace, e.Hostname, len(e.Endpoints)))
				}
			}
			f.t.Fatalf("%s: not reached; registry calls: %v; problems: %+v", what, calls, f.boardList())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fixture) boardList() any {
	if f.board == nil {
		return nil
	}
	return f.board.List()
}

func (f *fixture) wait(rec *model.RecordingXDSUpdater, seq uint64, what string, match func(model.XDSEvent) bool) model.XDSEvent {
	f.t.Helper()
	stop := make(chan struct{})
	tm := time.AfterFunc(30*time.Second, func() { close(stop) })
	defer tm.Stop()
	e, ok := rec.WaitFor(stop, seq, match)
	if !ok {
		f.t.Fatalf("%s: no matching event; got %+v", what, rec.Since(seq))
	}
	return e
}

func (f *fixture) endpoints(host, ns string) []*model.IstioEndpoint {
	s, ok := f.index.ShardsFor(host, ns)
	if !ok {
		return nil
	}
	return s.Endpoints(f.shard)
}

func (f *fixture) service(host string) *model.Service {
	for _, s := range f.reg.Services() {
		if s.Hostname == host {
			return s
		}
	}
	return nil
}

var created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func se(ns, name string, spec *networking.ServiceEntry) config.Config {
	return config.Config{Meta: config.Meta{GroupVersionKind: gvk.ServiceEntry, Name: name, Namespace: ns, CreationTimestamp: created}, Spec: spec}
}

func we(ns, name string, labels map[string]string, spec *networking.WorkloadEntry) config.Config {
	return config.Config{Meta: config.Meta{GroupVersionKind: gvk.WorkloadEntry, Name: name, Namespace: ns, Labels: labels}, Spec: spec}
}

func wg(ns, name string, spec *networking.WorkloadGroup) config.Config {
	return config.Config{Meta: config.Meta{GroupVersionKind: gvk.WorkloadGroup, Name: name, Namespace: ns}, Spec: spec}
}

func healthStatus(healthy string) *metav1alpha1.IstioStatus {
	return &metav1alpha1.IstioStatus{Conditions: []*metav1alpha1.IstioCondition{{Type: "Healthy", Status: healthy}}}
}

func httpPort(n uint32) *networking.ServicePort {
	return &networking.ServicePort{Number: n, Name: "http", Protocol: "HTTP"}
}
