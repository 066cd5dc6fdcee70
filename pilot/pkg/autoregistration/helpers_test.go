package autoregistration_test

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pilot/pkg/autoregistration"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/crdclient"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
)

const grace = 10 * time.Second

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func crd(plural string) *apiextv1.CustomResourceDefinition {
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".networking.istio.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{Group: "networking.istio.io",
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true}}},
		Status: apiextv1.CustomResourceDefinitionStatus{Conditions: []apiextv1.CustomResourceDefinitionCondition{
			{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}},
	}
}

// fixture is a CRD client on client-go's fakes, a fake clock and a board;
// its controllers write through the fakes and read through the informers.
type fixture struct {
	t     *testing.T
	store *crdclient.Client
	clk   *clock.Fake
	board *diag.Board
	// timers is the number of the clock's waiters the running
	// controllers keep at rest (one periodic sweep each)
	timers int
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	objs = append(objs, crd("workloadentries"), crd("workloadgroups"))
	client := kube.NewFakeClient(objs...)
	st, err := crdclient.New(client, collection.SchemasFor(collections.WorkloadEntry, collections.WorkloadGroup),
		crdclient.Options{DomainSuffix: "cluster.local"})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go st.Run(stop)
	f := &fixture{t: t, store: st, clk: clock.NewFake(start), board: diag.New(nil)}
	f.eventually("store synced", func() (bool, string) { return st.HasSynced(), "" })
	return f
}

// controller starts a controller of instance id.
func (f *fixture) controller(id string, tweak ...func(*autoregistration.Options)) *autoregistration.Controller {
	f.t.Helper()
	o := autoregistration.Options{InstanceID: id, AutoRegistration: true, HealthChecks: true, ValidateIdentity: true,
		GracePeriod: grace, MaxConnectionAge: 30 * time.Minute, Clock: f.clk, Problems: f.board}
	for _, tw := range tweak {
		tw(&o)
	}
	c := autoregistration.New(f.store, o)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(stop)
	}()
	f.t.Cleanup(func() {
		close(stop)
		<-done
	})
	f.timers++
	// its periodic sweep (the sweep at start may add more)
	f.eventually("the periodic sweep's timer", func() (bool, string) { return len(f.clk.Waiters()) >= f.timers, "" })
	return c
}

// eventually polls cond for up to 10 seconds (the informers' delay, never
// the controller's logic: its time is the fake clock's).
func (f *fixture) eventually(what string, cond func() (bool, string)) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s: %s", what, detail)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitTimers waits until the fake clock has n waiters.
func (f *fixture) waitTimers(n int) {
	f.t.Helper()
	f.eventually(fmt.Sprintf("%d timers", n), func() (bool, string) {
		w := f.clk.Waiters()
		return len(w) == n, fmt.Sprint(w)
	})
}

func (f *fixture) entry(ns, name string) *config.Config {
	return f.store.Get(gvk.WorkloadEntry, name, ns)
}

// waitEntry waits until the entry satisfies cond (nil entry included).
func (f *fixture) waitEntry(ns, name, what string, cond func(*config.Config) bool) *config.Config {
	f.t.Helper()
	var e *config.Config
	f.eventually(ns+"/"+name+": "+what, func() (bool, string) {
		e = f.entry(ns, name)
		if e == nil {
			return cond(nil), "no entry"
		}
		return cond(e), fmt.Sprintf("annotations %v status %v", e.Annotations, e.Status)
	})
	return e
}

func exists(e *config.Config) bool { return e != nil }
func gone(e *config.Config) bool   { return e == nil }

func group(ns, name string, spec *networking.WorkloadGroup) *clientnetworking.WorkloadGroup {
	g := &clientnetworking.WorkloadGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)}}
	proto.Merge(&g.Spec, spec)
	return g
}

var streams atomic.Int64

// vm is a proxy of a VM in ns at ip naming group, proving ns/sa.
func vm(ns, groupName, ip, sa string) *model.Proxy {
	return &model.Proxy{Type: model.SidecarProxy, IPAddresses: []string{ip}, ID: "vm-" + ip + "." + ns, ConfigNamespace: ns,
		Metadata:         &model.NodeMetadata{Namespace: ns, AutoRegisterGroup: groupName},
		VerifiedIdentity: &model.Identity{Namespace: ns, ServiceAccount: sa}}
}

// withProbe gives the proxy a PROXY_CONFIG with a readiness probe.
func withProbe(p *model.Proxy) *model.Proxy {
	b, _ := json.Marshal(map[string]any{"readinessProbe": map[string]any{"tcpSocket": map[string]any{"port": 8080}}})
	p.Metadata.ProxyConfig = b
	return p
}

// stream is a new stream of the proxy, connected now.
func (f *fixture) stream(p *model.Proxy) model.ProxyStream {
	return model.ProxyStream{ID: fmt.Sprintf("%s-%d", p.ID, streams.Add(1)), Proxy: p, ConnectedAt: f.clk.Now()}
}
