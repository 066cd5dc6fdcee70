package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/meshplane/istiod/tests/refdata"
)

func readJSON(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return v
}

// TestConfigzAndMeshMatchIstio runs on the reference input and compares
// /debug/configz and /debug/mesh with Istio's answers.
//
// Allowed differences, each explained:
//   - metadata: Istio's objects come from a kube-apiserver (uid, generation,
//     the kubectl last-applied annotation, its timestamps and versions); ours
//     come from files, so only name and namespace are compared.
//   - DestinationRule spec.host: Istio 1.31 shows the short name "reviews"
//     resolved to "reviews.bookinfo.svc.cluster.local" because its push
//     context rewrites the stored object in place. Our stored objects are
//     immutable, so configz shows what the user wrote.
//   - ServiceEntry status.addresses: written by Istio's address
//     auto-allocation controller (240.240.0.0/16, 2001:2::/48); ours runs
//     only in Kubernetes mode (there is no status to write to a file) and
//     this test reads files.
func TestConfigzAndMeshMatchIstio(t *testing.T) {
	// what Istio 1.31's istiod answered for a small mesh
	referenceDir := refdata.Dir(t, "bookinfo")
	dir := t.TempDir()
	input, err := os.ReadFile(filepath.Join(referenceDir, "input/bookinfo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "bookinfo.yaml"), string(input))
	d := start(t, "--configDir", dir, "--meshConfig", filepath.Join(referenceDir, "input/mesh.yaml"))
	d.waitReady(t)

	_, body, err := d.get("/debug/mesh")
	if err != nil {
		t.Fatal(err)
	}
	if want, got := readJSON(t, filepath.Join(referenceDir, "real/mesh.json")), decodeJSON(t, body); !reflect.DeepEqual(want, got) {
		t.Errorf("/debug/mesh differs from Istio's\nwant %v\n got %v", want, got)
	}

	_, body, err = d.get("/debug/configz")
	if err != nil {
		t.Fatal(err)
	}
	got := decodeJSON(t, body).([]any)
	want := readJSON(t, filepath.Join(referenceDir, "real/configz.json")).([]any)
	if len(got) != len(want) {
		t.Fatalf("configz: %d objects, Istio had %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i].(map[string]any), got[i].(map[string]any)
		if w["apiVersion"] != g["apiVersion"] || w["kind"] != g["kind"] {
			t.Errorf("object %d: %v %v, Istio had %v %v", i, g["apiVersion"], g["kind"], w["apiVersion"], w["kind"])
		}
		wm, gm := w["metadata"].(map[string]any), g["metadata"].(map[string]any)
		if wm["name"] != gm["name"] || wm["namespace"] != gm["namespace"] {
			t.Errorf("object %d: %v/%v, Istio had %v/%v", i, gm["namespace"], gm["name"], wm["namespace"], wm["name"])
		}
		ws, gs := w["spec"].(map[string]any), g["spec"].(map[string]any)
		if w["kind"] == "DestinationRule" {
			ws, gs = withoutKey(ws, "host"), withoutKey(gs, "host")
		}
		if !reflect.DeepEqual(ws, gs) {
			t.Errorf("object %d (%v %v): spec\n got %v\nwant %v", i, g["kind"], gm["name"], gs, ws)
		}
		if _, ok := g["status"]; w["kind"] != "ServiceEntry" && ok != (w["status"] != nil) {
			t.Errorf("object %d: status presence differs", i)
		}
	}
}

func withoutKey(m map[string]any, k string) map[string]any {
	out := map[string]any{}
	for key, v := range m {
		if key != k {
			out[key] = v
		}
	}
	return out
}
