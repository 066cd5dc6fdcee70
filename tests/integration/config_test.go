package integration

import (
	"context"
	"fmt"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	clientv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/tests/kube"
)

func vs(name, ns string, labels map[string]string, host string) *clientnetworking.VirtualService {
	return &clientnetworking.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: networking.VirtualService{Hosts: []string{host},
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host}}}}}},
	}
}

func host(o *object) string {
	if o == nil {
		return "<absent>"
	}
	return fmt.Sprint(o.Spec["hosts"])
}

func TestObjectsFlowIntoConfigz(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	ctx := context.Background()
	vsc := env.Istio.NetworkingV1().VirtualServices(ns)

	if _, err := vsc.Create(ctx, vs("reviews", ns, nil, "reviews"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "create visible", func() (bool, string) {
		o := d.find("VirtualService", ns, "reviews")
		return o != nil && o.APIVersion == "networking.istio.io/v1", host(o)
	})
	cur, err := vsc.Get(ctx, "reviews", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Hosts = []string{"reviews-v2"}
	if _, err := vsc.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "update visible", func() (bool, string) {
		o := d.find("VirtualService", ns, "reviews")
		return host(o) == "[reviews-v2]", host(o)
	})
	if err := vsc.Delete(ctx, "reviews", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "delete visible", func() (bool, string) {
		o := d.find("VirtualService", ns, "reviews")
		return o == nil, host(o)
	})
}

func TestAliasVersionStoredUnderV1(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	old := &clientv1alpha3.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: ns},
		Spec:       networking.VirtualService{Hosts: []string{"old"}, Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "old"}}}}}},
	}
	if _, err := env.Istio.NetworkingV1alpha3().VirtualServices(ns).Create(context.Background(), old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "v1alpha3 object under the v1 key", func() (bool, string) {
		o := d.find("VirtualService", ns, "old")
		if o == nil {
			return false, "absent"
		}
		return o.APIVersion == "networking.istio.io/v1", o.APIVersion
	})
	// the kubectl last-applied annotation and managed fields are not kept
	if o := d.find("VirtualService", ns, "old"); o.Metadata.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" {
		t.Error("last-applied annotation kept")
	}
}

func TestRevisionFilteringBothWays(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	canary := startIstiod(t, env, ns, withRevision("canary"))
	stable := startIstiod(t, env, ns, withRevision("stable"))
	ctx := context.Background()
	vsc := env.Istio.NetworkingV1().VirtualServices(ns)
	for _, o := range []*clientnetworking.VirtualService{
		vs("for-canary", ns, map[string]string{"istio.io/rev": "canary"}, "a"),
		vs("for-stable", ns, map[string]string{"istio.io/rev": "stable"}, "b"),
		vs("for-all", ns, nil, "c"),
	} {
		if _, err := vsc.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(d *istiod) string {
		s := ""
		for _, o := range d.configz(ns) {
			s += o.Metadata.Name + " "
		}
		return s
	}
	eventually(t, "canary sees its own and unlabeled", func() (bool, string) {
		n := names(canary)
		return n == "for-all for-canary ", n
	})
	eventually(t, "stable sees its own and unlabeled", func() (bool, string) {
		n := names(stable)
		return n == "for-all for-stable ", n
	})
}

func TestCRDInstalledAfterStartup(t *testing.T) {
	env := kube.Start(t, kube.WithoutCRDs("sidecars.networking.istio.io"))
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	if o := d.find("Sidecar", ns, "default"); o != nil {
		t.Fatal("sidecar before its CRD")
	}
	env.InstallCRDs(t, "sidecars.networking.istio.io")
	sc := &clientnetworking.Sidecar{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns},
		Spec:       networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}},
	}
	if _, err := env.Istio.NetworkingV1().Sidecars(ns).Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "sidecar after its CRD appears", func() (bool, string) {
		return d.find("Sidecar", ns, "default") != nil, "absent"
	})
}
