package ambient_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	"github.com/meshplane/istiod/pkg/workloadapi"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
	"github.com/meshplane/istiod/tests/refdata"
)

// TestReferenceWDS builds the index on the reference ambient mesh and
// compares every Address and Authorization with what Istio's istiod sent a
// ztunnel (real/wds.json), resource by resource. There is no allowed
// difference: the inputs only add what the cluster's other components
// wrote (see clusterState).
func TestReferenceWDS(t *testing.T) {
	x := newMesh(referenceObjects(t)).index(t)
	wantAddr, wantAuthz := readWDS(t)

	got := map[string]proto.Message{}
	for _, a := range x.Addresses().List() {
		got[a.Name] = a.Proto
	}
	compare(t, "Address", wantAddr, got)

	got = map[string]proto.Message{}
	for _, a := range x.Authorizations().List() {
		got[a.Name] = a.Proto
	}
	compare(t, "Authorization", wantAuthz, got)
}

func readWDS(t *testing.T) (addrs, authz map[string]proto.Message) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(refdata.Dir(t, "ambient"), "real", "wds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Address       map[string]json.RawMessage `json:"Address"`
		Authorization map[string]json.RawMessage `json:"Authorization"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	addrs, authz = map[string]proto.Message{}, map[string]proto.Message{}
	for n, js := range ref.Address {
		m := &workloadapi.Address{}
		if err := protojson.Unmarshal(js, m); err != nil {
			t.Fatalf("Address %s: %v", n, err)
		}
		addrs[n] = m
	}
	for n, js := range ref.Authorization {
		m := &security.Authorization{}
		if err := protojson.Unmarshal(js, m); err != nil {
			t.Fatalf("Authorization %s: %v", n, err)
		}
		authz[n] = m
	}
	return addrs, authz
}

// compare reports every resource missing, extra or different, with a line
// diff of the protojson of both sides.
func compare(t *testing.T, typ string, want, got map[string]proto.Message) {
	t.Helper()
	for _, n := range sortedKeys(want) {
		g, ok := got[n]
		if !ok {
			t.Errorf("%s %s: missing; Istio sent\n%s", typ, n, render(want[n]))
			continue
		}
		if !proto.Equal(want[n], g) {
			t.Errorf("%s %s differs (- Istio, + ours):\n%s", typ, n, lineDiff(render(want[n]), render(g)))
		}
	}
	for _, n := range sortedKeys(got) {
		if _, ok := want[n]; !ok {
			t.Errorf("%s %s: extra; Istio sent none, we send\n%s", typ, n, render(got[n]))
		}
	}
}

func sortedKeys(m map[string]proto.Message) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func render(m proto.Message) string {
	b, err := protojson.MarshalOptions{Multiline: true, UseProtoNames: true}.Marshal(m)
	if err != nil {
		return err.Error()
	}
	// protojson randomises whitespace; normalise it.
	var v any
	_ = json.Unmarshal(b, &v)
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

// lineDiff is a small LCS line diff.
func lineDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("+ " + y[j] + "\n")
			j++
		default:
			out.WriteString("- " + x[i] + "\n")
			i++
		}
	}
	return out.String()
}

// addressNames lists the names of the index's addresses.
func addressNames(x *ambient.Index) []string {
	var out []string
	for _, a := range x.Addresses().List() {
		out = append(out, a.Name)
	}
	return out
}
