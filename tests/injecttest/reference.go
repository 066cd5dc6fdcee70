package injecttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/tests/refdata"
)

// Reference is ../shared/reference/injection: the chart's ConfigMaps and
// the pods Istio's istiod admitted.
type Reference struct {
	Dir string
	// ConfigText and ValuesText are the injector ConfigMap's keys.
	ConfigText, ValuesText string
	// MeshText is the mesh ConfigMap's "mesh" key; Mesh that text applied.
	MeshText string
	Mesh     *meshconfig.MeshConfig
}

// LoadReference reads the reference (skipped or failed as refdata says when
// missing).
func LoadReference(t testing.TB) *Reference {
	t.Helper()
	dir := refdata.Dir(t, "injection")
	r := &Reference{Dir: dir}
	inj := ReadConfigMap(t, filepath.Join(dir, "chart/cm-injector.json"))
	r.ConfigText, r.ValuesText = inj.Data["config"], inj.Data["values"]
	r.MeshText = ReadConfigMap(t, filepath.Join(dir, "chart/cm-istio.json")).Data["mesh"]
	m, _, err := mesh.ApplyMeshConfig(r.MeshText, nil)
	if err != nil {
		t.Fatalf("mesh config of the reference: %v", err)
	}
	r.Mesh = m
	return r
}

// ReadConfigMap reads a ConfigMap from a JSON or YAML file.
func ReadConfigMap(t testing.TB, path string) *corev1.ConfigMap {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.Unmarshal(b, cm); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cm
}

// ReadPod reads a pod from a JSON or YAML file.
func ReadPod(t testing.TB, path string) *corev1.Pod {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{}
	if err := yaml.Unmarshal(b, p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// ApplyPatch applies a JSONPatch to a pod.
func ApplyPatch(t testing.TB, pod *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	js, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("decoding the patch: %v\n%s", err, patch)
	}
	out, err := p.Apply(js)
	if err != nil {
		t.Fatalf("applying the patch: %v", err)
	}
	res := &corev1.Pod{}
	if err := json.Unmarshal(out, res); err != nil {
		t.Fatal(err)
	}
	return res
}

// Diff compares two JSON-encodable values field by field and returns one
// line per differing path ("" paths of allow are ignored: each entry is a
// JSON path such as metadata.uid that is allowed to differ).
func Diff(want, got any, allow ...string) []string {
	w, g := generic(want), generic(got)
	skip := map[string]bool{}
	for _, a := range allow {
		skip[a] = true
	}
	var out []string
	diffValue("", w, g, skip, &out)
	sort.Strings(out)
	return out
}

func generic(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unencodable: %v", err)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func diffValue(path string, w, g any, skip map[string]bool, out *[]string) {
	if skip[path] {
		return
	}
	wm, wok := w.(map[string]any)
	gm, gok := g.(map[string]any)
	if wok && gok {
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		for k := range keys {
			diffValue(join(path, k), wm[k], gm[k], skip, out)
		}
		return
	}
	wl, wok := w.([]any)
	gl, gok := g.([]any)
	if wok && gok && len(wl) == len(gl) {
		for i := range wl {
			diffValue(fmt.Sprintf("%s[%d]", path, i), wl[i], gl[i], skip, out)
		}
		return
	}
	if !reflect.DeepEqual(w, g) {
		*out = append(*out, fmt.Sprintf("%s: want %s, got %s", path, compact(w), compact(g)))
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func compact(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// PatchDiff compares two JSONPatches for the same pod as a reader of the
// patch sees them: the pods they make, applied in their own order (array
// operations do not commute, so the order counts there), and the
// operations themselves as a multiset (Istio's patch library emits the
// operations on an object's keys in map order, which varies from run to
// run). It returns one line per difference.
func PatchDiff(t testing.TB, pod *corev1.Pod, want, got []byte) []string {
	t.Helper()
	out := Diff(ApplyPatch(t, pod, want), ApplyPatch(t, pod, got))
	for i := range out {
		out[i] = "patched pod: " + out[i]
	}
	count := func(patch []byte) map[string]int {
		var ops []json.RawMessage
		if err := json.Unmarshal(patch, &ops); err != nil {
			t.Fatalf("decoding the patch: %v", err)
		}
		m := map[string]int{}
		for _, op := range ops {
			m[compact(generic(op))]++
		}
		return m
	}
	w, g := count(want), count(got)
	for op, n := range w {
		if g[op] != n {
			out = append(out, fmt.Sprintf("operation %s: Istio %d, ours %d", op, n, g[op]))
		}
	}
	for op, n := range g {
		if _, ok := w[op]; !ok {
			out = append(out, fmt.Sprintf("operation %s: Istio 0, ours %d", op, n))
		}
	}
	sort.Strings(out)
	return out
}
