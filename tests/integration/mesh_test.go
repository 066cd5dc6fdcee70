package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/tests/kube"
)

func meshConfigMap(ns, mesh string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio", Namespace: ns}, Data: map[string]string{"mesh": mesh}}
}

func TestMeshConfigMapLiveAndLastGood(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	cms := env.Kube.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, meshConfigMap(ns, "trustDomain: first.example\n"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := startIstiod(t, env, ns)
	if m := d.mesh(); !contains(m, `"trustDomain": "first.example"`) {
		t.Fatalf("initial mesh: %s", m)
	}
	update := func(mesh string) {
		t.Helper()
		if _, err := cms.Update(ctx, meshConfigMap(ns, mesh), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update("trustDomain: second.example\n")
	eventually(t, "live edit", func() (bool, string) {
		m := d.mesh()
		return contains(m, `"trustDomain": "second.example"`), m
	})
	update("trustDomain: [not, a, string]\n")
	eventually(t, "bad edit listed", func() (bool, string) {
		for _, p := range d.warnings() {
			if p.Source == "mesh" && p.Severity == "error" && contains(p.Message, "trustDomain") {
				return true, ""
			}
		}
		return false, fmt.Sprint(d.warnings())
	})
	if m := d.mesh(); !contains(m, `"trustDomain": "second.example"`) {
		t.Errorf("last good not kept: %s", m)
	}
	update("trustDomain: third.example\n")
	eventually(t, "fixed edit applied", func() (bool, string) {
		m := d.mesh()
		return contains(m, `"trustDomain": "third.example"`), m
	})
}

func TestMeshFileWinsOverConfigMap(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	cms := env.Kube.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, meshConfigMap(ns, "trustDomain: from-configmap.example\n"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	meshFile := filepath.Join(t.TempDir(), "mesh")
	writeFile(t, meshFile, "trustDomain: from-file.example\n")
	d := startIstiod(t, env, ns, withMeshFile(meshFile))
	if m := d.mesh(); !contains(m, `"trustDomain": "from-file.example"`) {
		t.Fatalf("mesh: %s", m)
	}
	if _, err := cms.Update(ctx, meshConfigMap(ns, "trustDomain: edited-configmap.example\n"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, meshFile, "trustDomain: edited-file.example\n")
	eventually(t, "file edit applied", func() (bool, string) {
		m := d.mesh()
		return contains(m, `"trustDomain": "edited-file.example"`), m
	})
}

func TestRestartResyncs(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	vsc := env.Istio.NetworkingV1().VirtualServices(ns)
	if _, err := vsc.Create(ctx, vs("before", ns, nil, "before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := startIstiod(t, env, ns)
	eventually(t, "first run sees the object", func() (bool, string) {
		return d.find("VirtualService", ns, "before") != nil, "absent"
	})
	d.stop()
	// changes while istiod is down
	if err := vsc.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := vsc.Create(ctx, vs("during", ns, nil, "during"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d2 := startIstiod(t, env, ns)
	objs := d2.configz(ns)
	if len(objs) != 1 || objs[0].Metadata.Name != "during" {
		t.Errorf("after restart: %+v", objs)
	}
}

func withSharedMesh(name string) option {
	return func(a *bootstrap.PilotArgs) { a.SharedMeshConfig = name }
}

func TestSharedMeshConfigOverlay(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	cms := env.Kube.CoreV1().ConfigMaps(ns)
	shared := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared-mesh", Namespace: ns},
		Data: map[string]string{"mesh": "trustDomain: shared.example\nrootNamespace: shared-root\n"}}
	if _, err := cms.Create(ctx, shared, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, meshConfigMap(ns, "trustDomain: primary.example\n"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := startIstiod(t, env, ns, withSharedMesh("shared-mesh"))
	// the primary ConfigMap wins where both speak; the shared one fills the rest
	if m := d.mesh(); !contains(m, `"trustDomain": "primary.example"`, `"rootNamespace": "shared-root"`) {
		t.Errorf("mesh: %s", m)
	}
}

func TestDiscoverySelectorsFilterNamespaces(t *testing.T) {
	env := kube.Shared(t)
	istiodNS := env.NewNamespace(t, nil).Name
	in := env.NewNamespace(t, map[string]string{"mesh-" + istiodNS: "in"}).Name
	out := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	if _, err := env.Kube.CoreV1().ConfigMaps(istiodNS).Create(ctx,
		meshConfig(istiodNS, "discoverySelectors:\n- matchLabels: {mesh-"+istiodNS+": in}\n"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{in, out} {
		if _, err := env.Istio.NetworkingV1().VirtualServices(n).Create(ctx, vs("v", n, nil, "v"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := startIstiod(t, env, istiodNS)
	eventually(t, "selected namespace visible", func() (bool, string) {
		return d.find("VirtualService", in, "v") != nil, "absent"
	})
	if d.find("VirtualService", out, "v") != nil {
		t.Error("object of an unselected namespace is served")
	}
	// labeling the other namespace brings its objects in
	nsObj, err := env.Kube.CoreV1().Namespaces().Get(ctx, out, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{"mesh-" + istiodNS: "in"}
	if _, err := env.Kube.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "newly selected namespace visible", func() (bool, string) {
		return d.find("VirtualService", out, "v") != nil, "absent"
	})
}

func meshConfig(ns, mesh string) *corev1.ConfigMap { return meshConfigMap(ns, mesh) }
