package helmbin

import (
	"os"
	"regexp"
	"testing"
)

func TestVersionMatchesScript(t *testing.T) {
	b, err := os.ReadFile("../../hack/helmbin.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`HELM_VERSION="\$\{HELMBIN_VERSION:-([^}]+)\}"`).FindSubmatch(b)
	if m == nil || string(m[1]) != Version {
		t.Errorf("hack/helmbin.sh builds %q, Version is %q", m, Version)
	}
}
