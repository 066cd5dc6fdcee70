package crdclient

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube"
)

// allNamespaces is a namespace filter that watches everything and lets the
// test run its handlers.
type allNamespaces struct {
	mu       sync.Mutex
	handlers []func()
}

func (f *allNamespaces) Filter(string) bool { return true }

func (f *allNamespaces) AddHandler(h func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers = append(f.handlers, h)
}

func (f *allNamespaces) changed() {
	f.mu.Lock()
	hs := append([]func(){}, f.handlers...)
	f.mu.Unlock()
	for _, h := range hs {
		h()
	}
}

func refilterVS(host string) *clientnetworking.VirtualService {
	return &clientnetworking.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
		Spec: networking.VirtualService{Hosts: []string{host},
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host}}}}}},
	}
}

func vsHost(c *config.Config) string {
	if c == nil {
		return "<none>"
	}
	return c.Spec.(*networking.VirtualService).Hosts[0]
}

// An update handled while the namespace refilter is between its list of
// the informer's store and its reset must survive the reset: the refilter
// and the informer's handlers are serialised.
func TestRefilterDoesNotUndoConcurrentUpdate(t *testing.T) {
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "virtualservices.networking.istio.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{Group: "networking.istio.io",
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true}}},
		Status: apiextv1.CustomResourceDefinitionStatus{Conditions: []apiextv1.CustomResourceDefinitionCondition{
			{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}},
	}
	client := kube.NewFakeClient(crd, refilterVS("v1"))
	filter := &allNamespaces{}
	cl, err := New(client, collection.SchemasFor(collections.VirtualService), Options{NamespaceFilter: filter})
	if err != nil {
		t.Fatal(err)
	}
	k := cl.kinds[gvk.VirtualService]
	// set before Run: the informer's goroutines read them
	waiting := make(chan string, 100)
	k.eventWaits = func(o any) {
		if vs, ok := o.(*clientnetworking.VirtualService); ok {
			waiting <- vs.Spec.Hosts[0]
		}
	}
	updates := make(chan string, 100)
	cl.RegisterEventHandler(gvk.VirtualService, func(_, cur config.Config, _ model.Event) {
		updates <- cur.Name + "=" + cur.Spec.(*networking.VirtualService).Hosts[0]
	})
	stop := make(chan struct{})
	defer close(stop)
	go cl.Run(stop)
	if got := next(t, updates); got != "a=v1" {
		t.Fatalf("first event %q", got)
	}
	// an object created now is seen only through the informer's watch:
	// once its add is handled the watch runs (the fake API server does not
	// replay what happened between the list and the watch, so v2 must not
	// be written before)
	vss := client.Istio().NetworkingV1().VirtualServices("ns")
	for i := 0; ; i++ {
		warm := refilterVS(fmt.Sprintf("warm-%d", i))
		warm.Name = "warm"
		var err error
		if i == 0 {
			_, err = vss.Create(context.Background(), warm, metav1.CreateOptions{})
		} else {
			cur, gerr := vss.Get(context.Background(), "warm", metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			warm.ResourceVersion = cur.ResourceVersion
			_, err = vss.Update(context.Background(), warm, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		if seen(updates, fmt.Sprintf("warm=warm-%d", i), 500*time.Millisecond) {
			break
		}
		if i == 40 {
			t.Fatal("the informer's watch never delivered an event")
		}
	}
	for len(waiting) > 0 {
		<-waiting
	}

	k.refilterListed = func() {
		// the store was listed with v1; v2 arrives now
		if _, err := client.Istio().NetworkingV1().VirtualServices("ns").Update(context.Background(), refilterVS("v2"),
			metav1.UpdateOptions{}); err != nil {
			t.Error(err)
			return
		}
		// either the handler of v2 waits for the refilter to end, or
		// (without serialisation) it applies v2 before the reset
		for {
			select {
			case h := <-waiting:
				if h == "v2" {
					return
				}
			case u := <-updates:
				if u == "a=v2" {
					return
				}
			case <-time.After(10 * time.Second):
				t.Error("the update of v2 reached no handler")
				return
			}
		}
	}
	filter.changed()
	k.refilterListed = nil

	// a later object is a fence: its add is handled after v2's update
	fence := refilterVS("fence")
	fence.Name = "fence"
	if _, err := client.Istio().NetworkingV1().VirtualServices("ns").Create(context.Background(), fence, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for u := next(t, updates); u != "fence=fence"; u = next(t, updates) {
	}
	if got := vsHost(cl.Get(gvk.VirtualService, "a", "ns")); got != "v2" {
		t.Errorf("after the refilter a serves %s, want v2 (the update was undone by the refilter's older list)", got)
	}
}

// seen reads ch until want comes, or d passes without it.
func seen(ch <-chan string, want string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case u := <-ch:
			if u == want {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return ""
	}
}
