package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/tests/golden"
)

// TestGolden translates every testdata/<case>.in.yaml and compares the
// synthetic objects and statuses with testdata/<case>.out.yaml (rewritten
// with -update; an .out.yaml without its .in.yaml fails).
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	var files golden.Files
	for _, in := range cases {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out := gateway.Translate(loadSnapshot(t, data), gateway.Options{DomainSuffix: domain})
			files.Check(t, filepath.Join("testdata", name+".out.yaml"), render(t, out))
		})
	}
	files.Orphans(t, "testdata/*.out.yaml")
}
