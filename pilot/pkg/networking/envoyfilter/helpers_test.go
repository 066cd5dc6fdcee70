package envoyfilter_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// parseFilters reads the EnvoyFilters of a YAML input (other kinds are
// ignored; a document that does not decode fails the test).
func parseFilters(t testing.TB, input string) []config.Config {
	t.Helper()
	var out []config.Config
	for _, d := range crd.Parse([]byte(input), crd.Options{Domain: "cluster.local"}) {
		if d.Err != nil {
			t.Fatalf("document %d (line %d): %v", d.Index, d.Line, d.Err)
		}
		if d.Config != nil && d.Config.GroupVersionKind == gvk.EnvoyFilter {
			out = append(out, *d.Config)
		}
	}
	return out
}

func compileAll(t testing.TB, cfgs []config.Config) []*envoyfilter.Filter {
	t.Helper()
	out := make([]*envoyfilter.Filter, 0, len(cfgs))
	for _, c := range cfgs {
		f := envoyfilter.Compile(c)
		out = append(out, f)
	}
	return out
}

func sidecar(ns string, labels map[string]string) *model.Proxy {
	return &model.Proxy{Type: model.SidecarProxy, ConfigNamespace: ns, Labels: labels,
		Metadata: &model.NodeMetadata{Namespace: ns, Labels: labels, IstioVersion: "1.31.0", Raw: map[string]any{}}}
}

// decodeList decodes a JSON array of Envoy resources.
func decodeList[T proto.Message](t testing.TB, b []byte, newT func() T) []T {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	out := make([]T, 0, len(raw))
	for i, r := range raw {
		m := newT()
		if err := protojson.Unmarshal(r, m); err != nil {
			t.Fatalf("resource %d: %v", i, err)
		}
		out = append(out, m)
	}
	return out
}

// encodeList is resources as an indented JSON array (protojson field
// names), stable across runs.
func encodeList[T proto.Message](t testing.TB, msgs []T) []byte {
	t.Helper()
	list := make([]any, 0, len(msgs))
	for _, m := range msgs {
		b, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		list = append(list, v)
	}
	out, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func problemStrings(ps []envoyfilter.Problem) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, string(p.Severity)+" "+p.String())
	}
	return out
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") }
