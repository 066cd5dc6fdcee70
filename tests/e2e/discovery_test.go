package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const dr = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: %s, namespace: ns}
spec: {host: %s}
`

func TestBundledExampleServes(t *testing.T) {
	d := start(t, "--configDir", "../../manifests/examples/bookinfo", "--meshConfig", "../../manifests/examples/mesh.yaml")
	d.waitReady(t)
	objs := d.configz(t)
	if len(objs) != 18 {
		t.Errorf("configz has %d objects, want 18", len(objs))
	}
	// Istio's order: kinds in schema order (alphabetical), names sorted within
	if objs[0].Kind != "DestinationRule" || objs[0].Metadata.Name != "details" || objs[0].APIVersion != "networking.istio.io/v1" {
		t.Errorf("first object %+v", objs[0])
	}
	vs := find(objs, "VirtualService", "bookinfo", "reviews")
	if vs == nil || vs.Spec["hosts"].([]any)[0] != "reviews" {
		t.Fatalf("reviews VirtualService: %+v", vs)
	}
	_, body, _ := d.get("/debug/mesh")
	if !strings.Contains(string(body), `"trustDomain": "cluster.local"`) || !strings.Contains(string(body), `"accessLogFile": "/dev/stdout"`) {
		t.Errorf("mesh: %s", body)
	}
	code, metrics, _ := getURL("http://" + d.mon + "/metrics")
	if code != 200 || !strings.Contains(string(metrics), `pilot_k8s_cfg_events{event="add",type="VirtualService"} 3`) ||
		!strings.Contains(string(metrics), "pilot_info{") || !strings.Contains(string(metrics), "istiod_uptime_seconds") {
		t.Errorf("metrics:\n%s", metrics)
	}
	for _, p := range []string{"/debug", "/debug/list", "/debug/krtz", "/debug/resourcesz", "/debug/warningz"} {
		if code, _, err := d.get(p); err != nil || code != 200 {
			t.Errorf("%s: %d %v", p, code, err)
		}
	}
}

func TestEditDeleteAndBadDocuments(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	writeFile(t, path, fmt.Sprintf(dr, "a", "a")+"---\n"+fmt.Sprintf(dr, "b", "b"))
	d := start(t, "--configDir", dir, "--meshConfig", filepath.Join(dir, "no-mesh.yaml"))
	d.waitReady(t)
	if n := len(d.configz(t)); n != 2 {
		t.Fatalf("configz has %d objects", n)
	}

	// edit: the change becomes visible
	writeFile(t, path, fmt.Sprintf(dr, "a", "a-edited")+"---\n"+fmt.Sprintf(dr, "b", "b"))
	eventually(t, "edit visible", func() (bool, string) {
		o := find(d.configz(t), "DestinationRule", "ns", "a")
		return o != nil && o.Spec["host"] == "a-edited", fmt.Sprintf("%+v", o)
	})

	// a bad document: others keep flowing, the last good version is kept, the problem is listed
	bad := fmt.Sprintf(dr, "a", "a-edited") + "---\n" + strings.Replace(fmt.Sprintf(dr, "b", "b"), "spec: {host: b}", "spec: {host: b, http: [{routez: 1}], trafficPolicy: {loadBalancer: {simple: SLOWEST}}}", 1) +
		"---\n" + fmt.Sprintf(dr, "c", "c")
	writeFile(t, path, bad)
	eventually(t, "new object next to a bad one", func() (bool, string) {
		return find(d.configz(t), "DestinationRule", "ns", "c") != nil, "c missing"
	})
	if b := find(d.configz(t), "DestinationRule", "ns", "b"); b == nil || b.Spec["host"] != "b" {
		t.Errorf("last good b not served: %+v", b)
	}
	eventually(t, "warning listed", func() (bool, string) {
		for _, p := range d.warningz(t) {
			if p.Severity == "error" && strings.Contains(p.Object, "DestinationRule ns/b") &&
				strings.Contains(p.Message, `unknown value "SLOWEST" for enum istio.networking.v1alpha3.LoadBalancerSettings.SimpleLB`) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", d.warningz(t))
	})

	// fix, then delete the file: everything from it goes away, problems clear
	writeFile(t, path, fmt.Sprintf(dr, "a", "a-edited"))
	eventually(t, "b deleted after the fix", func() (bool, string) {
		return find(d.configz(t), "DestinationRule", "ns", "b") == nil && len(d.warningz(t)) <= 1, fmt.Sprintf("%+v", d.warningz(t))
	})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	eventually(t, "all deleted", func() (bool, string) {
		n := len(d.configz(t))
		return n == 0, fmt.Sprintf("%d objects", n)
	})
}

func TestBadMeshFileKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "config")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	meshPath := filepath.Join(dir, "mesh.yaml")
	writeFile(t, meshPath, "trustDomain: first.example\n")
	d := start(t, "--configDir", cfgDir, "--meshConfig", meshPath)
	d.waitReady(t)
	meshHas := func(s string) func() (bool, string) {
		return func() (bool, string) {
			_, body, _ := d.get("/debug/mesh")
			return strings.Contains(string(body), s), string(body)
		}
	}
	eventually(t, "initial mesh", meshHas(`"trustDomain": "first.example"`))

	writeFile(t, meshPath, "trustDomain: 123\n")
	eventually(t, "mesh error listed", func() (bool, string) {
		for _, p := range d.warningz(t) {
			if p.Source == "mesh" && p.Severity == "error" && strings.Contains(p.Message, "trustDomain") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", d.warningz(t))
	})
	eventually(t, "last good mesh kept", meshHas(`"trustDomain": "first.example"`))

	writeFile(t, meshPath, "trustDomain: second.example\ntrustDomainz: typo\n")
	eventually(t, "fixed mesh applied", meshHas(`"trustDomain": "second.example"`))
	eventually(t, "error cleared, dropped field reported", func() (bool, string) {
		ps := d.warningz(t)
		sawTypo := false
		for _, p := range ps {
			if p.Severity == "error" {
				return false, fmt.Sprintf("%+v", ps)
			}
			if strings.Contains(p.Message, "trustDomainz") {
				sawTypo = true
			}
		}
		return sawTypo, fmt.Sprintf("%+v", ps)
	})
}

func TestRunsWithoutAnySource(t *testing.T) {
	d := start(t, "--meshConfig", filepath.Join(t.TempDir(), "absent"))
	d.waitReady(t)
	if n := len(d.configz(t)); n != 0 {
		t.Errorf("configz has %d objects", n)
	}
	var sawDefaults bool
	for _, p := range d.warningz(t) {
		if strings.Contains(p.Message, "default mesh config") {
			sawDefaults = true
		}
	}
	if !sawDefaults {
		t.Errorf("warningz lacks the default-mesh warning: %+v", d.warningz(t))
	}
	d.stop()
	if d.exitErr != nil {
		t.Errorf("exit after SIGTERM: %v", d.exitErr)
	}
	if !strings.Contains(d.logs(), "shutdown complete") {
		t.Errorf("no graceful shutdown in log:\n%s", d.logs())
	}
}
