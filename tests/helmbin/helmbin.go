package helmbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/tests/istiobin"
)

// Version is the helm.sh/helm/v3 version hack/helmbin.sh builds; it
// duplicates the script's default (TestVersionMatchesScript).
const Version = "v3.22.0"

// VersionEnv, when set, overrides Version here and in hack/helmbin.sh.
const VersionEnv = "HELMBIN_VERSION"

func version() string {
	if v := os.Getenv(VersionEnv); v != "" {
		return v
	}
	return Version
}

// Dir is the directory hack/helmbin.sh builds into.
func Dir() (string, error) { return istiobin.CacheDir("helm-" + version()) }

// Helm returns the path of the helm binary, failing the test when `make
// testbin` has not built it.
func Helm(t testing.TB) string {
	t.Helper()
	dir, err := Dir()
	if err == nil {
		p := filepath.Join(dir, "helm")
		var fi os.FileInfo
		if fi, err = os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
		if err == nil {
			err = fmt.Errorf("%s is not an executable file", p)
		}
	}
	t.Fatalf("helm %s is not built: %v; run `make testbin` (hack/helmbin.sh builds it once per machine)", version(), err)
	return ""
}

// IstioSource returns the source directory of the Istio module
// hack/istiobin.sh builds from (istiobin.Version), in the module cache,
// downloading it there when missing.
func IstioSource(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	v := istiobin.Version
	if e := os.Getenv(istiobin.VersionEnv); e != "" {
		v = e
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "istio.io", "istio@"+v)
	if _, err := os.Stat(filepath.Join(dir, "manifests")); err != nil {
		cmd := exec.Command("go", "mod", "download", "istio.io/istio@"+v)
		cmd.Dir = os.TempDir() // outside this module: nothing is added to go.mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go mod download istio.io/istio@%s: %v\n%s", v, err, b)
		}
	}
	return dir
}

// Template runs `helm template <release> <chart> -n <namespace> [args...]`
// and returns the rendered objects.
func Template(t testing.TB, release, chart, namespace string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(Helm(t), append([]string{"template", release, chart, "-n", namespace}, args...)...)
	// no user configuration of the machine applies
	home := t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "HELM_CACHE_HOME=" + home,
		"HELM_CONFIG_HOME=" + home, "HELM_DATA_HOME=" + home}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", chart, err, stderr.String())
	}
	return SplitYAML(t, out)
}

// SplitYAML decodes a multi-document YAML stream into objects (empty
// documents skipped).
func SplitYAML(t testing.TB, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---") {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("rendered chart: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// IstioDiscovery renders Istio's istio-discovery chart (release istiod,
// default values) into namespace.
func IstioDiscovery(t testing.TB, namespace string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	chart := filepath.Join(IstioSource(t), "manifests/charts/istio-control/istio-discovery")
	return Template(t, "istiod", chart, namespace, args...)
}
