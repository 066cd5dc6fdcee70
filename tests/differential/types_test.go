package differential_test

import (
	"os"
	"strings"
	"testing"
)

// TestTypesMatchEnvoyFilter keeps types.gen.go's imports those of
// envoyfilter's types.gen.go (regenerate: sed its package clause, see the
// file's header).
func TestTypesMatchEnvoyFilter(t *testing.T) {
	imports := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, "import (")
		if i < 0 {
			t.Fatalf("%s: no import block", path)
		}
		return s[i:]
	}
	if imports("types.gen.go") != imports("../../pilot/pkg/networking/envoyfilter/types.gen.go") {
		t.Error("types.gen.go imports differ from pilot/pkg/networking/envoyfilter/types.gen.go; regenerate: " +
			"sed -e 's/^package envoyfilter/package differential/' ../../pilot/pkg/networking/envoyfilter/types.gen.go (keeping the header)")
	}
}
