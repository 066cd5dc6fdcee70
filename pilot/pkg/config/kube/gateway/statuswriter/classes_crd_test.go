package statuswriter_test

import (
	"context"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crdclient"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway/statuswriter"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log/logtest"
)

// fencedClient records the reads of HTTPRoutes, the writer's queue fences
// (the client does not watch HTTPRoutes: there are none).
type fencedClient struct {
	*crdclient.Client
	gets chan string
}

func (f *fencedClient) Get(typ config.GroupVersionKind, name, namespace string) *config.Config {
	if typ == gvk.HTTPRoute {
		f.gets <- name
		return nil
	}
	return f.Client.Get(typ, name, namespace)
}

func gatewayClassCRD() *apiextv1.CustomResourceDefinition {
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gatewayclasses.gateway.networking.k8s.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{Group: "gateway.networking.k8s.io",
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true}}},
		Status: apiextv1.CustomResourceDefinitionStatus{Conditions: []apiextv1.CustomResourceDefinitionCondition{
			{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}},
	}
}

// Through the CRD client, as istiod wires it: without the GatewayClass CRD
// no creation reaches the API server (which would refuse it) and nothing
// warns; once the CRD is established the builtin classes are created.
func TestClassesWaitForTheCRD(t *testing.T) {
	logs := logtest.Capture(t)
	client := kube.NewFakeClient()
	crdInstalled := make(chan struct{})
	attempts := make(chan string, 100)
	client.GatewayAPI().(*gatewayfake.Clientset).PrependReactor("create", "gatewayclasses",
		func(a k8stesting.Action) (bool, runtime.Object, error) {
			attempts <- a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
			select {
			case <-crdInstalled:
				return false, nil, nil
			default:
				return true, nil, notServed
			}
		})
	cl, err := crdclient.New(client, collection.SchemasFor(collections.GatewayClass), crdclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go cl.Run(stop)
	for deadline := time.Now().Add(10 * time.Second); !cl.HasSynced(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("CRD client not synced")
		}
	}
	store := &fencedClient{Client: cl, gets: make(chan string, 100)}
	statuses := krt.NewStaticCollection[gateway.ObjectStatus](nil, krt.WithStop(stop))
	w := statuswriter.New(statuswriter.Options{Store: store, Statuses: statuses, Classes: cl.Collection(gvk.GatewayClass),
		CreateClasses: true, ClassesServed: cl.KindServed(gvk.GatewayClass)})
	term := make(chan struct{})
	done := make(chan struct{})
	go func() { w.Run(term); close(done) }()
	defer func() { close(term); <-done }()

	for _, fence := range []string{"fence-1", "fence-2"} {
		statuses.Set(gateway.ObjectStatus{Kind: gvk.HTTPRoute, Namespace: "apps", Name: fence, Generation: 1})
		if got := receive(t, store.gets, fence+" read"); got != fence {
			t.Fatalf("read %s, want %s", got, fence)
		}
	}
	select {
	case name := <-attempts:
		t.Fatalf("GatewayClass %s sent to the API server without its CRD", name)
	default:
	}
	if got := logs.Lines("WARN"); len(got) != 0 {
		t.Errorf("warnings without the CRD: %q", got)
	}

	close(crdInstalled)
	if _, err := client.Extensions().ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(),
		gatewayClassCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range gateway.BuiltinClasses {
		receive(t, attempts, "builtin class created")
	}
	for _, c := range gateway.BuiltinClasses {
		if _, err := client.GatewayAPI().GatewayV1().GatewayClasses().Get(context.Background(), c.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("GatewayClass %s: %v", c.Name, err)
		}
	}
	if got := logs.Lines("WARN"); len(got) != 0 {
		t.Errorf("warnings: %q", got)
	}
}
