package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
)

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dst, e.Name()), string(b))
	}
}

// A sidecar connected over delta ADS gets its config from the daemon run on
// the bundled example, and a VirtualService edit reaches it as new routes.
func TestSidecarGetsConfigAndUpdates(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, "../../manifests/examples/bookinfo", dir)
	d := start(t, "--configDir", dir, "--meshConfig", "../../manifests/examples/mesh.yaml")
	d.waitReady(t)
	var c *adsc.Client
	eventually(t, "ADS stream accepted", func() (bool, string) {
		cl, err := adsc.Dial(context.Background(), d.grpc, adsc.Config{Delta: true,
			NodeID:   "sidecar~10.244.0.10~productpage-v1.bookinfo~bookinfo.svc.cluster.local",
			Metadata: map[string]any{"NAMESPACE": "bookinfo", "LABELS": map[string]any{"app": "productpage"}}})
		if err != nil {
			return false, err.Error()
		}
		if err := cl.Watch(xds.ClusterType); err != nil {
			cl.Close()
			return false, err.Error()
		}
		if _, err := cl.Next(5 * time.Second); err != nil {
			cl.Close()
			return false, err.Error()
		}
		c = cl
		return true, ""
	})
	defer c.Close()
	deadline0 := time.Now().Add(20 * time.Second)
	for !contains(c.State(xds.ClusterType), "outbound|9080|v3|reviews.bookinfo.svc.cluster.local") {
		if time.Now().After(deadline0) {
			t.Fatalf("clusters %v", c.State(xds.ClusterType))
		}
		if _, err := c.Next(time.Second); err != nil && !strings.Contains(err.Error(), "no response") {
			t.Fatal(err)
		}
	}
	if err := c.Watch(xds.RouteType, "9080"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	weights := func() string {
		rc, _ := c.Resource(xds.RouteType, "9080").(*routev3.RouteConfiguration)
		for _, vh := range rc.GetVirtualHosts() {
			if strings.HasPrefix(vh.Name, "reviews.") && len(vh.Routes) > 1 {
				var ws []string
				for _, wc := range vh.Routes[1].GetRoute().GetWeightedClusters().GetClusters() {
					ws = append(ws, wc.Name+"="+wc.Weight.String())
				}
				return strings.Join(ws, ",")
			}
		}
		return ""
	}
	if w := weights(); !strings.Contains(w, "v1|reviews.bookinfo.svc.cluster.local=value:75") {
		t.Fatalf("initial weights %q", w)
	}
	routing := filepath.Join(dir, "routing.yaml")
	b, _ := os.ReadFile(routing)
	writeFile(t, routing, strings.Replace(strings.Replace(string(b), "weight: 75", "weight: 20", 1), "weight: 25", "weight: 80", 1))
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(weights(), "=value:20") {
		if time.Now().After(deadline) {
			t.Fatalf("weights after edit %q\n%s", weights(), d.logs())
		}
		if _, err := c.Next(time.Second); err != nil && !strings.Contains(err.Error(), "no response") {
			t.Fatal(err)
		}
	}
	for _, ep := range []string{"/debug/pushz", "/debug/pushcontext", "/debug/push_status", "/debug/adsz"} {
		if code, body, _ := d.get(ep); code != 200 || len(body) < 2 {
			t.Errorf("%s: %d %s", ep, code, body)
		}
	}
	_, pushz, _ := d.get("/debug/pushz")
	if !strings.Contains(string(pushz), "VirtualService") {
		t.Errorf("pushz does not show the VirtualService change: %.500s", pushz)
	}
	// connectionz shows the proxy acknowledged what it was sent
	eventually(t, "synced", func() (bool, string) {
		_, body, _ := d.get("/debug/connectionz")
		return strings.Contains(string(body), `"status": "SYNCED"`), string(body)
	})

	// a proxy that rejects its clusters is an operator-visible problem
	rej, err := adsc.Dial(context.Background(), d.grpc, adsc.Config{Delta: true, NoAutoACK: true,
		NodeID: "sidecar~10.244.0.11~ratings-v1.bookinfo~bookinfo.svc.cluster.local", Metadata: map[string]any{"NAMESPACE": "bookinfo"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rej.Close()
	if err := rej.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	r, err := rej.Next(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := rej.NACK(r, "cluster outbound|9080||reviews: unknown filter istio.metadata_exchange"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rejection on /debug/warningz", func() (bool, string) {
		ps := d.warningz(t)
		for _, p := range ps {
			if p.Subject == "rejected cds" && strings.Contains(p.Message, "unknown filter istio.metadata_exchange") &&
				strings.Contains(p.Message, "ratings-v1.bookinfo") {
				return true, ""
			}
		}
		return false, fmt.Sprint(ps)
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
