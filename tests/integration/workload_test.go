package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
)

// xdsWait bounds the wait for one response.
const xdsWait = 30 * time.Second

// pushCount is how many pushes the push engine recorded (/debug/pushz).
func (d *istiod) pushCount(t *testing.T) int {
	t.Helper()
	code, body := d.get("/debug/pushz")
	var doc struct {
		Pushes []json.RawMessage `json:"pushes"`
	}
	if code != 200 || json.Unmarshal(body, &doc) != nil {
		t.Fatalf("pushz: %d %s", code, body)
	}
	return len(doc.Pushes)
}

// labelPod merges labels into a pod.
func labelPod(t *testing.T, env *kube.Env, ns, name string, labels map[string]string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if _, err := env.Kube.CoreV1().Pods(ns).Patch(registryCtx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Label changes of a pod that is no endpoint and no proxy push nothing,
// and a change of a proxy's own pod pushes that proxy only, without a push
// of the engine (Istio's istiod does the same; before, each pod change was
// a full push of every type to every proxy).
func TestPodChangesPushOnlyTheirProxy(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	net := fmt.Sprintf("10.203.%d", 100+xdsRuns.Add(1))
	runningPod(t, env, ns, "idle", net+".50", "idle", map[string]string{"app": "idle"})
	runningPod(t, env, ns, "app-2", net+".101", "app", map[string]string{"app": "app"})
	dialSotW := func(pod, ip string) *adsClient {
		a := dialADS(t, d, adsc.Config{NodeID: "sidecar~" + ip + "~" + pod + "." + ns + "~" + ns + ".svc.cluster.local",
			Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "Kubernetes"}})
		if err := a.c.Watch(xds.ClusterType); err != nil {
			t.Fatal(err)
		}
		if _, err := a.c.Next(xdsWait); err != nil {
			t.Fatal(err)
		}
		return a
	}
	// let the pushes of istiod's start (the API server's own service) pass
	// first: the engine is quiet when its count stays put over more than a
	// debounce period
	pushes, still := d.pushCount(t), 0
	eventually(t, "push engine quiet after start", func() (bool, string) {
		time.Sleep(250 * time.Millisecond)
		n := d.pushCount(t)
		if n == pushes {
			still++
		} else {
			pushes, still = n, 0
		}
		return still >= 2, fmt.Sprintf("%d pushes, still for %d samples", n, still)
	})
	other := dialSotW("sleep-1", net+".100")
	own := dialSotW("app-2", net+".101")

	for i := 0; i < 5; i++ {
		labelPod(t, env, ns, "idle", map[string]string{"rev": fmt.Sprint(i)})
	}
	// the proxy's own pod changes last: once its push arrives, istiod has
	// handled the idle pod's events (one informer, in order)
	labelPod(t, env, ns, "app-2", map[string]string{"rev": "1"})
	r, err := own.c.Next(xdsWait)
	if err != nil || r.TypeURL != xds.ClusterType {
		t.Fatalf("the changed pod's proxy was not pushed: %v %v", r, err)
	}
	if _, err := other.c.Next(300 * time.Millisecond); err == nil || !strings.HasPrefix(err.Error(), "no response within") {
		t.Errorf("a proxy whose pod did not change was pushed (err %v)", err)
	}
	if got := d.pushCount(t); got != pushes {
		_, body := d.get("/debug/pushz")
		t.Errorf("pod changes made the push engine push %d times: %s", got-pushes, body)
	}
}
