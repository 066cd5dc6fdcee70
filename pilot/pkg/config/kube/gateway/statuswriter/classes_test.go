package statuswriter_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway/statuswriter"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log/logtest"
)

// notServed is what the API server answers for a resource whose CRD is
// not installed.
var notServed = apierrors.NewGenericServerResponse(404, "POST",
	schema.GroupResource{Group: "gateway.networking.k8s.io", Resource: "gatewayclasses"}, "", "", 0, true)

// classStore is a memory store whose GatewayClass creations are recorded
// (after the attempt) and fail while failing is above zero (one failure each); Gets of
// HTTPRoutes are recorded too, as fences of the writer's queue.
type classStore struct {
	*memory.Store
	failing atomic.Int32
	creates chan string
	gets    chan string
}

func newClassStore() *classStore {
	return &classStore{Store: memory.New(collections.GatewayAPI), creates: make(chan string, 100), gets: make(chan string, 100)}
}

func (c *classStore) Create(cfg config.Config) (string, error) {
	if cfg.GroupVersionKind != gvk.GatewayClass {
		return c.Store.Create(cfg)
	}
	// recorded once the outcome is in the store, so a test that has
	// received a name may read the class back
	defer func() { c.creates <- cfg.Name }()
	if c.failing.Add(-1) >= 0 {
		return "", notServed
	}
	return c.Store.Create(cfg)
}

func (c *classStore) Get(typ config.GroupVersionKind, name, namespace string) *config.Config {
	if typ == gvk.HTTPRoute {
		c.gets <- name
	}
	return c.Store.Get(typ, name, namespace)
}

func receive(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out: %s", what)
		return ""
	}
}

// runWriter runs a writer over store with its own statuses until the test ends.
func runWriter(t *testing.T, store *classStore, served <-chan struct{}) krt.StaticCollection[gateway.ObjectStatus] {
	t.Helper()
	collectionStop := make(chan struct{})
	statuses := krt.NewStaticCollection[gateway.ObjectStatus](nil, krt.WithStop(collectionStop))
	w := statuswriter.New(statuswriter.Options{Store: store, Statuses: statuses, Classes: store.Collection(gvk.GatewayClass),
		CreateClasses: true, ClassesServed: served})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { w.Run(stop); close(done) }()
	t.Cleanup(func() {
		close(stop)
		<-done
		close(collectionStop)
	})
	return statuses
}

// While the GatewayClass CRD is absent the writer tries no creation and
// warns about nothing; once it is served the builtin classes are created.
func TestNoClassWritesUntilServed(t *testing.T) {
	logs := logtest.Capture(t)
	store := newClassStore()
	store.failing.Store(1 << 30) // every creation fails while not served
	served := make(chan struct{})
	statuses := runWriter(t, store, served)

	// fences: the writer handles its queue in order. Once it reads the
	// first fence's object it has queued what it queues at its start; once
	// it reads the second's it has handled that too.
	for _, fence := range []string{"fence-1", "fence-2"} {
		statuses.Set(gateway.ObjectStatus{Kind: gvk.HTTPRoute, Namespace: "apps", Name: fence, Generation: 1})
		if got := receive(t, store.gets, fence+" read"); got != fence {
			t.Fatalf("read %s, want %s", got, fence)
		}
	}
	select {
	case name := <-store.creates:
		t.Fatalf("GatewayClass %s created while GatewayClasses are not served", name)
	default:
	}
	if got := logs.Lines("WARN"); len(got) != 0 {
		t.Errorf("warnings while GatewayClasses are not served: %q", got)
	}

	store.failing.Store(0)
	close(served)
	created := map[string]bool{}
	for len(created) < len(gateway.BuiltinClasses) {
		created[receive(t, store.creates, "builtin classes created")] = true
	}
	for _, c := range gateway.BuiltinClasses {
		if store.Store.Get(gvk.GatewayClass, c.Name, "") == nil {
			t.Errorf("GatewayClass %s not created", c.Name)
		}
	}
	if got := logs.Lines("WARN"); len(got) != 0 {
		t.Errorf("warnings: %q", got)
	}
}

// A failed creation is logged naming what failed, without the queue's
// internal key (it used to start with a NUL byte).
func TestClassCreationFailureMessage(t *testing.T) {
	logs := logtest.Capture(t)
	store := newClassStore()
	store.failing.Store(1)
	runWriter(t, store, nil)
	first := receive(t, store.creates, "first creation")
	// the retry follows the warning about the failure
	if again := receive(t, store.creates, "retried creation"); again != first {
		t.Fatalf("retried %s after %s", again, first)
	}
	got := logs.Lines("WARN", "could not find the requested resource")
	if len(got) != 1 {
		t.Fatalf("want one WARN about the failed creation, got %q\n%s", got, logs.String())
	}
	if strings.Contains(got[0], "\x00") || strings.Contains(got[0], `\x00`) || strings.Contains(got[0], `\u0000`) {
		t.Errorf("the warning carries a NUL byte: %q", got[0])
	}
	if !strings.Contains(got[0], "builtin GatewayClasses") {
		t.Errorf("the warning does not say what failed: %q", got[0])
	}
}
