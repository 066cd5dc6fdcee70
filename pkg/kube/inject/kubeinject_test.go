package inject_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/tests/injecttest"
	"github.com/meshplane/istiod/tests/istiobin"
)

// istioctl is Istio's own istioctl built by `make testbin`: a reference
// test fails without it unless ISTIOD_SKIP_REFERENCE=1.
func istioctl(t *testing.T) string {
	t.Helper()
	return istiobin.Istioctl(t)
}

// kubeInject runs Istio's own injection offline: `istioctl kube-inject`
// with the chart's injector config, values and mesh config, over a
// multi-document file of pods. ENABLE_NATIVE_SIDECARS is istioctl's native
// sidecar switch when it has no cluster.
func kubeInject(t *testing.T, bin, dir, pods string, native bool) []*corev1.Pod {
	t.Helper()
	home := t.TempDir()
	kubeconfig := filepath.Join(home, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "kube-inject", "--revision", "default", "--kubeconfig", kubeconfig,
		"--injectConfigFile", filepath.Join(dir, "config"), "--valuesFile", filepath.Join(dir, "values"),
		"--meshConfigFile", filepath.Join(dir, "mesh"), "-f", pods)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ENABLE_NATIVE_SIDECARS=" + map[bool]string{true: "true", false: "false"}[native]}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("istioctl kube-inject: %v\n%s", err, stderr.String())
	}
	return splitPods(t, out)
}

// splitPods decodes a multi-document YAML stream of pods.
func splitPods(t *testing.T, data []byte) []*corev1.Pod {
	t.Helper()
	var res []*corev1.Pod
	for _, doc := range strings.Split(string(data), "\n---") {
		p := &corev1.Pod{}
		if err := yaml.Unmarshal([]byte(doc), p); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if p.Kind == "" {
			continue // an empty document
		}
		res = append(res, p)
	}
	return res
}

// TestAgainstIstioctlKubeInject injects a set of varied pods with Istio's
// own injector (istioctl kube-inject, the chart's ConfigMaps) and with ours,
// native sidecars off and on, and compares the pods field by field.
func TestAgainstIstioctlKubeInject(t *testing.T) {
	bin := istioctl(t)
	ref := injecttest.LoadReference(t)
	dir := t.TempDir()
	for name, text := range map[string]string{"config": ref.ConfigText, "values": ref.ValuesText, "mesh": ref.MeshText} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := inject.ParseConfig(ref.ConfigText, ref.ValuesText)
	if err != nil {
		t.Fatal(err)
	}
	podsFile := "testdata/kubeinject-pods.yaml"
	b, err := os.ReadFile(podsFile)
	if err != nil {
		t.Fatal(err)
	}
	inputs := splitPods(t, b)
	for _, native := range []bool{false, true} {
		want := kubeInject(t, bin, dir, podsFile, native)
		if len(want) != len(inputs) {
			t.Fatalf("istioctl returned %d pods for %d", len(want), len(inputs))
		}
		for i, in := range inputs {
			name := in.Name + map[bool]string{true: "/native", false: ""}[native]
			t.Run(name, func(t *testing.T) {
				got := in
				if inject.Required(&inject.Config{Policy: inject.PolicyEnabled}, &in.Spec, &in.ObjectMeta) {
					patch, err := inject.Inject(inject.Request{Pod: in, Config: cfg, Mesh: ref.Mesh, NativeSidecar: native})
					if err != nil {
						t.Fatal(err)
					}
					got = injecttest.ApplyPatch(t, in, patch)
				}
				if d := injecttest.Diff(want[i], got); len(d) > 0 {
					t.Errorf("%d differences from istioctl kube-inject:\n%s", len(d), strings.Join(d, "\n"))
				}
			})
		}
	}
}
