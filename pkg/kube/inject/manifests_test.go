package inject_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/tests/injecttest"
)

// ourInjector is manifests/istiod/injector.yaml with the image coordinates
// of the reference (our manifests name a released proxy image, the
// reference a testing build): the one change the comparison allows.
func ourInjector(t *testing.T) *inject.Config {
	t.Helper()
	cm := injecttest.ReadConfigMap(t, "../../../manifests/istiod/injector.yaml")
	var values map[string]any
	if err := json.Unmarshal([]byte(cm.Data["values"]), &values); err != nil {
		t.Fatalf("values: %v", err)
	}
	global := values["global"].(map[string]any)
	global["hub"], global["tag"] = "registry.istio.io/testing", "latest"
	v, _ := json.Marshal(values)
	cfg, err := inject.ParseConfig(cm.Data["config"], string(v))
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Warnings(); len(w) > 0 {
		t.Errorf("warnings: %v", w)
	}
	return cfg
}

// TestOurTemplatesMatchIstio injects the reference pods with our own
// injector ConfigMap and compares them with the pods Istio's chart
// templates gave, field by field.
func TestOurTemplatesMatchIstio(t *testing.T) {
	ref := injecttest.LoadReference(t)
	cfg := ourInjector(t)
	for _, c := range referenceCases {
		t.Run(c.real, func(t *testing.T) {
			pod := injecttest.ReadPod(t, filepath.Join(ref.Dir, "input/pods", c.input+".yaml"))
			injecttest.APIServerDefaults(pod)
			native := inject.DetectNativeSidecar(inject.NativeSidecarsAuto, staticNodes(c.nodes), "")
			patch, err := inject.Inject(inject.Request{Pod: pod, Config: cfg, Mesh: ref.Mesh, Revision: "default", NativeSidecar: native})
			if err != nil {
				t.Fatal(err)
			}
			got := injecttest.ApplyPatch(t, pod, patch)
			injecttest.APIServerDefaults(got)
			want := injecttest.ReadPod(t, filepath.Join(ref.Dir, "real/pods", c.real+".json"))
			if d := injecttest.Diff(want, got); len(d) > 0 {
				t.Errorf("%d differences from Istio's pod:\n%s", len(d), strings.Join(d, "\n"))
			}
		})
	}
}
