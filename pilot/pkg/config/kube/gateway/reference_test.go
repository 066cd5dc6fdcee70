package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/tests/golden"
	"github.com/meshplane/istiod/tests/refdata"
)

type kubeList struct {
	Items []map[string]any `json:"items"`
}

func readList(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var l kubeList
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// withoutTimes drops lastTransitionTime everywhere: Istio's are the times
// it wrote, ours are stamped by the writer.
func withoutTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k != "lastTransitionTime" {
				out[k] = withoutTimes(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutTimes(e)
		}
		return out
	}
	return v
}

func generic(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReference translates the objects Istio 1.31 was given in
// ../shared/reference/gateways, as the API server stored them (defaults
// filled in), and compares the synthetic Gateway and VirtualService with
// Istio's /debug/configz and every status with the one Istio wrote, field
// by field (lastTransitionTime aside).
func TestReference(t *testing.T) {
	dir := refdata.Dir(t, "gateways")
	stored := readList(t, filepath.Join(dir, "real", "gatewayapi-status.json"))
	out := gateway.Translate(referenceSnapshot(t, dir, stored), gateway.Options{DomainSuffix: domain})
	compareConfigz(t, dir, out)
	statuses := map[string]any{}
	for _, s := range out.Statuses {
		statuses[s.Kind.Kind+"/"+s.Namespace+"/"+s.Name] = withoutTimes(generic(t, s.Status))
	}
	for _, o := range stored {
		meta := o["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		key := o["kind"].(string) + "/" + ns + "/" + meta["name"].(string)
		g, ok := statuses[key]
		if !ok {
			t.Errorf("%s: Istio wrote a status, we have none", key)
			continue
		}
		if d := golden.Diff("status", g, withoutTimes(o["status"])); len(d) > 0 {
			t.Errorf("%s: status differs from Istio's:\n%s", key, strings.Join(d, "\n"))
		}
	}
}

// referenceSnapshot is the Gateway API objects as stored (without the
// status Istio wrote), the Services of the input, and the Service Istio
// generated for Gateway edge (no endpoints: there were no pods).
func referenceSnapshot(t *testing.T, dir string, stored []map[string]any) gateway.Snapshot {
	t.Helper()
	var docs []string
	for _, o := range stored {
		in := map[string]any{}
		for k, v := range o {
			if k != "status" {
				in[k] = v
			}
		}
		b, err := yaml.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	services, err := os.ReadFile(filepath.Join(dir, "input", "gateways.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, string(services))
	for _, o := range readList(t, filepath.Join(dir, "real", "generated-objects.json")) {
		meta := o["metadata"].(map[string]any)
		if o["kind"] == "Service" && meta["name"] == "edge-istio" {
			b, _ := yaml.Marshal(o)
			docs = append(docs, string(b))
		}
	}
	return loadSnapshot(t, []byte(strings.Join(docs, "\n---\n")))
}

// compareConfigz compares the synthetic objects with those of Istio's
// configz.
func compareConfigz(t *testing.T, dir string, out gateway.Output) {
	t.Helper()
	got := map[string]any{}
	for _, c := range append(out.Gateways, out.VirtualServices...) {
		k, err := crd.ConvertConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		got[c.GroupVersionKind.Kind+"/"+c.Namespace+"/"+c.Name] = generic(t, k)
	}
	b, err := os.ReadFile(filepath.Join(dir, "real", "configz.json"))
	if err != nil {
		t.Fatal(err)
	}
	var configz []map[string]any
	if err := json.Unmarshal(b, &configz); err != nil {
		t.Fatal(err)
	}
	synthetic := 0
	for _, o := range configz {
		meta := o["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if !strings.Contains(name, "~") {
			continue
		}
		synthetic++
		key := o["kind"].(string) + "/" + meta["namespace"].(string) + "/" + name
		g, ok := got[key]
		if !ok {
			t.Errorf("%s: Istio derived it, we did not", key)
			continue
		}
		delete(got, key)
		if d := golden.Diff("", g, generic(t, o)); len(d) > 0 {
			t.Errorf("%s differs from Istio's configz:\n%s", key, strings.Join(d, "\n"))
		}
	}
	for k := range got {
		t.Errorf("%s: derived here, not by Istio", k)
	}
	if synthetic != 2 {
		t.Errorf("the reference has %d synthetic objects, want 2", synthetic)
	}
}
