package inject_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/tests/injecttest"
)

// referenceCases are the pods of ../shared/reference/injection with the
// native sidecar decision of the cluster they were admitted in: one Node
// with kubelet v1.31.6 (auto mode: no), or no Node at all (auto mode: yes).
var referenceCases = []struct {
	input, real string
	nodes       []*corev1.Node
}{
	{"productpage-v1-abc", "productpage-v1-abc", []*corev1.Node{kubeletNode("node-0", "v1.31.6")}},
	{"productpage-v1-abc", "productpage-v1-abc.no-nodes", nil},
	{"details-v1-abc", "details-v1-abc", []*corev1.Node{kubeletNode("node-0", "v1.31.6")}},
	{"reviews-v2-abc", "reviews-v2-abc", []*corev1.Node{kubeletNode("node-0", "v1.31.6")}},
}

// TestReferencePods injects the reference input pods with the chart's
// ConfigMaps and compares them, field by field, with the pods Istio's
// istiod admitted. The API server's defaulting is reproduced before (the
// webhook sees a defaulted pod) and after (it defaults the patched pod);
// nothing else may differ.
func TestReferencePods(t *testing.T) {
	ref := injecttest.LoadReference(t)
	cfg, err := inject.ParseConfig(ref.ConfigText, ref.ValuesText)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range referenceCases {
		t.Run(c.real, func(t *testing.T) {
			pod := injecttest.ReadPod(t, filepath.Join(ref.Dir, "input/pods", c.input+".yaml"))
			injecttest.APIServerDefaults(pod)
			if !inject.Required(cfg, &pod.Spec, &pod.ObjectMeta) {
				t.Fatal("the pod is not to be injected")
			}
			native := inject.DetectNativeSidecar(inject.NativeSidecarsAuto, staticNodes(c.nodes), pod.Spec.NodeName)
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

// TestReferenceAdmissionPatch compares the JSONPatch for the pod of the
// recorded direct AdmissionReview (not defaulted: posted straight to
// /inject) with Istio's answer: the pods both patches make, and their
// operations as a multiset (injecttest.PatchDiff).
func TestReferenceAdmissionPatch(t *testing.T) {
	ref := injecttest.LoadReference(t)
	cfg, err := inject.ParseConfig(ref.ConfigText, ref.ValuesText)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Request struct {
			Namespace string          `json:"namespace"`
			Object    json.RawMessage `json:"object"`
		} `json:"request"`
	}
	readJSON(t, filepath.Join(ref.Dir, "real/admission/inject.request.json"), &req)
	var resp struct {
		Response struct {
			Patch json.RawMessage `json:"patch"`
		} `json:"response"`
	}
	readJSON(t, filepath.Join(ref.Dir, "real/admission/inject.response.json"), &resp)
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Request.Object, pod); err != nil {
		t.Fatal(err)
	}
	// the recording's cluster had a v1.31.6 node: no native sidecar
	patch, err := inject.Inject(inject.Request{Pod: pod, Config: cfg, Mesh: ref.Mesh, Revision: "default"})
	if err != nil {
		t.Fatal(err)
	}
	orig := &corev1.Pod{} // the pod as posted, whatever Inject did to its argument
	if err := json.Unmarshal(req.Request.Object, orig); err != nil {
		t.Fatal(err)
	}
	if d := injecttest.PatchDiff(t, orig, resp.Response.Patch, patch); len(d) > 0 {
		t.Errorf("patch differs from Istio's:\n%s", strings.Join(d, "\n"))
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func kubeletNode(name, version string) *corev1.Node {
	n := &corev1.Node{}
	n.Name = name
	n.Status.NodeInfo.KubeletVersion = version
	return n
}

type staticNodes []*corev1.Node

func (s staticNodes) Node(name string) *corev1.Node {
	for _, n := range s {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func (s staticNodes) Nodes() []*corev1.Node { return s }
